import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { startSpeechSimulatorServer, utteranceCutter, type SimulatorEngines, type SpeechSimulator } from './speech-simulator-server.ts';

/**
 * Deepgram's live streaming STT, `wss://…/v1/listen` (https://developers.deepgram.com/reference/speech-to-text/listen-streaming),
 * no more forgiving than Deepgram: `Authorization: Token <key>` on the upgrade (401 with Deepgram's `err_code`
 * body and `dg-error` header otherwise), query parameters checked (a model it knows, `sample_rate` with
 * `encoding`, unknown ones refused with 400); binary audio frames, and the control messages `KeepAlive`,
 * `Finalize`, `CloseStream` (anything else closes with 1008); no audio nor message for 10 s closes with 1011.
 *
 * What it hears: a voice activity detector on the audio's energy cuts utterances; each is recognised by the
 * built-in STT and answered as `Results` with `is_final` and `speech_final` once `endpointing` ms of silence
 * followed (at least 300 ms: the energy detector cannot tell a pause between words from one shorter), preceded by
 * `SpeechStarted` when `vad_events=true`. `Finalize` answers what is buffered with `from_finalize: true`;
 * `CloseStream` answers what is left, then `Metadata`, and closes (1000). No interim results are sent.
 */
const knownParameters = new Set([
  'model', 'language', 'encoding', 'sample_rate', 'channels', 'interim_results', 'vad_events', 'endpointing', 'utterance_end_ms', 'punctuate', 'smart_format', 'version', 'tier', 'keyterm', 'keywords', 'tag',
]);
const encodings = ['linear16', 'flac', 'mulaw', 'alaw', 'amr-nb', 'amr-wb', 'opus', 'ogg-opus', 'speex', 'g729'];
const minimumEndpointingMs = 300;
const idleCloseMs = 10_000;

export interface DeepgramSimulator extends SpeechSimulator {
  /** Streams opened and not yet closed. */
  readonly openStreams: number;
}

export async function startDeepgramSimulator(options: { engines: SimulatorEngines; apiKey?: string | undefined; models: readonly string[]; port?: number | undefined }): Promise<DeepgramSimulator> {
  const apiKey = options.apiKey ?? 'local-deepgram-key';
  const base = await startSpeechSimulatorServer({ apiKey, port: options.port, scheme: 'ws' }, async ({ response, record }) => {
    record(426, undefined);
    response.writeHead(426, { 'content-type': 'text/plain' });
    response.end('Upgrade Required');
  });
  const sockets = new WebSocketServer({ noServer: true });
  let openStreams = 0;
  base.server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(request.url ?? '/', 'http://local');
    const refuse = (status: number, code: string, message: string) => {
      base.requests.push({ method: 'GET', path: request.url ?? '/', headers: request.headers, body: undefined, status });
      const body = JSON.stringify({ err_code: code, err_msg: message, request_id: randomUUID() });
      socket.end(`HTTP/1.1 ${status} ${status === 401 ? 'Unauthorized' : 'Bad Request'}\r\ncontent-type: application/json\r\ndg-error: ${message}\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
    };
    if (url.pathname !== '/v1/listen') return refuse(404, 'NOT_FOUND', 'Not Found');
    if (request.headers.authorization !== `Token ${apiKey}`) return refuse(401, 'INVALID_AUTH', 'Invalid credentials.');
    const problem = parameterProblem(url.searchParams, options.models);
    if (problem) return refuse(400, 'Bad Request', problem);
    base.requests.push({ method: 'GET', path: request.url ?? '/', headers: request.headers, body: undefined, status: 101 });
    sockets.handleUpgrade(request, socket, head, (channel) => {
      openStreams += 1;
      channel.once('close', () => (openStreams -= 1));
      listen(channel, url.searchParams, options.engines);
    });
  });
  const stopServer = base.stop;
  base.stop = async () => {
    for (const client of sockets.clients) client.terminate();
    await stopServer();
  };
  return Object.defineProperty(base, 'openStreams', { get: () => openStreams }) as typeof base & DeepgramSimulator;
}

function parameterProblem(parameters: URLSearchParams, models: readonly string[]): string | undefined {
  const unknown = [...parameters.keys()].find((name) => !knownParameters.has(name));
  if (unknown) return `Unknown parameter: ${unknown}`;
  const model = parameters.get('model') ?? 'base';
  if (!models.includes(model)) return `No such model/language/tier combination found: ${model}`;
  const encoding = parameters.get('encoding');
  if (encoding && !encodings.includes(encoding)) return `Invalid encoding: ${encoding}`;
  if (encoding && !parameters.get('sample_rate')) return 'sample_rate is required when encoding is set';
  if (encoding !== 'mulaw' || parameters.get('sample_rate') !== '8000' || (parameters.get('channels') ?? '1') !== '1') return 'The simulator hears mulaw at 8000 Hz, one channel, only';
  const endpointing = parameters.get('endpointing');
  if (endpointing !== null && endpointing !== 'false' && !/^\d+$/.test(endpointing)) return `Invalid endpointing: ${endpointing}`;
  return undefined;
}

function listen(channel: WebSocket, parameters: URLSearchParams, engines: SimulatorEngines): void {
  const requestId = randomUUID();
  const model = parameters.get('model') ?? 'base';
  const vadEvents = parameters.get('vad_events') === 'true';
  const endpointing = parameters.get('endpointing');
  const endpointingMs = endpointing === 'false' ? Number.POSITIVE_INFINITY : Math.max(Number(endpointing ?? 10), minimumEndpointingMs);
  let finalizing = false;
  // Results leave in the order their utterances ended, whatever recognition takes.
  let answered = Promise.resolve();
  const send = (message: unknown) => {
    if (channel.readyState === channel.OPEN) channel.send(JSON.stringify(message));
  };
  const cutter = utteranceCutter({
    endpointingMs,
    onSpeechStarted: (atByte) => {
      if (vadEvents) send({ type: 'SpeechStarted', channel: [0, 1], timestamp: atByte / 8000 });
    },
    onUtterance: (audio, startByte) => {
      const fromFinalize = finalizing;
      answered = answered.then(async () => {
        const transcript = audio.length > 0 ? await engines.recognise(audio).catch(() => '') : '';
        send({
          type: 'Results',
          channel_index: [0, 1],
          duration: audio.length / 8000,
          start: startByte / 8000,
          is_final: true,
          speech_final: !fromFinalize,
          from_finalize: fromFinalize,
          channel: { alternatives: [{ transcript, confidence: transcript ? 0.9 : 0, words: [] }] },
          metadata: { request_id: requestId, model_info: { name: model, version: 'simulator', arch: model }, model_uuid: requestId },
        });
      });
    },
  });
  const finalize = () => {
    finalizing = true;
    cutter.flush();
    finalizing = false;
  };
  let idle = setTimeout(() => channel.close(1011, 'NET-0001'), idleCloseMs);
  channel.on('close', () => clearTimeout(idle));
  channel.on('message', (data: Buffer, isBinary) => {
    clearTimeout(idle);
    idle = setTimeout(() => channel.close(1011, 'NET-0001'), idleCloseMs);
    if (isBinary) return cutter.push(data);
    let type: unknown;
    try {
      type = (JSON.parse(data.toString('utf8')) as { type?: unknown }).type;
    } catch {
      type = undefined;
    }
    if (type === 'KeepAlive') return;
    if (type === 'Finalize') return finalize();
    if (type === 'CloseStream') {
      if (cutter.hearing) cutter.flush();
      void answered.then(() => {
        send({ type: 'Metadata', transaction_key: 'deprecated', request_id: requestId, sha256: '', created: new Date().toISOString(), duration: cutter.receivedBytes / 8000, channels: 1, models: [requestId], model_info: { [requestId]: { name: model, version: 'simulator', arch: model } } });
        channel.close(1000);
      });
      return;
    }
    channel.close(1008, 'DATA-0000: invalid control message');
  });
}
