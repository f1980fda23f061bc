/**
 * The provider registry the media worker uses, with real audio: each TTS provider's adapter, through its simulator
 * (which speaks with eSpeak NG), is heard by the built-in STT; the Deepgram adapter, through its simulator (which
 * hears with PocketSphinx), transcribes what eSpeak NG says, with endpointing finals. And whose key is used.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCartesiaSimulator } from '../../infra/local/cartesia-simulator.ts';
import { builtinSimulatorEngines, type SpeechSimulator } from '../../infra/local/speech-simulator-server.ts';
import { startSpeechSimulators, type LocalSpeech } from '../../infra/local/speech-simulators.ts';
import { createModelCatalog, modelId } from '../../shared/models/model-catalog.ts';
import type { Model } from '../../shared/models/model-schemas.ts';
import { parseConfig } from '../../shared/platform/config.ts';
import { BuiltinTextToSpeech } from '../../shared/speech/builtin-tts.ts';
import { SpeechProviderError, type SpeechToSpeechEvent, type TranscriptEvent } from '../../shared/speech/ports.ts';
import { createSpeechProviders, type SpeechProviderDeps } from '../../shared/speech/speech-providers.ts';
import { wordErrorRate, words } from '../../shared/speech/word-error-rate.ts';
import { callerSentences } from '../support/caller-sentences.ts';
import { collect } from '../support/speech.ts';

const engines = builtinSimulatorEngines();
/** The organizations' own keys: none but where a test puts one. */
const ownKeys = new Map<string, string>();
const providerKeys: SpeechProviderDeps['providerKeys'] = { connection: async (orgId, provider) => (ownKeys.has(`${orgId}/${provider}`) ? { apiKey: ownKeys.get(`${orgId}/${provider}`)! } : undefined) };
const env: NodeJS.ProcessEnv = { AWS_REGION: 'us-east-1' };
let local: LocalSpeech;
let catalog: ReturnType<typeof createModelCatalog>;

beforeAll(async () => {
  local = await startSpeechSimulators(engines, env);
  catalog = createModelCatalog(parseConfig(env));
});
afterAll(() => local.stop());

const model = (provider: Model['provider'], type: Model['type'], name: string): Model => catalog.byId(modelId(provider, type, name))!;
const registry = () => createSpeechProviders({ config: parseConfig(env), providerKeys });
/** Word error rate over the caller's sentences, each weighed by its words. */
const errorRate = (heard: string[]) =>
  callerSentences.reduce((sum, sentence, index) => sum + wordErrorRate(sentence, heard[index] ?? '') * words(sentence).length, 0) / callerSentences.reduce((sum, sentence) => sum + words(sentence).length, 0);

describe('the simulators of npm start', () => {
  it('each set its address, its key and its models, which the catalog then offers', () => {
    expect(env).toMatchObject({
      DEEPGRAM_API_URL: local.started.deepgram?.url,
      CARTESIA_API_KEY: 'local-cartesia-key',
      RIME_TTS_MODELS: 'mistv2',
      AMAZON_TTS_MODELS: 'polly-neural',
      NOVA_SONIC_ENDPOINT: local.started.novaSonic?.url,
      BEDROCK_STS_MODELS: 'amazon.nova-sonic-v1:0',
    });
    expect(local.started.novaSonic?.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(catalog.models.filter((entry) => entry.provider !== 'builtin' && (entry.type === 'STT' || entry.type === 'TTS')).map((entry) => `${entry.provider}/${entry.type}/${entry.name}`)).toEqual([
      'deepgram/STT/nova-3',
      'amazon/STT/transcribe-streaming',
      'amazon/TTS/polly-neural',
      'cartesia/TTS/sonic-2',
      'rime/TTS/mistv2',
      'elevenlabs/TTS/eleven_flash_v2_5',
    ]);
  });
});

describe.each([
  { provider: 'cartesia' as const, name: 'sonic-2', voiceId: 'a0e99841-438c-4a64-b679-ae501e7d6091' },
  { provider: 'rime' as const, name: 'mistv2', voiceId: 'celeste' },
  { provider: 'elevenlabs' as const, name: 'eleven_flash_v2_5', voiceId: '21m00Tcm4TlvDq8ikWAM' },
  { provider: 'amazon' as const, name: 'polly-neural', voiceId: 'Joanna-Neural' },
])('the $provider TTS model, through its simulator', ({ provider, name, voiceId }) => {
  it('says what the agent says so that the built-in STT hears it (word error rate at most 0.8; 0.66 measured)', async () => {
    const tts = await registry().textToSpeech('org', model(provider, 'TTS', name));
    const heard: string[] = [];
    for (const sentence of callerSentences) {
      const { audio } = await collect(tts.synthesize(sentence, { voiceId, language: 'en-US', model: name }));
      expect(audio.length).toBeGreaterThan(8_000 * 0.5);
      heard.push(await engines.recognise(audio));
    }

    expect(errorRate(heard), JSON.stringify(heard)).toBeLessThanOrEqual(0.8);
  });
});

describe.each([
  { provider: 'deepgram' as const, name: 'nova-3' },
  { provider: 'amazon' as const, name: 'transcribe-streaming' },
])('the $provider/$name STT model, through its simulator', ({ provider, name }) => {
  it('transcribes what eSpeak NG says, each sentence a final that ends the turn after the endpointing silence (word error rate at most 0.8; 0.70 measured)', async () => {
    const stt = await registry().speechToText('org', model(provider, 'STT', name));
    const say = new BuiltinTextToSpeech();
    const audio: Uint8Array[] = [new Uint8Array(2_400).fill(0xff)];
    for (const sentence of callerSentences) audio.push((await collect(say.synthesize(sentence, { voiceId: 'en-us', language: 'en-US' }))).audio, new Uint8Array(8_000).fill(0xff));
    const stream = stt.open({ language: 'en-US', model: name, endpointingMs: 600 });
    const all = Buffer.concat(audio);
    for (let offset = 0; offset < all.length; offset += 160) stream.write(all.subarray(offset, offset + 160));
    stream.end();

    const events: TranscriptEvent[] = [];
    for await (const event of stream.events) events.push(event);

    const finals = events.filter((event) => event.type === 'final');
    expect(events.filter((event) => event.type === 'error')).toEqual([]);
    expect(finals.map((event) => event.endOfTurn)).toEqual(callerSentences.map(() => true));
    expect(events.filter((event) => event.type === 'speech-started')).toHaveLength(callerSentences.length);
    expect(errorRate(finals.map((event) => event.text)), JSON.stringify(finals)).toBeLessThanOrEqual(0.8);
  });
});

describe('the openai-compatible/gpt-realtime STS model, through its simulator', () => {
  it('is offered by the catalog, hears what eSpeak NG says, calls the tool, and speaks its output so that the built-in STT hears it', async () => {
    expect(env).toMatchObject({ OPENAI_COMPATIBLE_REALTIME_URL: `${local.started.openaiRealtime?.url}/v1`, OPENAI_COMPATIBLE_REALTIME_MODELS: 'gpt-realtime' });
    const sts = await registry().speechToSpeech('org', model('openai-compatible', 'STS', 'gpt-realtime'));
    const session = sts.open({
      model: 'gpt-realtime',
      instructions: 'You tell the weather.',
      language: 'en-US',
      tools: [{ name: 'get_weather', description: 'Current weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } }],
    });
    const events = session.events[Symbol.asyncIterator]();
    const next = async (type: SpeechToSpeechEvent['type']) => {
      const seen: SpeechToSpeechEvent[] = [];
      for (let event = await events.next(); !event.done; event = await events.next()) {
        seen.push(event.value);
        if (event.value.type === type) return seen;
      }
      return seen;
    };
    // "Tell me the weather please." is heard as "the weather leave": the weather tool's words, asked for.
    const question = (await collect(new BuiltinTextToSpeech().synthesize('Tell me the weather please.', { voiceId: 'en-us', language: 'en-US' }))).audio;
    const line = Buffer.concat([new Uint8Array(2_400).fill(0xff), question, new Uint8Array(8_000).fill(0xff)]);
    for (let offset = 0; offset < line.length; offset += 160) session.write(line.subarray(offset, offset + 160));

    const asked = await next('response-done');
    expect(asked.find((event) => event.type === 'user-transcript')).toMatchObject({ text: expect.stringContaining('weather') });
    const call = asked.find((event) => event.type === 'tool-call');
    expect(call).toMatchObject({ name: 'get_weather', arguments: '{}' });
    session.toolResult((call as Extract<SpeechToSpeechEvent, { type: 'tool-call' }>).callId, 'Sunny and warm all day.');
    const answered = await next('response-done');
    session.close();

    const spoken = Buffer.concat(answered.flatMap((event) => (event.type === 'audio' ? [event.audio] : [])));
    const answer = 'The get_weather tool returned: Sunny and warm all day.';
    expect(answered.find((event) => event.type === 'assistant-transcript' && event.final)).toMatchObject({ text: answer });
    const heard = await engines.recognise(spoken);
    expect(wordErrorRate(answer, heard), heard).toBeLessThanOrEqual(0.9);
  });
});

describe('the bedrock/amazon.nova-sonic-v1:0 STS model, through its simulator', () => {
  it('is offered by the catalog and served by the Nova Sonic adapter at NOVA_SONIC_ENDPOINT, which hears the question and asks for the tool', async () => {
    const sts = await registry().speechToSpeech('org', model('bedrock', 'STS', 'amazon.nova-sonic-v1:0'));
    expect(sts.provider).toBe('bedrock');
    const session = sts.open({
      model: 'amazon.nova-sonic-v1:0',
      instructions: 'You tell the weather.',
      language: 'en-US',
      tools: [{ name: 'get_weather', description: 'Current weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } }],
    });
    const question = (await collect(new BuiltinTextToSpeech().synthesize('Tell me the weather please.', { voiceId: 'en-us', language: 'en-US' }))).audio;
    const line = Buffer.concat([new Uint8Array(2_400).fill(0xff), question, new Uint8Array(8_000).fill(0xff)]);
    for (let offset = 0; offset < line.length; offset += 160) session.write(line.subarray(offset, offset + 160));

    const seen: SpeechToSpeechEvent[] = [];
    for await (const event of session.events) {
      seen.push(event);
      if (event.type === 'tool-call' || event.type === 'error') break;
    }
    session.close();
    expect(seen.filter((event) => event.type !== 'usage')).toEqual([
      { type: 'user-transcript', text: expect.stringContaining('weather') },
      { type: 'tool-call', callId: expect.any(String), name: 'get_weather', arguments: '{}' },
    ]);
    expect(local.started.novaSonic?.requests.map((request) => request.status)).toEqual([200]);
  });
});

describe('whose key a provider is called with', () => {
  let cartesia: SpeechSimulator;
  beforeAll(async () => {
    // A Cartesia that knows only the organization's own key.
    cartesia = await startCartesiaSimulator({ engines, apiKey: 'the-organizations-own-key', models: ['sonic-2'], voices: ['a0e99841-438c-4a64-b679-ae501e7d6091'] });
  });
  afterAll(() => cartesia.stop());

  it("is the organization's own key when it has one, else the deployment's", async () => {
    ownKeys.set('org-with-key/cartesia', 'the-organizations-own-key');
    const providers = createSpeechProviders({ config: parseConfig({ ...env, CARTESIA_API_URL: cartesia.url }), providerKeys });
    const options = { voiceId: 'a0e99841-438c-4a64-b679-ae501e7d6091', language: 'en-US' };

    const own = await collect((await providers.textToSpeech('org-with-key', model('cartesia', 'TTS', 'sonic-2'))).synthesize('Hello', options));
    const deployment = await collect((await providers.textToSpeech('org-without', model('cartesia', 'TTS', 'sonic-2'))).synthesize('Hello', options)).catch((error: unknown) => error);

    expect(own.audio.length).toBeGreaterThan(0);
    expect(deployment).toBeInstanceOf(SpeechProviderError);
    expect((deployment as Error).message).toContain('401');
  });

  it('is refused before any request when neither has one', async () => {
    const { DEEPGRAM_API_KEY: _key, ...withoutKey } = env;
    const providers = createSpeechProviders({ config: parseConfig(withoutKey), providerKeys });

    const error = await providers.speechToText('org', model('deepgram', 'STT', 'nova-3')).catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(SpeechProviderError);
    expect((error as SpeechProviderError).retryable).toBe(false);
    expect((error as Error).message).toContain('DEEPGRAM_API_KEY');
  });
});
