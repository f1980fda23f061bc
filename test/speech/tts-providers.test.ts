/**
 * The TTS adapters (Cartesia, Rime, ElevenLabs, Polly) against their simulators, and the simulators against the
 * providers' documented examples (test/fixtures/<provider>/).
 */
import { createServer } from 'node:http';
import { connect, type IncomingHttpHeaders } from 'node:http2';
import { PollyClient, SynthesizeSpeechCommand, type SynthesizeSpeechCommandInput } from '@aws-sdk/client-polly';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCartesiaSimulator } from '../../infra/local/cartesia-simulator.ts';
import { startElevenlabsSimulator } from '../../infra/local/elevenlabs-simulator.ts';
import { startPollySimulator } from '../../infra/local/polly-simulator.ts';
import { startRimeSimulator } from '../../infra/local/rime-simulator.ts';
import type { SpeechSimulator } from '../../infra/local/speech-simulator-server.ts';
import { cartesiaTextToSpeech, cartesiaVersion } from '../../shared/speech/cartesia.ts';
import { elevenlabsTextToSpeech } from '../../shared/speech/elevenlabs.ts';
import { muLawDecode, muLawEncode } from '../../shared/speech/telephone-audio.ts';
import { pollyTextToSpeech } from '../../shared/speech/polly.ts';
import { SpeechProviderError, type TextToSpeech } from '../../shared/speech/ports.ts';
import { rimeTextToSpeech } from '../../shared/speech/rime.ts';
import * as cartesiaDocs from '../fixtures/cartesia/documented-examples.ts';
import * as elevenlabsDocs from '../fixtures/elevenlabs/documented-examples.ts';
import * as pollyDocs from '../fixtures/polly/documented-examples.ts';
import * as rimeDocs from '../fixtures/rime/documented-examples.ts';
import { eventually } from '../support/eventually.ts';
import { collect, protocolEngines, spokenBytes } from '../support/speech.ts';

const engines = protocolEngines();
const text = 'Your order ships on Monday.';
let cartesia: SpeechSimulator;
let rime: SpeechSimulator;
let elevenlabs: SpeechSimulator;
let polly: SpeechSimulator;

beforeAll(async () => {
  [cartesia, rime, elevenlabs, polly] = await Promise.all([
    startCartesiaSimulator({ engines, models: ['sonic-2'], voices: ['a0e99841-438c-4a64-b679-ae501e7d6091', cartesiaDocs.ttsBytesRequest.voice.id] }),
    startRimeSimulator({ engines, models: ['mistv2', 'coda'], voices: ['celeste', rimeDocs.ttsRequest.speaker] }),
    startElevenlabsSimulator({ engines, models: ['eleven_flash_v2_5', elevenlabsDocs.streamRequest.model_id], voices: ['21m00Tcm4TlvDq8ikWAM', elevenlabsDocs.voiceId] }),
    startPollySimulator({ engines, voices: ['Joanna', pollyDocs.synthesizeRequest.VoiceId] }),
  ]);
});
afterAll(async () => {
  await Promise.all([cartesia, rime, elevenlabs, polly].map((simulator) => simulator?.stop()));
});

interface Case {
  name: string;
  simulator: () => SpeechSimulator;
  adapter: (apiKey: string) => TextToSpeech;
  voiceId: string;
  model: string;
  /** What the provider answers (μ-law for all but Polly, whose PCM the adapter converts). */
  expected: (audio: Uint8Array) => Uint8Array;
}

const cases: Case[] = [
  { name: 'cartesia', simulator: () => cartesia, adapter: (apiKey) => cartesiaTextToSpeech({ apiUrl: cartesia.url, apiKey }), voiceId: 'a0e99841-438c-4a64-b679-ae501e7d6091', model: 'sonic-2', expected: (audio) => audio },
  { name: 'rime', simulator: () => rime, adapter: (apiKey) => rimeTextToSpeech({ apiUrl: rime.url, apiKey }), voiceId: 'celeste', model: 'mistv2', expected: (audio) => audio },
  { name: 'elevenlabs', simulator: () => elevenlabs, adapter: (apiKey) => elevenlabsTextToSpeech({ apiUrl: elevenlabs.url, apiKey }), voiceId: '21m00Tcm4TlvDq8ikWAM', model: 'eleven_flash_v2_5', expected: (audio) => audio },
  // μ-law → PCM → μ-law is exact: G.711's decoding is the inverse of its encoding on its own codes.
  { name: 'amazon (Polly)', simulator: () => polly, adapter: () => pollyTextToSpeech({ region: 'us-east-1', endpoint: polly.url }), voiceId: 'Joanna-Neural', model: 'polly-neural', expected: (audio) => muLawEncode(muLawDecode(audio)) },
];

describe.each(cases)('the $name TTS adapter against its simulator', (provider) => {
  it('streams the text spoken, in telephone audio', async () => {
    const { audio } = await collect(provider.adapter(provider.simulator().apiKey).synthesize(text, { voiceId: provider.voiceId, language: 'en-US', model: provider.model }));

    expect(Buffer.from(audio).equals(Buffer.from(provider.expected(spokenBytes(text))))).toBe(true);
    expect(provider.simulator().requests.at(-1)?.status).toBe(200);
  });

  it('stops at an abort: the iterator ends and the provider stops sending', async () => {
    const aborter = new AbortController();
    const simulator = provider.simulator();
    const before = simulator.cancelled;
    const long = text.repeat(15);
    let received = 0;
    for await (const chunk of provider.adapter(simulator.apiKey).synthesize(long, { voiceId: provider.voiceId, language: 'en-US', model: provider.model, signal: aborter.signal })) {
      received += chunk.length;
      aborter.abort();
    }

    expect(received).toBeGreaterThan(0);
    expect(received).toBeLessThan(spokenBytes(long).length);
    await eventually(async () => simulator.cancelled, (cancelled) => cancelled > before);
  });
});

describe.each(cases.filter((provider) => provider.name !== 'amazon (Polly)'))('the $name simulator', (provider) => {
  it('refuses a wrong key, and the adapter says so, not to be retried', async () => {
    const error = await collect(provider.adapter('not-the-key-0000').synthesize(text, { voiceId: provider.voiceId, language: 'en-US' })).catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(SpeechProviderError);
    expect((error as SpeechProviderError).retryable).toBe(false);
    expect((error as Error).message).toContain('401');
    expect(provider.simulator().requests.at(-1)?.status).toBe(401);
  });
});

describe('the adapters send what the providers document', () => {
  it('Cartesia: the version header and a body of the reference, asking for raw μ-law at 8 kHz', async () => {
    await collect(cartesiaTextToSpeech({ apiUrl: cartesia.url, apiKey: cartesia.apiKey }).synthesize(text, { voiceId: 'a0e99841-438c-4a64-b679-ae501e7d6091', language: 'en-GB' }));
    const sent = cartesia.requests.at(-1)!;

    expect(sent.headers['cartesia-version']).toBe(cartesiaVersion);
    expect(cartesiaDocs.versions).toContain(cartesiaVersion);
    expect(Object.keys(sent.body as object).sort()).toEqual(Object.keys(cartesiaDocs.ttsBytesRequest).sort());
    expect(sent.body).toMatchObject({ output_format: { container: 'raw', encoding: 'pcm_mulaw', sample_rate: 8000 }, language: 'en', voice: { mode: 'id' } });
  });

  it('Rime: Accept audio/PCMU and the reference body at 8 kHz', async () => {
    await collect(rimeTextToSpeech({ apiUrl: rime.url, apiKey: rime.apiKey }).synthesize(text, { voiceId: 'celeste', language: 'en-US' }));
    const sent = rime.requests.at(-1)!;

    expect(sent.headers.accept).toBe(rimeDocs.mulawAccept);
    expect(sent.path).toBe(rimeDocs.endpoint);
    expect(Object.keys(sent.body as object).sort()).toEqual(Object.keys(rimeDocs.ttsRequest).sort());
    expect(sent.body).toMatchObject({ speaker: 'celeste', modelId: 'mistv2', lang: 'eng', samplingRate: 8000 });
  });

  it('ElevenLabs: output_format=ulaw_8000 and the reference body', async () => {
    await collect(elevenlabsTextToSpeech({ apiUrl: elevenlabs.url, apiKey: elevenlabs.apiKey }).synthesize(text, { voiceId: '21m00Tcm4TlvDq8ikWAM', language: 'en-US' }));
    const sent = elevenlabs.requests.at(-1)!;

    expect(sent.path).toBe('/v1/text-to-speech/21m00Tcm4TlvDq8ikWAM/stream?output_format=ulaw_8000');
    expect(Object.keys(sent.body as object).sort()).toEqual(Object.keys(elevenlabsDocs.streamRequest).sort());
  });

  it('Polly: the reference body, pcm at 8000 Hz, the engine and the voice as Polly names them', async () => {
    await collect(pollyTextToSpeech({ region: 'us-east-1', endpoint: polly.url }).synthesize(text, { voiceId: 'Joanna-Neural', language: 'en-US', model: 'polly-standard' }));
    const sent = polly.requests.at(-1)!;

    expect(sent.body).toEqual({ Text: text, VoiceId: 'Joanna', Engine: 'standard', LanguageCode: 'en-US', OutputFormat: 'pcm', SampleRate: '8000' });
    expect(sent.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=local\/\d{8}\/us-east-1\/polly\/aws4_request/);
  });
});

describe('the simulators take the documented examples', () => {
  const post = (url: string, headers: Record<string, string>, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

  it('Cartesia: the reference request, refused only for its format, streams once it asks for μ-law', async () => {
    const headers = { authorization: `Bearer ${cartesia.apiKey}`, 'cartesia-version': '2025-04-16' };
    const asDocumented = await post(`${cartesia.url}/tts/bytes`, headers, cartesiaDocs.ttsBytesRequest);
    const inMulaw = await post(`${cartesia.url}/tts/bytes`, headers, { ...cartesiaDocs.ttsBytesRequest, output_format: { container: 'raw', encoding: 'pcm_mulaw', sample_rate: 8000 } });
    const withoutVersion = await post(`${cartesia.url}/tts/bytes`, { authorization: headers.authorization }, cartesiaDocs.ttsBytesRequest);
    const unknownField = await post(`${cartesia.url}/tts/bytes`, headers, { ...cartesiaDocs.ttsBytesRequest, voice_id: 'x' });

    expect(asDocumented.status).toBe(400);
    expect(await asDocumented.text()).toContain('pcm_mulaw at 8000 Hz only');
    expect(inMulaw.status).toBe(200);
    expect(Buffer.from(await inMulaw.arrayBuffer()).equals(Buffer.from(spokenBytes(cartesiaDocs.ttsBytesRequest.transcript)))).toBe(true);
    expect(withoutVersion.status).toBe(400);
    expect(unknownField.status).toBe(400);
  });

  it('Rime: the reference request, with Accept audio/PCMU at 8 kHz, streams; other formats are refused', async () => {
    const headers = { authorization: `Bearer ${rime.apiKey}` };
    const inMulaw = await post(`${rime.url}${rimeDocs.endpoint}`, { ...headers, accept: 'audio/PCMU' }, { ...rimeDocs.ttsRequest, samplingRate: 8000 });
    const asDocumented = await post(`${rime.url}${rimeDocs.endpoint}`, { ...headers, accept: 'audio/webm;codecs=opus' }, rimeDocs.ttsRequest);
    const tooLong = await post(`${rime.url}${rimeDocs.endpoint}`, { ...headers, accept: 'audio/PCMU' }, { ...rimeDocs.ttsRequest, text: 'a'.repeat(501), samplingRate: 8000 });

    expect(inMulaw.status).toBe(200);
    expect(inMulaw.headers.get('content-type')).toBe('audio/PCMU');
    expect(asDocumented.status).toBe(406);
    expect(tooLong.status).toBe(400);
  });

  it("ElevenLabs: the reference request streams in ulaw_8000; its own format is refused; a wrong key gets ElevenLabs' body", async () => {
    const url = `${elevenlabs.url}/v1/text-to-speech/${elevenlabsDocs.voiceId}/stream`;
    const inMulaw = await post(`${url}?output_format=ulaw_8000`, { 'xi-api-key': elevenlabs.apiKey }, elevenlabsDocs.streamRequest);
    const asDocumented = await post(`${url}?output_format=mp3_44100_128`, { 'xi-api-key': elevenlabs.apiKey }, elevenlabsDocs.streamRequest);
    const wrongKey = await post(`${url}?output_format=ulaw_8000`, { 'xi-api-key': 'nope' }, elevenlabsDocs.streamRequest);

    expect(inMulaw.status).toBe(200);
    expect(asDocumented.status).toBe(400);
    expect(wrongKey.status).toBe(401);
    expect(await wrongKey.json()).toEqual(elevenlabsDocs.invalidApiKey);
  });

  it('Polly: the reference request is refused only for its format; unsigned requests are refused', async () => {
    const client = new PollyClient({ region: 'us-east-1', endpoint: polly.url, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    const asDocumented = await client.send(new SynthesizeSpeechCommand(pollyDocs.synthesizeRequest as SynthesizeSpeechCommandInput)).catch((error: unknown) => error);
    const inPcm = await client.send(new SynthesizeSpeechCommand({ ...pollyDocs.synthesizeRequest, OutputFormat: 'pcm' } as SynthesizeSpeechCommandInput));
    const unsigned = await http2Post(`${polly.url}/v1/speech`, pollyDocs.synthesizeRequest);
    client.destroy();

    expect((asDocumented as Error).name).toBe('InvalidSampleRateException');
    expect((await inPcm.AudioStream!.transformToByteArray()).length).toBe(spokenBytes(pollyDocs.synthesizeRequest.Text).length * 2);
    expect(unsigned[':status']).toBe(403);
    expect(unsigned['x-amzn-errortype']).toBe('MissingAuthenticationTokenException');
  });
});

describe('a provider that fails', () => {
  it('is a retryable SpeechProviderError on a 5xx, with its message', async () => {
    const failing = createServer((_request, response) => response.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"overloaded"}'));
    await new Promise<void>((resolve) => failing.listen(0, '127.0.0.1', resolve));
    const apiUrl = `http://127.0.0.1:${(failing.address() as AddressInfo).port}`;
    try {
      const error = await collect(cartesiaTextToSpeech({ apiUrl, apiKey: 'key' }).synthesize(text, { voiceId: 'v', language: 'en-US' })).catch((caught: unknown) => caught);

      expect(error).toBeInstanceOf(SpeechProviderError);
      expect((error as SpeechProviderError).retryable).toBe(true);
      expect((error as Error).message).toContain('overloaded');
    } finally {
      failing.close();
    }
  });
});

/** A POST over cleartext HTTP/2 (Polly's protocol), unsigned; resolves with the answer's headers. */
async function http2Post(url: string, body: unknown): Promise<IncomingHttpHeaders> {
  const { origin, pathname } = new URL(url);
  const session = connect(origin);
  try {
    return await new Promise((resolve, reject) => {
      const stream = session.request({ ':method': 'POST', ':path': pathname, 'content-type': 'application/json' });
      let headers: IncomingHttpHeaders = {};
      stream.once('response', (received) => (headers = received));
      stream.once('error', reject);
      stream.on('end', () => resolve(headers)).resume();
      stream.end(JSON.stringify(body));
    });
  } finally {
    session.close();
  }
}
