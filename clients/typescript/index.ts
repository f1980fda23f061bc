import { EventSourceParserStream, type EventSourceMessage } from 'eventsource-parser/stream';
import createFetchClient from 'openapi-fetch';
import type { components, paths } from './schema.ts';

export type { components, paths };
export type Schemas = components['schemas'];
export type Agent = Schemas['Agent'];
export type Tool = Schemas['Tool'];
export type Session = Schemas['Session'];
export type Message = Schemas['Message'];
export type ErrorEnvelope = Schemas['ErrorEnvelope'];
export type ReplyEvent = Schemas['SendMessageEvent'];
export type StreamedEvent = Schemas['StreamEventsEvent'];
export type VoiceSessionGrant = Schemas['StartVoiceSessionResponse'];

export interface ClientOptions {
  /** Where the API is, e.g. `http://127.0.0.1:3000` (no trailing slash). */
  baseUrl: string;
  /** An API key (`x-api-key`), or `token`, a JWT sent as a bearer token. */
  apiKey?: string;
  token?: string;
  fetch?: typeof globalThis.fetch;
}

/** An error response, or an error event in a stream, in the API's envelope. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly envelope: ErrorEnvelope;

  constructor(envelope: ErrorEnvelope) {
    super(envelope.error.message);
    this.name = 'ApiError';
    this.status = envelope.error.status;
    this.code = envelope.error.code;
    this.envelope = envelope;
  }
}

export type ApiClient = ReturnType<typeof createApiClient>;

/** A client typed by the API's OpenAPI description: `client.GET('/v1/chat/agents')` answers `{ data, error }`. */
export function createApiClient(options: ClientOptions) {
  const client = createFetchClient<paths>({
    baseUrl: options.baseUrl,
    headers: credentialHeaders(options),
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  return Object.assign(client, {
    /** The text of the assistant's reply as it streams, one delta at a time. */
    replyDeltas: (sessionId: string, body: { content: string; metadata?: Record<string, unknown> }, signal?: AbortSignal) =>
      replyDeltas(client, sessionId, body, signal),
    /** The organization's events as they happen; reconnects after a dropped connection, resuming with Last-Event-ID. */
    events: (query: { types?: string; lastEventId?: string } = {}, signal?: AbortSignal) => events(client, query, signal),
    /** Starts a voice session with the agent and connects to it (docs/voice.md#voice-sessions-from-the-browser). */
    voiceSession: async (body: Schemas['StartVoiceSessionBody'], handlers: VoiceSessionHandlers = {}): Promise<VoiceSession> => {
      const { data, error } = await client.POST('/v1/chat/voice/sessions', { body, params: { header: { 'Idempotency-Key': crypto.randomUUID() } } });
      if (error) throw new ApiError(error as ErrorEnvelope);
      return connectVoiceSession(data, handlers);
    },
  });
}

function credentialHeaders(options: ClientOptions): Record<string, string> {
  if (options.apiKey) return { 'x-api-key': options.apiKey };
  if (options.token) return { authorization: `Bearer ${options.token}` };
  return {};
}

type FetchClient = ReturnType<typeof createFetchClient<paths>>;

/**
 * The messages of an SSE body until it ends or `signal` aborts. An abort cancels the read in progress: an aborted
 * fetch does not always error a body that is being piped, and an idle stream would otherwise hold the reader until
 * its next heartbeat. Aborted, it ends without an error (an abort that errored the body first is swallowed too).
 */
async function* sseMessages(stream: ReadableStream<ArrayBufferView | ArrayBuffer>, signal?: AbortSignal): AsyncGenerator<EventSourceMessage> {
  const reader = stream.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader();
  const cancel = () => void reader.cancel(signal?.reason).catch(() => undefined);
  signal?.addEventListener('abort', cancel, { once: true });
  try {
    while (!signal?.aborted) {
      const next = await unlessAborted(reader.read(), signal);
      if (!next || next.done) return;
      yield next.value;
    }
  } finally {
    signal?.removeEventListener('abort', cancel);
    reader.releaseLock();
  }
}

/** A request made with `signal`; undefined when it was aborted before the answer came (the caller stops quietly). */
async function unlessAborted<T>(request: Promise<T>, signal?: AbortSignal): Promise<T | undefined> {
  try {
    return await request;
  } catch (error) {
    if (signal?.aborted) return undefined;
    throw error;
  }
}

/** Waits `ms`, or less if `signal` aborts meanwhile (not at all if it has). */
function pause(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

async function* replyDeltas(
  client: FetchClient,
  sessionId: string,
  body: { content: string; metadata?: Record<string, unknown> },
  signal?: AbortSignal,
): AsyncGenerator<string> {
  const answer = await unlessAborted(
    client.POST('/v1/chat/chat/sessions/{id}/messages', {
      params: { path: { id: sessionId } },
      body: { ...body, stream: true },
      parseAs: 'stream',
      ...(signal ? { signal } : {}),
    }),
    signal,
  );
  if (!answer) return;
  const { data, error } = answer;
  if (error) throw new ApiError(error as ErrorEnvelope);
  for await (const message of sseMessages(data as ReadableStream<ArrayBufferView | ArrayBuffer>, signal)) {
    if (message.data === '[DONE]') return;
    const event = JSON.parse(message.data) as ReplyEvent;
    if ('error' in event) throw new ApiError(event);
    yield event.delta;
  }
}

/** One event of `/v1/chat/events/stream`: its type (the SSE `event:`), its cursor (`id:`) and its payload. */
export interface EventMessage {
  type: string;
  id: string;
  data: StreamedEvent;
}

/** Pause before reconnecting when the server ends the stream (it does at its time limit) or the connection drops. */
const reconnectDelayMs = 1_000;

/** Event ids remembered to drop the repeats a resumed stream may send (the server re-reads a short overlap). */
const rememberedIds = 1_000;

/**
 * The event stream, reconnecting until `signal` aborts. Aborting ends the iteration at once and without an error,
 * whatever it is doing: waiting for the answer, for the next event of an idle stream, or before a reconnect.
 */
async function* events(client: FetchClient, query: { types?: string; lastEventId?: string }, signal?: AbortSignal): AsyncGenerator<EventMessage> {
  let lastEventId = query.lastEventId;
  const seen = new Set<string>();
  while (!signal?.aborted) {
    const answer = await unlessAborted(
      client.GET('/v1/chat/events/stream', {
        params: { query: query.types ? { types: query.types } : {}, header: lastEventId ? { 'Last-Event-ID': lastEventId } : {} },
        parseAs: 'stream',
        ...(signal ? { signal } : {}),
      }),
      signal,
    );
    if (!answer) return;
    const { data, error, response } = answer;
    if (error) throw new ApiError(error as ErrorEnvelope);
    if (!response.ok || !data) return;
    try {
      for await (const message of sseMessages(data as ReadableStream<ArrayBufferView | ArrayBuffer>, signal)) {
        // Heartbeats carry an id but no event: they move the cursor forward without yielding.
        if (message.id) lastEventId = message.id;
        if (message.event === 'error') throw new ApiError(JSON.parse(message.data) as ErrorEnvelope);
        if (!message.data || seen.has(message.id ?? '')) continue;
        if (message.id) seen.add(message.id);
        if (seen.size > rememberedIds) seen.delete(seen.values().next().value as string);
        yield { type: message.event ?? 'message', id: message.id ?? '', data: JSON.parse(message.data) as StreamedEvent };
      }
    } catch (failure) {
      if (failure instanceof ApiError) throw failure;
    }
    await pause(reconnectDelayMs, signal);
  }
}

/** A text event of a voice session's socket (docs/voice.md#voice-sessions-from-the-browser). */
export type VoiceSessionEvent =
  | { type: 'session.started'; sessionId: string }
  | { type: 'user.transcript' | 'agent.transcript'; text: string; final: boolean }
  | { type: 'agent.audio.start' }
  | { type: 'agent.audio.end'; mark: string }
  | { type: 'clear' }
  | { type: 'session.ended'; reason: string };

export interface VoiceSessionHandlers {
  onEvent?(event: VoiceSessionEvent): void;
  /** The agent's audio: PCM 16-bit mono at 16 kHz, as it comes. */
  onAudio?(samples: Int16Array): void;
  /**
   * Whether the client tells the worker each piece of the agent's audio has played as soon as it is received (true,
   * the default), or the caller does with `played(mark)` once its player reaches the `agent.audio.end` mark, so that
   * an interruption keeps in the transcript only what was heard.
   */
  autoPlayed?: boolean;
}

export interface VoiceSession {
  sessionId: string;
  /** The microphone's audio: PCM 16-bit mono at 16 kHz, best in frames of 20 ms (320 samples). */
  sendAudio(samples: Int16Array): void;
  /** The agent's audio up to `mark` (an `agent.audio.end`'s) has played. */
  played(mark: string): void;
  hangUp(): void;
  /** Resolves with the reason the session ended, or `CONNECTION_LOST` when the socket closed without one. */
  ended: Promise<string>;
}

/** Connects to a voice session the API granted: the token first, then audio as binary frames both ways. */
export function connectVoiceSession(grant: VoiceSessionGrant, handlers: VoiceSessionHandlers = {}): Promise<VoiceSession> {
  const socket = new WebSocket(grant.url);
  socket.binaryType = 'arraybuffer';
  const send = (message: object) => socket.readyState === WebSocket.OPEN && socket.send(JSON.stringify(message));
  let reason = 'CONNECTION_LOST';
  const ended = new Promise<string>((resolveEnded) => socket.addEventListener('close', () => resolveEnded(reason)));
  const session: VoiceSession = {
    sessionId: grant.sessionId,
    sendAudio: (samples) => {
      // Little-endian on the wire, whatever the platform's order.
      const bytes = new DataView(new ArrayBuffer(samples.length * 2));
      samples.forEach((sample, index) => bytes.setInt16(index * 2, sample, true));
      if (socket.readyState === WebSocket.OPEN) socket.send(bytes.buffer);
    },
    played: (mark) => send({ type: 'mark', name: mark }),
    hangUp: () => send({ type: 'hangup' }),
    ended,
  };
  return new Promise((resolveStarted, rejectStarted) => {
    socket.addEventListener('open', () => send({ type: 'start', token: grant.token }));
    socket.addEventListener('close', (closed) => rejectStarted(new Error(`The voice session's socket closed (${closed.code}) before it started.`)));
    socket.addEventListener('message', (message: { data: unknown }) => {
      if (typeof message.data !== 'string') {
        const view = new DataView(message.data as ArrayBuffer);
        handlers.onAudio?.(Int16Array.from({ length: view.byteLength >> 1 }, (_, index) => view.getInt16(index * 2, true)));
        return;
      }
      const event = JSON.parse(message.data) as VoiceSessionEvent;
      if (event.type === 'session.started') resolveStarted(session);
      if (event.type === 'session.ended') reason = event.reason;
      if (event.type === 'agent.audio.end' && handlers.autoPlayed !== false) session.played(event.mark);
      handlers.onEvent?.(event);
    });
  });
}
