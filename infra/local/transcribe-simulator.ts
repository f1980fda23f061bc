import { randomUUID } from 'node:crypto';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import { EventStreamCodec, type Message } from '@smithy/eventstream-codec';
import { bytesToPcm16, muLawEncode } from '../../shared/speech/telephone-audio.ts';
import { sendJson, startSpeechSimulatorServer, utteranceCutter, type SimulatorEngines, type SpeechSimulator } from './speech-simulator-server.ts';

/**
 * Amazon Transcribe streaming, `POST /stream-transcription` over HTTP/2 (cleartext locally), as the SDK speaks it
 * (https://docs.aws.amazon.com/transcribe/latest/APIReference/API_streaming_StartStreamTranscription.html and
 * https://docs.aws.amazon.com/transcribe/latest/dg/event-stream.html): a SigV4 `Authorization` for `transcribe`
 * (its signature is not checked), the stream's settings in `x-amzn-transcribe-*` headers (a language Transcribe
 * streams, `pcm` at 8000 Hz here: others refused with `BadRequestException`), a body of AWS event-stream messages
 * (each signed message wrapping an `AudioEvent`; an empty one ends the audio), and an answer of event-stream
 * messages: `TranscriptEvent`s, or an exception (`BadRequestException` for an unknown event, or 15 s without audio).
 *
 * What it hears: utterances cut by the energy detector after 500 ms of silence (Transcribe completes a segment at a
 * pause), each recognised by the built-in STT and answered as a partial result, then the same result complete
 * (`IsPartial: false`); no stabilised word items.
 */
const languages = ['en-US', 'en-GB', 'en-AU', 'en-IN', 'es-US', 'es-ES', 'fr-FR', 'fr-CA', 'de-DE', 'it-IT', 'pt-BR', 'ja-JP', 'ko-KR', 'zh-CN'];
const segmentPauseMs = 500;
const idleLimitMs = 15_000;
const text = { toUtf8: (bytes: Uint8Array) => Buffer.from(bytes).toString('utf8'), fromUtf8: (value: string) => new Uint8Array(Buffer.from(value, 'utf8')) };
const stringHeader = (value: string) => ({ type: 'string' as const, value });

export async function startTranscribeSimulator(options: { engines: SimulatorEngines; port?: number | undefined }): Promise<SpeechSimulator> {
  return startSpeechSimulatorServer(
    {
      apiKey: 'local AWS credentials',
      port: options.port,
      http2: true,
      streaming: (request, response, record) => {
        if (request.url !== '/stream-transcription') return false;
        transcribe(request, response, record, options.engines);
        return true;
      },
    },
    async ({ response, record }) => {
      record(404, undefined);
      sendJson(response, 404, { message: 'Unknown operation' }, { 'x-amzn-errortype': 'UnknownOperationException' });
    },
  );
}

function transcribe(request: Http2ServerRequest, response: Http2ServerResponse, record: (status: number) => void, engines: SimulatorEngines): void {
  const refuse = (status: number, type: string, message: string) => {
    record(status);
    request.resume();
    sendJson(response, status, { Message: message }, { 'x-amzn-errortype': type });
  };
  const header = (name: string) => request.headers[name] as string | undefined;
  if (request.method !== 'POST') return refuse(404, 'UnknownOperationException', 'Unknown operation');
  if (!/^AWS4-HMAC-SHA256 Credential=[^/]+\/\d{8}\/[a-z0-9-]+\/transcribe\/aws4_request, SignedHeaders=[^,]+, Signature=[0-9a-f]{64}$/.test(header('authorization') ?? '')) {
    return refuse(403, 'MissingAuthenticationTokenException', 'Missing Authentication Token');
  }
  const language = header('x-amzn-transcribe-language-code');
  const encoding = header('x-amzn-transcribe-media-encoding');
  const sampleRate = Number(header('x-amzn-transcribe-sample-rate'));
  if (!language || !languages.includes(language)) return refuse(400, 'BadRequestException', `Your request contains an unsupported language code: ${language}`);
  if (!encoding || !['pcm', 'ogg-opus', 'flac'].includes(encoding)) return refuse(400, 'BadRequestException', `Unsupported media encoding: ${encoding}`);
  if (!(sampleRate >= 8000 && sampleRate <= 48000)) return refuse(400, 'BadRequestException', `Unsupported sample rate: ${sampleRate}`);
  if (encoding !== 'pcm' || sampleRate !== 8000) return refuse(400, 'BadRequestException', 'The simulator hears pcm at 8000 Hz only');
  if (header('content-type') !== 'application/vnd.amazon.eventstream') return refuse(400, 'BadRequestException', 'The body must be an event stream');
  record(200);

  const codec = new EventStreamCodec(text.toUtf8, text.fromUtf8);
  const sessionId = header('x-amzn-transcribe-session-id') ?? randomUUID();
  response.writeHead(200, {
    'content-type': 'application/vnd.amazon.eventstream',
    'x-amzn-request-id': randomUUID(),
    'x-amzn-transcribe-session-id': sessionId,
    'x-amzn-transcribe-language-code': language,
    'x-amzn-transcribe-sample-rate': String(sampleRate),
    'x-amzn-transcribe-media-encoding': encoding,
    ...(header('x-amzn-transcribe-enable-partial-results-stabilization') ? { 'x-amzn-transcribe-enable-partial-results-stabilization': 'true' } : {}),
    ...(header('x-amzn-transcribe-partial-results-stability') ? { 'x-amzn-transcribe-partial-results-stability': header('x-amzn-transcribe-partial-results-stability')! } : {}),
  });
  let finished = false;
  const send = (message: Message) => {
    if (!finished) response.write(codec.encode(message));
  };
  const finish = (exception?: { type: string; message: string }) => {
    if (finished) return;
    if (exception) {
      send({
        headers: { ':message-type': stringHeader('exception'), ':exception-type': stringHeader(exception.type), ':content-type': stringHeader('application/json') },
        body: text.fromUtf8(JSON.stringify({ Message: exception.message })),
      });
    }
    finished = true;
    clearTimeout(idle);
    response.end();
  };
  const result = (resultId: string, transcript: string, startByte: number, endByte: number, isPartial: boolean) =>
    send({
      headers: { ':message-type': stringHeader('event'), ':event-type': stringHeader('TranscriptEvent'), ':content-type': stringHeader('application/json') },
      body: text.fromUtf8(
        JSON.stringify({
          Transcript: { Results: [{ ResultId: resultId, StartTime: startByte / 8000, EndTime: endByte / 8000, IsPartial: isPartial, ChannelId: 'ch_0', Alternatives: [{ Transcript: transcript, Items: [] }] }] },
        }),
      ),
    });

  let answered = Promise.resolve();
  const cutter = utteranceCutter({
    endpointingMs: segmentPauseMs,
    onSpeechStarted: () => undefined,
    onUtterance: (audio, startByte) => {
      // The segment ends where its speech did, before the pause that completed it.
      const endByte = startByte + audio.length - segmentPauseMs * 8;
      answered = answered.then(async () => {
        const transcript = audio.length > 0 ? await engines.recognise(audio).catch(() => '') : '';
        if (!transcript) return;
        const resultId = randomUUID();
        result(resultId, transcript, startByte, Math.max(startByte, endByte), true);
        result(resultId, transcript, startByte, Math.max(startByte, endByte), false);
      });
    },
  });
  let idle = setTimeout(() => finish({ type: 'BadRequestException', message: 'Your request timed out because no new audio was received for 15 seconds.' }), idleLimitMs);
  const endOfAudio = () => {
    // The audio has ended: nothing more to wait for, however long the recognition of what came takes.
    clearTimeout(idle);
    if (cutter.hearing) cutter.flush();
    void answered.then(() => finish());
  };

  // The body arrives in pieces that are not messages: each message starts with its total length (4 bytes, big-endian).
  let buffered = Buffer.alloc(0);
  request.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    while (buffered.length >= 4 && buffered.length >= buffered.readUInt32BE(0)) {
      const length = buffered.readUInt32BE(0);
      const signed = codec.decode(buffered.subarray(0, length));
      buffered = buffered.subarray(length);
      if (!signed.headers[':chunk-signature'] || !signed.headers[':date']) return finish({ type: 'BadRequestException', message: 'An event stream message is not signed' });
      // An empty signed message is the end of the audio.
      if (signed.body.length === 0) return endOfAudio();
      const event = codec.decode(signed.body);
      if (event.headers[':event-type']?.value !== 'AudioEvent') return finish({ type: 'BadRequestException', message: `Unknown event type: ${String(event.headers[':event-type']?.value)}` });
      clearTimeout(idle);
      idle = setTimeout(() => finish({ type: 'BadRequestException', message: 'Your request timed out because no new audio was received for 15 seconds.' }), idleLimitMs);
      cutter.push(muLawEncode(bytesToPcm16(event.body.subarray(0, event.body.length - (event.body.length % 2)))));
    }
  });
  request.on('end', endOfAudio);
  response.once('close', () => {
    finished = true;
    clearTimeout(idle);
  });
}
