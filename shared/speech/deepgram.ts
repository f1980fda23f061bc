/**
 * Deepgram's live streaming STT (https://developers.deepgram.com/reference/speech-to-text/listen-streaming): a
 * WebSocket to `/v1/listen` that takes telephone audio as binary frames (`encoding=mulaw&sample_rate=8000`) and
 * answers `Results` (interim, `is_final`, and `speech_final` when its endpointing heard the speaker stop),
 * `SpeechStarted` (`vad_events=true`) and, after `CloseStream`, `Metadata`.
 */
import WebSocket from 'ws';
import * as z from 'zod';
import { EventQueue, safeJson } from './event-queue.ts';
import type { SpeechToText, TranscriptEvent, TranscriptionOptions, TranscriptionStream } from './ports.ts';

export const deepgramDefaultModel = 'nova-3';
/** Deepgram closes a stream that got no audio nor message for 10 s; a KeepAlive is sent after this long without either. */
const keepAliveAfterMs = 5_000;

const resultsMessage = z.object({
  type: z.literal('Results'),
  start: z.number(),
  duration: z.number(),
  is_final: z.boolean().optional(),
  speech_final: z.boolean().optional(),
  from_finalize: z.boolean().optional(),
  channel: z.object({ alternatives: z.array(z.object({ transcript: z.string() })) }),
});
const speechStartedMessage = z.object({ type: z.literal('SpeechStarted'), timestamp: z.number() });
/** What the adapter reads of Deepgram's messages; the others (`Metadata`, `UtteranceEnd`) are not events of ours. */
const deepgramMessage = z.union([resultsMessage, speechStartedMessage, z.object({ type: z.string() })]);

export function deepgramSpeechToText(connection: { apiUrl: string; apiKey: string }): SpeechToText {
  return { provider: 'deepgram', open: (options) => openStream(connection, options) };
}

/** The `/v1/listen` address with the stream's parameters. */
export function deepgramListenUrl(apiUrl: string, options: TranscriptionOptions): string {
  const url = new URL('/v1/listen', apiUrl);
  const parameters: Record<string, string> = {
    model: options.model ?? deepgramDefaultModel,
    language: options.language,
    encoding: 'mulaw',
    sample_rate: '8000',
    channels: '1',
    interim_results: 'true',
    vad_events: 'true',
    ...(options.endpointingMs === undefined ? {} : { endpointing: String(options.endpointingMs) }),
  };
  for (const [name, value] of Object.entries(parameters)) url.searchParams.set(name, value);
  return url.href;
}

function openStream(connection: { apiUrl: string; apiKey: string }, options: TranscriptionOptions): TranscriptionStream {
  const events = new EventQueue<TranscriptEvent>();
  const socket = new WebSocket(deepgramListenUrl(connection.apiUrl, options), { headers: { authorization: `Token ${connection.apiKey}` } });
  // Audio and control messages written before the socket opens, in order.
  const pending: (Uint8Array | string)[] = [];
  let lastSentAt = Date.now();
  let ending = false;
  const send = (data: Uint8Array | string) => {
    if (socket.readyState === WebSocket.CONNECTING) pending.push(data);
    else if (socket.readyState === WebSocket.OPEN) {
      socket.send(data);
      lastSentAt = Date.now();
    }
  };
  const keepAlive = setInterval(() => {
    if (socket.readyState === WebSocket.OPEN && Date.now() - lastSentAt >= keepAliveAfterMs) send(JSON.stringify({ type: 'KeepAlive' }));
  }, keepAliveAfterMs);
  keepAlive.unref();
  const fail = (message: string) => {
    events.push({ type: 'error', message: `deepgram: ${message}` });
    events.end();
  };

  socket.on('open', () => {
    for (const data of pending.splice(0)) send(data);
  });
  socket.on('unexpected-response', (_request, response) => {
    const chunks: Buffer[] = [];
    response.on('data', (chunk: Buffer) => chunks.push(chunk));
    response.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8').slice(0, 500);
      fail(`HTTP ${response.statusCode}${response.headers['dg-error'] ? ` (${String(response.headers['dg-error'])})` : ''}: ${body}`);
      socket.terminate();
    });
  });
  socket.on('message', (data, isBinary) => {
    if (isBinary) return;
    const parsed = deepgramMessage.safeParse(safeJson(String(data)));
    if (!parsed.success) return;
    const message = parsed.data;
    if ('timestamp' in message) events.push({ type: 'speech-started', atMs: Math.round(message.timestamp * 1000) });
    else if ('channel' in message) {
      const text = message.channel.alternatives[0]?.transcript.trim() ?? '';
      if (!message.is_final) {
        if (text) events.push({ type: 'partial', text });
        return;
      }
      // A Finalize's result ends the turn another detector decided; Deepgram's own endpointing says speech_final.
      const endOfTurn = message.speech_final === true || message.from_finalize === true;
      if (text || endOfTurn) {
        events.push({ type: 'final', text, endOfTurn, startMs: Math.round(message.start * 1000), endMs: Math.round((message.start + message.duration) * 1000) });
      }
    }
  });
  socket.on('error', (error) => {
    if (!events.ended) fail(error.message);
  });
  socket.on('close', (code, reason) => {
    clearInterval(keepAlive);
    // 1000 is Deepgram's close after CloseStream; anything else before we asked is a failure.
    if (code !== 1000 && !ending) fail(`connection closed (${code}${reason.length ? ` ${reason.toString('utf8')}` : ''})`);
    events.end();
  });

  const close = () => {
    ending = true;
    clearInterval(keepAlive);
    events.end(true);
    socket.terminate();
  };
  options.signal?.addEventListener('abort', close, { once: true });
  return {
    write: (audio) => {
      if (!ending && audio.length > 0) send(audio);
    },
    finalize: () => {
      if (!ending) send(JSON.stringify({ type: 'Finalize' }));
    },
    end: () => {
      if (ending) return;
      ending = true;
      send(JSON.stringify({ type: 'CloseStream' }));
    },
    close,
    events,
  };
}
