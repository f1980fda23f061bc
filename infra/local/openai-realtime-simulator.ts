import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import type { LanguageModelV4FunctionTool, LanguageModelV4Message, LanguageModelV4Prompt } from '@ai-sdk/provider';
import { WebSocketServer, type WebSocket } from 'ws';
import * as z from 'zod';
import { builtinReply as decide, parseJson, startSpeechSimulatorServer, utteranceCutter, type SimulatorEngines, type SpeechSimulator } from './speech-simulator-server.ts';

/**
 * The OpenAI Realtime API, GA interface (https://platform.openai.com/docs/api-reference/realtime), over a
 * WebSocket at `/v1/realtime?model=…`, no more forgiving than OpenAI: `Authorization: Bearer <key>` on the upgrade
 * (401 otherwise), a model it serves, client events checked (an unknown one, a malformed one, a
 * `function_call_output` for no call, a `response.cancel` with no response under way, a truncation past the audio
 * sent are `error` events, as OpenAI's are). It speaks and hears telephone audio only (`audio/pcmu`).
 *
 * The model is the built-in LLM (docs/models.md#the-built-in-model), as the catalog's provider makes it, on the conversation's items: it hears with the
 * built-in STT (utterances cut by an energy detector, ending after `silence_duration_ms`), answers by the prompt
 * conventions (tool calls included), and speaks with the built-in TTS. A response whose instructions are
 * `Say exactly this, and nothing else: <text>` says `<text>`: the built-in model does not follow instructions, and a
 * real model would.
 */
const defaultSilenceMs = 500;
const minimumSilenceMs = 300;
/** 200 ms of telephone audio a delta, one every 20 ms: generated ahead of the call, as OpenAI's are. */
const chunkBytes = 1_600;
const chunkEveryMs = 20;
const sayPrefix = 'Say exactly this, and nothing else: ';
const tool = z.object({ type: z.literal('function'), name: z.string().min(1), description: z.string().optional(), parameters: z.record(z.string(), z.unknown()).optional() });
const pcmu = z.object({ type: z.literal('audio/pcmu') });
const sessionConfig = z.object({
  type: z.literal('realtime'),
  output_modalities: z.array(z.enum(['audio', 'text'])).optional(),
  instructions: z.string().optional(),
  tools: z.array(tool).optional(),
  tool_choice: z.string().optional(),
  audio: z
    .object({
      input: z
        .object({
          format: pcmu.optional(),
          transcription: z.object({ model: z.string(), language: z.string().optional() }).nullish(),
          turn_detection: z
            .object({ type: z.literal('server_vad'), silence_duration_ms: z.number().int().positive().optional(), create_response: z.boolean().optional(), interrupt_response: z.boolean().optional() })
            .nullish(),
        })
        .optional(),
      output: z.object({ format: pcmu.optional(), voice: z.string().optional() }).optional(),
    })
    .optional(),
});
const clientEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('session.update'), session: sessionConfig }),
  z.object({ type: z.literal('input_audio_buffer.append'), audio: z.base64() }),
  z.object({ type: z.literal('conversation.item.create'), item: z.object({ type: z.literal('function_call_output'), call_id: z.string(), output: z.string() }) }),
  z.object({ type: z.literal('response.create'), response: z.object({ instructions: z.string().optional() }).optional() }),
  z.object({ type: z.literal('response.cancel'), response_id: z.string().optional() }),
  z.object({ type: z.literal('conversation.item.truncate'), item_id: z.string(), content_index: z.number().int().min(0), audio_end_ms: z.number().int().min(0) }),
]);

type Item =
  | { type: 'message'; id: string; role: 'user' | 'assistant'; text: string; audioBytes: number }
  | { type: 'function_call'; id: string; callId: string; name: string; arguments: string }
  | { type: 'function_call_output'; id: string; callId: string; output: string };

export interface OpenAIRealtimeSimulator extends SpeechSimulator {
  /** Sessions opened and not yet closed. */
  readonly openSessions: number;
  /** The client events received, in order, across sessions (audio appends counted, not kept). */
  readonly clientEvents: { type: string; [key: string]: unknown }[];
}

export async function startOpenAIRealtimeSimulator(options: { engines: SimulatorEngines; apiKey?: string | undefined; models: readonly string[]; port?: number | undefined }): Promise<OpenAIRealtimeSimulator> {
  const apiKey = options.apiKey ?? 'local-openai-key';
  const base = await startSpeechSimulatorServer({ apiKey, port: options.port }, async ({ response, record }) => {
    record(426, undefined);
    response.writeHead(426, { 'content-type': 'text/plain' });
    response.end('Upgrade Required');
  });
  const sockets = new WebSocketServer({ noServer: true });
  const clientEvents: { type: string; [key: string]: unknown }[] = [];
  let openSessions = 0;
  base.server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(request.url ?? '/', 'http://local');
    const refuse = (status: number, code: string, message: string) => {
      base.requests.push({ method: 'GET', path: request.url ?? '/', headers: request.headers, body: undefined, status });
      const body = JSON.stringify({ error: { message, type: 'invalid_request_error', code, param: null } });
      socket.end(`HTTP/1.1 ${status} ${status === 401 ? 'Unauthorized' : 'Not Found'}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
    };
    if (url.pathname !== '/v1/realtime') return refuse(404, 'not_found', `Invalid URL (GET ${url.pathname})`);
    if (request.headers.authorization !== `Bearer ${apiKey}`) return refuse(401, 'invalid_api_key', 'Incorrect API key provided.');
    const model = url.searchParams.get('model') ?? '';
    if (!options.models.includes(model)) return refuse(404, 'model_not_found', `The model '${model}' does not exist or you do not have access to it.`);
    base.requests.push({ method: 'GET', path: request.url ?? '/', headers: request.headers, body: undefined, status: 101 });
    sockets.handleUpgrade(request, socket, head, (channel) => {
      openSessions += 1;
      channel.once('close', () => (openSessions -= 1));
      converse(channel, model, options.engines, clientEvents);
    });
  });
  const stopServer = base.stop;
  base.stop = async () => {
    for (const client of sockets.clients) client.terminate();
    await stopServer();
  };
  Object.defineProperty(base, 'clientEvents', { value: clientEvents });
  return Object.defineProperty(base, 'openSessions', { get: () => openSessions }) as typeof base & OpenAIRealtimeSimulator;
}

function converse(channel: WebSocket, model: string, engines: SimulatorEngines, clientEvents: { type: string }[]): void {
  const id = (prefix: string) => `${prefix}_${randomUUID().replaceAll('-', '').slice(0, 21)}`;
  const send = (event: Record<string, unknown>) => {
    if (channel.readyState === channel.OPEN) channel.send(JSON.stringify({ event_id: id('event'), ...event }));
  };
  const error = (code: string, message: string, eventId?: unknown) =>
    send({ type: 'error', error: { type: 'invalid_request_error', code, message, param: null, event_id: typeof eventId === 'string' ? eventId : null } });

  const sessionId = id('sess');
  let session: z.infer<typeof sessionConfig> = { type: 'realtime' };
  const items: Item[] = [];
  let active: { id: string; cancelled: boolean } | undefined;
  // Responses run one after another, as the conversation's items are in order.
  let queue = Promise.resolve();
  const voice = () => session.audio?.output?.voice ?? 'marin';
  const turnDetection = () => (session.audio?.input?.turn_detection === null ? undefined : (session.audio?.input?.turn_detection ?? { type: 'server_vad' as const }));

  let cutter = makeCutter();
  function makeCutter() {
    return utteranceCutter({
      endpointingMs: Math.max(turnDetection()?.silence_duration_ms ?? defaultSilenceMs, minimumSilenceMs),
      onSpeechStarted: (atByte) => {
        const itemId = id('item');
        send({ type: 'input_audio_buffer.speech_started', audio_start_ms: Math.round(atByte / 8), item_id: itemId });
        if (active && turnDetection()?.interrupt_response !== false) active.cancelled = true;
      },
      onUtterance: (audio, startByte) => heard(audio, startByte),
    });
  }

  function heard(audio: Uint8Array, startByte: number) {
    const item: Item = { type: 'message', id: id('item'), role: 'user', text: '', audioBytes: audio.length };
    send({ type: 'input_audio_buffer.speech_stopped', audio_end_ms: Math.round((startByte + audio.length) / 8), item_id: item.id });
    send({ type: 'input_audio_buffer.committed', previous_item_id: items.at(-1)?.id ?? null, item_id: item.id });
    items.push(item);
    send({ type: 'conversation.item.added', previous_item_id: null, item: { id: item.id, type: 'message', status: 'completed', role: 'user', content: [{ type: 'input_audio', transcript: null }] } });
    const transcribing = engines.recognise(audio).catch(() => '');
    queue = queue.then(async () => {
      item.text = (await transcribing).trim();
      if (session.audio?.input?.transcription) {
        send({ type: 'conversation.item.input_audio_transcription.completed', item_id: item.id, content_index: 0, transcript: item.text, usage: { type: 'duration', seconds: audio.length / 8000 } });
      }
      if (turnDetection()?.create_response !== false) await respond(undefined);
    });
  }

  async function respond(instructions: string | undefined) {
    const response = { id: id('resp'), cancelled: false };
    active = response;
    const output: Record<string, unknown>[] = [];
    send({ type: 'response.created', response: { object: 'realtime.response', id: response.id, status: 'in_progress', status_details: null, output: [], output_modalities: ['audio'], usage: null, metadata: null } });
    const prompt = promptOf(instructions ?? session.instructions ?? '');
    const reply = instructions?.startsWith(sayPrefix) ? { text: instructions.slice(sayPrefix.length) } : await decide(prompt, toolsOf(session.tools ?? []));
    if (reply.text) {
      const item: Item = { type: 'message', id: id('item'), role: 'assistant', text: reply.text, audioBytes: 0 };
      items.push(item);
      const where = { response_id: response.id, item_id: item.id, output_index: output.length, content_index: 0 };
      send({ type: 'response.output_item.added', response_id: response.id, output_index: output.length, item: { id: item.id, object: 'realtime.item', type: 'message', status: 'in_progress', role: 'assistant', content: [] } });
      send({ type: 'response.content_part.added', ...where, part: { type: 'output_audio', transcript: '' } });
      for (const word of reply.text.split(/(?=\s)/)) send({ type: 'response.output_audio_transcript.delta', ...where, delta: word });
      const audio = await engines.speak(reply.text, { provider: 'openai-compatible', voiceId: voice(), language: 'en-US' });
      for (let offset = 0; offset < audio.length && !response.cancelled; offset += chunkBytes) {
        if (offset > 0) await delay(chunkEveryMs);
        if (response.cancelled) break;
        const chunk = audio.subarray(offset, offset + chunkBytes);
        item.audioBytes += chunk.length;
        send({ type: 'response.output_audio.delta', ...where, delta: Buffer.from(chunk).toString('base64') });
      }
      send({ type: 'response.output_audio.done', ...where });
      send({ type: 'response.output_audio_transcript.done', ...where, transcript: item.text });
      const done = { id: item.id, object: 'realtime.item', type: 'message', status: response.cancelled ? 'incomplete' : 'completed', role: 'assistant', content: [{ type: 'output_audio', transcript: item.text }] };
      send({ type: 'response.content_part.done', ...where, part: done.content[0] });
      send({ type: 'response.output_item.done', response_id: response.id, output_index: output.length, item: done });
      output.push(done);
    }
    if (reply.toolCall && !response.cancelled) {
      const item: Item = { type: 'function_call', id: id('item'), callId: reply.toolCall.toolCallId, name: reply.toolCall.toolName, arguments: reply.toolCall.input };
      items.push(item);
      const call = { id: item.id, object: 'realtime.item', type: 'function_call', status: 'completed', name: item.name, call_id: item.callId, arguments: item.arguments };
      send({ type: 'response.output_item.added', response_id: response.id, output_index: output.length, item: { ...call, status: 'in_progress', arguments: '' } });
      send({ type: 'response.function_call_arguments.delta', response_id: response.id, item_id: item.id, output_index: output.length, call_id: item.callId, delta: item.arguments });
      send({ type: 'response.function_call_arguments.done', response_id: response.id, item_id: item.id, output_index: output.length, call_id: item.callId, arguments: item.arguments });
      send({ type: 'response.output_item.done', response_id: response.id, output_index: output.length, item: call });
      output.push(call);
    }
    if (active === response) active = undefined;
    send({
      type: 'response.done',
      response: {
        object: 'realtime.response',
        id: response.id,
        status: response.cancelled ? 'cancelled' : 'completed',
        status_details: response.cancelled ? { type: 'cancelled', reason: 'client_cancelled' } : null,
        output,
        output_modalities: ['audio'],
        usage: usageOf(prompt, reply),
        metadata: null,
      },
    });
  }

  /** A response's tokens as `response.done` reports them: a token a word, as the built-in model counts. */
  function usageOf(prompt: LanguageModelV4Prompt, reply: { text: string; toolCall?: { input: string } }) {
    const words = (text: string) => text.split(/\s+/).filter(Boolean).length;
    const input = prompt.reduce((sum, message) => sum + words(typeof message.content === 'string' ? message.content : JSON.stringify(message.content)), 0);
    const output = words(reply.text) + (reply.toolCall ? words(reply.toolCall.input) : 0);
    return { total_tokens: input + output, input_tokens: input, output_tokens: output };
  }

  function promptOf(instructions: string): LanguageModelV4Prompt {
    const prompt: LanguageModelV4Prompt = instructions ? [{ role: 'system', content: instructions }] : [];
    for (const item of items) {
      let message: LanguageModelV4Message;
      if (item.type === 'message') message = item.role === 'user' ? { role: 'user', content: [{ type: 'text', text: item.text }] } : { role: 'assistant', content: [{ type: 'text', text: item.text }] };
      else if (item.type === 'function_call') message = { role: 'assistant', content: [{ type: 'tool-call', toolCallId: item.callId, toolName: item.name, input: JSON.parse(item.arguments) as unknown }] };
      else {
        const name = items.find((call) => call.type === 'function_call' && call.callId === item.callId);
        message = { role: 'tool', content: [{ type: 'tool-result', toolCallId: item.callId, toolName: name?.type === 'function_call' ? name.name : '', output: { type: 'text', value: item.output } }] };
      }
      prompt.push(message);
    }
    return prompt;
  }

  channel.on('message', (data: Buffer, isBinary) => {
    const raw = isBinary ? undefined : parseJson(data);
    const parsed = clientEvent.safeParse(raw);
    const eventId = (raw as { event_id?: unknown } | undefined)?.event_id;
    if (!parsed.success) {
      const type = (raw as { type?: unknown } | undefined)?.type;
      clientEvents.push({ type: typeof type === 'string' ? type : 'invalid' });
      return error(typeof type === 'string' ? 'invalid_value' : 'invalid_event', typeof type === 'string' ? `Invalid '${type}' event: ${parsed.error.issues[0]?.message ?? 'invalid'}` : "The 'type' field is missing.", eventId);
    }
    const event = parsed.data;
    clientEvents.push(event.type === 'input_audio_buffer.append' ? { type: event.type } : (event as { type: string }));
    switch (event.type) {
      case 'session.update':
        session = { ...session, ...event.session };
        cutter = makeCutter();
        return send({ type: 'session.updated', session: { ...session, object: 'realtime.session', id: sessionId, model } });
      case 'input_audio_buffer.append':
        return cutter.push(Buffer.from(event.audio, 'base64'));
      case 'conversation.item.create': {
        if (!items.some((item) => item.type === 'function_call' && item.callId === event.item.call_id)) return error('invalid_value', `Tool call ID '${event.item.call_id}' not found in conversation.`, eventId);
        const item: Item = { type: 'function_call_output', id: id('item'), callId: event.item.call_id, output: event.item.output };
        items.push(item);
        return send({ type: 'conversation.item.added', previous_item_id: null, item: { id: item.id, type: 'function_call_output', call_id: item.callId, output: item.output } });
      }
      case 'response.create':
        queue = queue.then(() => respond(event.response?.instructions));
        return;
      case 'response.cancel':
        if (!active || (event.response_id && event.response_id !== active.id)) return error('response_cancel_not_active', 'Cancellation failed: no active response found.', eventId);
        active.cancelled = true;
        return;
      case 'conversation.item.truncate': {
        const item = items.find((known) => known.id === event.item_id);
        if (!item || item.type !== 'message' || item.role !== 'assistant') return error('invalid_value', `Conversation item '${event.item_id}' is not an assistant audio message.`, eventId);
        if (event.audio_end_ms > item.audioBytes / 8) return error('invalid_value', `Audio content of ${Math.floor(item.audioBytes / 8)}ms is shorter than ${event.audio_end_ms}ms.`, eventId);
        // What was heard is what the model remembers: the words in the share of the audio played.
        const words = item.text.split(/\s+/);
        item.text = words.slice(0, Math.round((words.length * event.audio_end_ms * 8) / Math.max(item.audioBytes, 1))).join(' ');
        item.audioBytes = event.audio_end_ms * 8;
        return send({ type: 'conversation.item.truncated', item_id: item.id, content_index: event.content_index, audio_end_ms: event.audio_end_ms });
      }
    }
  });
  send({ type: 'session.created', session: { type: 'realtime', object: 'realtime.session', id: sessionId, model, output_modalities: ['audio'], instructions: '', tools: [], tool_choice: 'auto' } });
}

function toolsOf(tools: readonly z.infer<typeof tool>[]): LanguageModelV4FunctionTool[] {
  return tools.map((known) => ({ type: 'function', name: known.name, description: known.description, inputSchema: (known.parameters ?? { type: 'object' }) as LanguageModelV4FunctionTool['inputSchema'] }));
}
