import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

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

export interface RecordedSpeechRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
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

export interface SimulatorExchange {
  request: IncomingMessage;
  body: Buffer;
  response: ServerResponse;
  /** Keeps the request, with the status it was answered. */
  record(status: number, parsed: unknown): void;
  /** The client went away before the audio ended. */
  cancelled(): void;
}
export type SimulatorHandler = (exchange: SimulatorExchange) => Promise<void>;

/** 20 ms of telephone audio: the simulators stream their audio in chunks of ten of these. */
const chunkBytes = 1_600;

export async function startSpeechSimulatorServer(options: { apiKey: string; port?: number | undefined; scheme?: 'http' | 'ws' }, handler: SimulatorHandler): Promise<SpeechSimulator & { server: Server }> {
  const requests: RecordedSpeechRequest[] = [];
  let cancelled = 0;
  const server = createServer((request, response) => {
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
  });
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
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  response.end(text);
}

/**
 * Streams audio in chunks, each written after the previous one was flushed, as a provider streams what it
 * generates; stops when the client goes away (counted as a cancellation when audio was left).
 */
export async function streamAudio(response: ServerResponse, audio: Uint8Array, contentType: string, onCancelled: () => void): Promise<void> {
  response.writeHead(200, { 'content-type': contentType, 'transfer-encoding': 'chunked' });
  for (let offset = 0; offset < audio.length; offset += chunkBytes) {
    if (response.destroyed || response.writableEnded) {
      onCancelled();
      return;
    }
    const flushed = response.write(audio.subarray(offset, offset + chunkBytes));
    if (!flushed) await new Promise((resolve) => response.once('drain', resolve));
    // Each chunk leaves before the next is generated: the client gets the first one at once.
    await new Promise((resolve) => setImmediate(resolve));
  }
  response.end();
}

export function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}
