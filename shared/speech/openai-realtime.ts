/**
 * The OpenAI Realtime API, GA interface (https://platform.openai.com/docs/guides/realtime-websocket): a WebSocket to
 * `<url>/realtime?model=…` with `Authorization: Bearer <key>`, JSON events both ways. The session speaks telephone
 * audio both ways (`audio/pcmu`: G.711 μ-law, 8 kHz), transcribes the caller (`input_audio_transcription`), and
 * answers on its own when server VAD hears the caller stop; barge-in is ours (`interrupt`), not the server's.
 */
import WebSocket from 'ws';
import * as z from 'zod';
import { EventQueue, safeJson } from './event-queue.ts';
import type { SpeechToSpeech, SpeechToSpeechEvent, SpeechToSpeechOptions, SpeechToSpeechSession } from './ports.ts';

/** The model that transcribes the caller: the session's own speech model does not write what it heard. */
export const realtimeTranscriptionModel = 'gpt-4o-mini-transcribe';
const telephoneFormat = { type: 'audio/pcmu' } as const;
/** μ-law at 8 kHz: 8 bytes a ms. */
const bytesPerMs = 8;

const serverEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('input_audio_buffer.speech_started') }),
  z.object({ type: z.literal('conversation.item.input_audio_transcription.completed'), transcript: z.string() }),
  z.object({ type: z.literal('response.created'), response: z.object({ id: z.string() }) }),
  z.object({ type: z.literal('response.output_item.added'), item: z.object({ type: z.string(), call_id: z.string().optional(), name: z.string().optional() }) }),
  z.object({ type: z.literal('response.output_audio.delta'), item_id: z.string(), delta: z.string() }),
  z.object({ type: z.literal('response.output_audio_transcript.delta'), delta: z.string() }),
  z.object({ type: z.literal('response.output_audio_transcript.done'), transcript: z.string() }),
  z.object({ type: z.literal('response.function_call_arguments.done'), call_id: z.string(), arguments: z.string(), name: z.string().optional() }),
  z.object({
    type: z.literal('response.done'),
    response: z.object({ id: z.string(), usage: z.object({ input_tokens: z.number(), output_tokens: z.number() }).nullish() }),
  }),
  z.object({ type: z.literal('error'), error: z.object({ message: z.string(), code: z.string().nullish() }) }),
]);

export interface OpenAIRealtimeConnection {
  /** The API's base address (`https://api.openai.com/v1`); `http(s)` becomes `ws(s)`. */
  url: string;
  apiKey?: string | undefined;
}

export function openAIRealtimeSpeechToSpeech(connection: OpenAIRealtimeConnection): SpeechToSpeech {
  return { provider: 'openai-compatible', open: (options) => openSession(connection, options) };
}

/** `<url>/realtime?model=…`, on the WebSocket scheme of the base address. */
export function realtimeUrl(baseUrl: string, model: string): string {
  const url = new URL(`${baseUrl.replace(/\/+$/, '')}/realtime`);
  url.protocol = url.protocol === 'https:' || url.protocol === 'wss:' ? 'wss:' : 'ws:';
  url.searchParams.set('model', model);
  return url.href;
}

/** The first event: what the session is (GA `session.update`). */
export function realtimeSessionUpdate(options: SpeechToSpeechOptions): Record<string, unknown> {
  return {
    type: 'session.update',
    session: {
      type: 'realtime',
      output_modalities: ['audio'],
      instructions: options.instructions,
      tools: options.tools.map((tool) => ({ type: 'function', name: tool.name, description: tool.description, parameters: tool.parameters })),
      tool_choice: 'auto',
      audio: {
        input: {
          format: telephoneFormat,
          transcription: { model: realtimeTranscriptionModel, language: options.language.split('-')[0] },
          // The server answers when the caller stops; the media worker decides a barge-in (it knows what was played).
          turn_detection: { type: 'server_vad', create_response: true, interrupt_response: false },
        },
        output: { format: telephoneFormat, ...(options.voiceId ? { voice: options.voiceId } : {}) },
      },
    },
  };
}

function openSession(connection: OpenAIRealtimeConnection, options: SpeechToSpeechOptions): SpeechToSpeechSession {
  const events = new EventQueue<SpeechToSpeechEvent>();
  const socket = new WebSocket(realtimeUrl(connection.url, options.model), connection.apiKey ? { headers: { authorization: `Bearer ${connection.apiKey}` } } : {});
  const pending: string[] = [];
  let closing = false;
  const send = (event: Record<string, unknown>) => {
    const data = JSON.stringify(event);
    if (socket.readyState === WebSocket.CONNECTING) pending.push(data);
    else if (socket.readyState === WebSocket.OPEN) socket.send(data);
  };
  const fail = (message: string) => {
    events.push({ type: 'error', message: `openai-realtime: ${message}` });
    events.end();
    socket.terminate();
  };

  /** The response in progress (between `response.created` and `response.done`): what `interrupt` cancels. */
  let activeResponse: string | undefined;
  /** The assistant audio item last spoken, and how many ms of it arrived: what `interrupt` truncates. */
  let spokenItem: { id: string; ms: number } | undefined;
  /** Names of the function calls of the response, by call id (the arguments' `done` event has no name). */
  const toolNames = new Map<string, string>();
  /** Calls of the responses so far still waiting for their output; the model answers once all have one. */
  const unanswered = new Set<string>();
  let responseFinished = true;
  /** A tool output was handed back since the last `response.create`. */
  let toolsAnswered = false;
  const answerIfReady = () => {
    if (responseFinished && unanswered.size === 0 && toolsAnswered) {
      toolsAnswered = false;
      send({ type: 'response.create' });
    }
  };

  send(realtimeSessionUpdate(options));
  socket.on('open', () => {
    for (const data of pending.splice(0)) socket.send(data);
  });
  socket.on('unexpected-response', (_request, response) => {
    const chunks: Buffer[] = [];
    response.on('data', (chunk: Buffer) => chunks.push(chunk));
    response.on('end', () => fail(`HTTP ${response.statusCode}: ${Buffer.concat(chunks).toString('utf8').slice(0, 500)}`));
  });
  socket.on('message', (data, isBinary) => {
    if (isBinary) return;
    const parsed = serverEvent.safeParse(safeJson(String(data)));
    if (!parsed.success) return;
    const event = parsed.data;
    switch (event.type) {
      case 'input_audio_buffer.speech_started':
        return events.push({ type: 'speech-started' });
      case 'conversation.item.input_audio_transcription.completed':
        return events.push({ type: 'user-transcript', text: event.transcript.trim() });
      case 'response.created':
        activeResponse = event.response.id;
        responseFinished = false;
        return;
      case 'response.output_item.added':
        if (event.item.type === 'function_call' && event.item.call_id && event.item.name) toolNames.set(event.item.call_id, event.item.name);
        return;
      case 'response.output_audio.delta': {
        const audio = Buffer.from(event.delta, 'base64');
        spokenItem = spokenItem?.id === event.item_id ? spokenItem : { id: event.item_id, ms: 0 };
        spokenItem.ms += audio.length / bytesPerMs;
        return events.push({ type: 'audio', audio: new Uint8Array(audio) });
      }
      case 'response.output_audio_transcript.delta':
        return events.push({ type: 'assistant-transcript', text: event.delta, final: false });
      case 'response.output_audio_transcript.done':
        return events.push({ type: 'assistant-transcript', text: event.transcript, final: true });
      case 'response.function_call_arguments.done': {
        const name = event.name ?? toolNames.get(event.call_id);
        if (!name) return fail(`function call ${event.call_id} has no name`);
        unanswered.add(event.call_id);
        return events.push({ type: 'tool-call', callId: event.call_id, name, arguments: event.arguments });
      }
      case 'response.done':
        if (activeResponse === event.response.id) activeResponse = undefined;
        responseFinished = true;
        if (event.response.usage) events.push({ type: 'usage', inputTokens: event.response.usage.input_tokens, outputTokens: event.response.usage.output_tokens });
        events.push({ type: 'response-done' });
        return answerIfReady();
      case 'error':
        return fail(`${event.error.code ? `${event.error.code}: ` : ''}${event.error.message}`);
    }
  });
  socket.on('error', (error) => {
    if (!events.ended) fail(error.message);
  });
  socket.on('close', (code, reason) => {
    if (!closing && !events.ended) fail(`connection closed (${code}${reason.length ? ` ${reason.toString('utf8')}` : ''})`);
    events.end();
  });

  const close = () => {
    closing = true;
    events.end(true);
    socket.terminate();
  };
  options.signal?.addEventListener('abort', close, { once: true });
  return {
    write: (audio) => {
      if (!closing && audio.length > 0) send({ type: 'input_audio_buffer.append', audio: Buffer.from(audio).toString('base64') });
    },
    toolResult: (callId, output) => {
      if (closing || !unanswered.delete(callId)) return;
      send({ type: 'conversation.item.create', item: { type: 'function_call_output', call_id: callId, output } });
      toolsAnswered = true;
      answerIfReady();
    },
    interrupt: (playedMs) => {
      if (closing) return;
      if (activeResponse) send({ type: 'response.cancel', response_id: activeResponse });
      // The model remembers only what the caller heard; the server refuses an end past the audio it sent.
      if (spokenItem) send({ type: 'conversation.item.truncate', item_id: spokenItem.id, content_index: 0, audio_end_ms: Math.max(0, Math.min(Math.round(playedMs), Math.floor(spokenItem.ms))) });
      spokenItem = undefined;
    },
    say: (text) => {
      if (!closing) send({ type: 'response.create', response: { instructions: `Say exactly this, and nothing else: ${text}` } });
    },
    close,
    events,
  };
}
