import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttp2Server, type Http2ServerRequest, type Http2ServerResponse, type Http2Session } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import type { LanguageModelV4FunctionTool, LanguageModelV4Prompt } from '@ai-sdk/provider';
import { builtinModels, modelId } from '../../shared/models/model-catalog.ts';
import { createLanguageModel } from '../../shared/models/model-providers.ts';
import { voiceCatalog } from '../../shared/models/voices.ts';
import { BuiltinSpeechToText } from '../../shared/speech/builtin-stt.ts';
import { BuiltinTextToSpeech } from '../../shared/speech/builtin-tts.ts';
import { muLawDecode } from '../../shared/speech/telephone-audio.ts';

/**
 * What the speech providers' simulators share (docs/voice.md#speech-provider-simulators): a loopback HTTP server,
 * the requests it answered (for tests), the audio streamed in chunks as a provider streams it, and the engines
 * that speak and hear.
 */
export interface SimulatorEngines {
  /** `text` spoken as telephone audio (μ-law, 8 kHz): eSpeak NG locally. */
  speak(text: string, voice: { provider: string; voiceId: string; language: string }): Promise<Uint8Array>;
  /** The words telephone audio says: PocketSphinx locally. */
  recognise(audio: Uint8Array): Promise<string>;
}

/** 300 ms of μ-law silence (0xff is zero) before what the recogniser hears, as a call has before speech. */
const silenceBeforeBytes = 2_400;

/**
 * The simulators' engines: eSpeak NG speaks with the built-in voice of the provider's voice's language (from the voices
 * catalog), PocketSphinx hears (US English).
 */
export function builtinSimulatorEngines(enginesDir?: string): SimulatorEngines {
  const tts = new BuiltinTextToSpeech(enginesDir);
  const stt = new BuiltinSpeechToText(enginesDir);
  return {
    async speak(text, voice) {
      const asked = voiceCatalog.find((known) => known.provider === voice.provider && (known.voiceId === voice.voiceId || known.voiceId.split('-')[0] === voice.voiceId));
      const builtins = voiceCatalog.filter((known) => known.provider === 'builtin');
      // By language only: PocketSphinx hears eSpeak's female variant much worse, and a test hears what was said.
      const closest = builtins.find((known) => known.language === asked?.language) ?? builtins.find((known) => known.voiceId === 'en-us')!;
      const chunks: Uint8Array[] = [];
      for await (const chunk of tts.synthesize(text, { voiceId: closest.voiceId, language: closest.language })) chunks.push(chunk);
      return Buffer.concat(chunks);
    },
    async recognise(audio) {
      // Heard as a caller says it: after a moment of silence, and in one utterance (its pauses are not turns).
      const stream = stt.open({ language: 'en-US', endpointingMs: 2_000 });
      stream.write(new Uint8Array(silenceBeforeBytes).fill(0xff));
      stream.write(audio);
      stream.end();
      const words: string[] = [];
      for await (const event of stream.events) {
        if (event.type === 'final' && event.text) words.push(event.text);
        if (event.type === 'error') throw new Error(event.message);
      }
      return words.join(' ');
    },
  };
}

export interface RecordedSpeechRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'] | Http2ServerRequest['headers'];
  body: unknown;
  status: number;
}

export interface SpeechSimulator {
  /** Where the provider's API is (what `<PROVIDER>_API_URL` is set to). */
  url: string;
  port: number;
  /** The key it accepts. */
  apiKey: string;
  requests: RecordedSpeechRequest[];
  /** Requests whose audio was still streaming when the client went away (a cancelled synthesis). */
  cancelled: number;
  stop(): Promise<void>;
}

/** What the simulators use of an HTTP/1.1 or HTTP/2 response. */
export interface SimulatorResponse {
  writeHead(status: number, headers: Record<string, string | number>): unknown;
  setHeader(name: string, value: string): unknown;
  write(chunk: Uint8Array): unknown;
  end(data: string): unknown;
  end(): unknown;
  once(event: 'close', listener: () => void): unknown;
  destroy(): void;
  readonly headersSent: boolean;
}
type Response = SimulatorResponse;

export interface SimulatorExchange {
  request: IncomingMessage | Http2ServerRequest;
  body: Buffer;
  response: Response;
  /** Keeps the request, with the status it was answered. */
  record(status: number, parsed: unknown): void;
  /** The client went away before the audio ended. */
  cancelled(): void;
}
export type SimulatorHandler = (exchange: SimulatorExchange) => Promise<void>;

/** 200 ms of telephone audio: the simulators stream their audio in chunks of this. */
const chunkBytes = 1_600;
/** A chunk is generated every this long: ten times faster than it is spoken, as providers generate ahead of the call. */
const chunkEveryMs = 20;

/**
 * The server of a simulator: HTTP/1.1, or cleartext HTTP/2 (`h2c`, prior knowledge) for the AWS services whose SDK
 * clients speak HTTP/2 (Polly's, Transcribe streaming's).
 */
export async function startSpeechSimulatorServer(
  options: {
    apiKey: string;
    port?: number | undefined;
    scheme?: 'http' | 'ws';
    http2?: boolean;
    /** Takes a request before its body is read (a stream both ways, as Transcribe's); true when it did. */
    streaming?: (request: Http2ServerRequest, response: Http2ServerResponse, record: (status: number) => void) => boolean;
  },
  handler: SimulatorHandler,
): Promise<SpeechSimulator & { server: Server | ReturnType<typeof createHttp2Server> }> {
  const requests: RecordedSpeechRequest[] = [];
  let cancelled = 0;
  const sessions = new Set<Http2Session>();
  const onRequest = (request: IncomingMessage | Http2ServerRequest, response: Response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const record = (status: number, parsed: unknown) => {
        requests.push({ method: request.method ?? 'GET', path: request.url ?? '/', headers: request.headers, body: parsed, status });
      };
      handler({ request, body: Buffer.concat(chunks), response, record, cancelled: () => (cancelled += 1) }).catch((error: Error) => {
        if (!response.headersSent) sendJson(response, 500, { error: error.message });
        else response.destroy();
      });
    });
  };
  const server = options.http2
    ? createHttp2Server((request: Http2ServerRequest, response: Http2ServerResponse) => {
        const record = (status: number) => requests.push({ method: request.method, path: request.url, headers: request.headers, body: undefined, status });
        if (!options.streaming?.(request, response, record)) onRequest(request, response);
      })
    : createServer((request: IncomingMessage, response: ServerResponse) => onRequest(request, response));
  if (options.http2) {
    server.on('session', (session: Http2Session) => {
      sessions.add(session);
      session.once('close', () => sessions.delete(session));
    });
  }
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${options.scheme ?? 'http'}://127.0.0.1:${port}`,
    port,
    apiKey: options.apiKey,
    requests,
    get cancelled() {
      return cancelled;
    },
    server,
    stop: () =>
      new Promise<void>((resolve) => {
        if ('closeAllConnections' in server) server.closeAllConnections();
        for (const session of sessions) session.destroy();
        server.close(() => resolve());
      }),
  };
}

export function sendJson(response: Response, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  response.end(text);
}

/**
 * Streams audio in chunks as a provider streams what it generates; stops when the client goes away (counted as a
 * cancellation when audio was left).
 */
export async function streamAudio(response: Response, audio: Uint8Array, contentType: string, onCancelled: () => void): Promise<void> {
  response.writeHead(200, { 'content-type': contentType });
  // Closed before the last chunk was written: the client went away (an HTTP/2 response says no more than that).
  let gone = false;
  let ended = false;
  response.once('close', () => {
    gone = !ended;
  });
  for (let offset = 0; offset < audio.length; offset += chunkBytes) {
    if (offset > 0) await delay(chunkEveryMs);
    if (gone) {
      onCancelled();
      return;
    }
    response.write(audio.subarray(offset, offset + chunkBytes));
  }
  ended = true;
  response.end();
}

export function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** 20 ms of telephone audio. */
const frameBytes = 160;
/** The audio kept from before speech was detected (the energy detector hears a word's quiet onset late). */
const prerollFrames = 15;
/** Mean absolute amplitude (16-bit) above which a 20 ms frame is speech. */
const speechLevel = 600;

/**
 * How the STT simulators cut utterances out of telephone audio: an energy detector on 20 ms frames, an utterance
 * keeping the 300 ms before it and ending after `endpointingMs` of silence. Positions are in bytes of audio received.
 */
export function utteranceCutter(options: {
  endpointingMs: number;
  onSpeechStarted(atByte: number): void;
  onUtterance(audio: Uint8Array, startByte: number): void;
}): { push(audio: Uint8Array): void; flush(): void; readonly hearing: boolean; readonly receivedBytes: number } {
  let receivedBytes = 0;
  let pending: Uint8Array = new Uint8Array(0);
  let preroll: Uint8Array[] = [];
  let utterance: { start: number; chunks: Uint8Array[]; silentMs: number } | undefined;
  const flush = () => {
    const heard = utterance;
    utterance = undefined;
    options.onUtterance(Buffer.concat(heard?.chunks ?? []), heard?.start ?? receivedBytes);
  };
  const hear = (frame: Uint8Array) => {
    const loud = level(frame) >= speechLevel;
    if (!utterance && loud) {
      utterance = { start: receivedBytes - preroll.length * frameBytes, chunks: preroll, silentMs: 0 };
      preroll = [];
      options.onSpeechStarted(receivedBytes);
    }
    receivedBytes += frame.length;
    if (!utterance) {
      preroll.push(frame);
      if (preroll.length > prerollFrames) preroll.shift();
      return;
    }
    utterance.chunks.push(frame);
    utterance.silentMs = loud ? 0 : utterance.silentMs + frame.length / 8;
    if (utterance.silentMs >= options.endpointingMs) flush();
  };
  return {
    push(audio) {
      const joined = Buffer.concat([pending, audio]);
      let offset = 0;
      for (; offset + frameBytes <= joined.length; offset += frameBytes) hear(Uint8Array.from(joined.subarray(offset, offset + frameBytes)));
      pending = joined.subarray(offset);
    },
    /** What is buffered now, as an utterance (empty when none is under way). */
    flush,
    /** An utterance is under way. */
    get hearing() {
      return utterance !== undefined;
    },
    get receivedBytes() {
      return receivedBytes;
    },
  };
}

function level(frame: Uint8Array): number {
  const samples = muLawDecode(frame);
  let sum = 0;
  for (const sample of samples) sum += Math.abs(sample);
  return sum / samples.length;
}

/** The built-in LLM, as the turn engine gets it from the catalog: it answers for the simulated speech model. */
const builtinLlm = createLanguageModel(
  { id: modelId('builtin', 'LLM', builtinModels.llm), type: 'LLM', provider: 'builtin', name: builtinModels.llm, isDefault: true, acceptsImages: true, source: 'deployment' },
  { AWS_REGION: 'us-east-1', SECRETS_MANAGER_ENDPOINT: undefined, OPENAI_COMPATIBLE_BASE_URL: undefined, OPENAI_COMPATIBLE_API_KEY: undefined, OPENAI_COMPATIBLE_API_KEY_ARN: undefined },
);

/** What the built-in model answers for a simulated speech-to-speech model: its text, and the tool it calls (one at the most). */
export async function builtinReply(prompt: LanguageModelV4Prompt, tools: LanguageModelV4FunctionTool[]): Promise<{ text: string; toolCall?: { toolCallId: string; toolName: string; input: string } }> {
  const { content } = await builtinLlm.doGenerate({ prompt, tools });
  const toolCall = content.find((part) => part.type === 'tool-call');
  const text = content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('');
  return toolCall?.type === 'tool-call' ? { text, toolCall: { toolCallId: toolCall.toolCallId, toolName: toolCall.toolName, input: toolCall.input } } : { text };
}
