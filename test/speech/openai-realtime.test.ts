/**
 * The OpenAI Realtime adapter against the events OpenAI documents (test/fixtures/openai-realtime/): what it writes,
 * what it reads.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { openAIRealtimeSpeechToSpeech, realtimeUrl } from '../../shared/speech/openai-realtime.ts';
import type { SpeechToSpeechEvent, SpeechToSpeechOptions } from '../../shared/speech/ports.ts';
import * as docs from '../fixtures/openai-realtime/documented-examples.ts';
import { eventually } from '../support/eventually.ts';

type ClientEvent = Record<string, unknown> & { type: string };

const options: SpeechToSpeechOptions = {
  model: 'gpt-realtime',
  instructions: docs.sessionUpdate.session.instructions,
  voiceId: 'marin',
  language: 'en-US',
  tools: docs.sessionUpdate.session.tools.map(({ name, description, parameters }) => ({ name, description, parameters })),
};

async function until(events: AsyncIterator<SpeechToSpeechEvent>, count: number): Promise<SpeechToSpeechEvent[]> {
  const seen: SpeechToSpeechEvent[] = [];
  while (seen.length < count) {
    const next = await events.next();
    if (next.done) break;
    seen.push(next.value);
  }
  return seen;
}

/** The keys of a documented example, recursively: what our event must carry, at least. */
function shape(value: unknown): unknown {
  if (Array.isArray(value)) return value.length ? [shape(value[0])] : [];
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).filter(([key]) => key !== 'event_id').map(([key, item]) => [key, shape(item)]));
  return typeof value;
}

describe('the OpenAI Realtime adapter, given what OpenAI documents', () => {
  let server: ReturnType<typeof createServer>;
  let sockets: WebSocketServer;
  let url: string;
  const received: { url: string; authorization: string | undefined; events: ClientEvent[] }[] = [];
  let script: (socket: WebSocket, events: ClientEvent[]) => void = () => undefined;

  beforeAll(async () => {
    server = createServer();
    sockets = new WebSocketServer({ server });
    sockets.on('connection', (socket, request) => {
      const record = { url: request.url ?? '', authorization: request.headers.authorization, events: [] as ClientEvent[] };
      received.push(record);
      socket.on('message', (data: Buffer) => record.events.push(JSON.parse(data.toString('utf8')) as ClientEvent));
      script(socket, record.events);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });
  afterAll(async () => {
    for (const client of sockets.clients) client.terminate();
    await new Promise((resolve) => server.close(resolve));
  });

  it('opens <url>/realtime?model= with the Bearer key, and configures the session as session.update documents, in telephone audio', async () => {
    expect(realtimeUrl('https://api.openai.com/v1/', 'gpt-realtime')).toBe('wss://api.openai.com/v1/realtime?model=gpt-realtime');
    script = () => undefined;
    const session = openAIRealtimeSpeechToSpeech({ url, apiKey: 'sk-test' }).open(options);
    session.write(new Uint8Array(160).fill(0xff));
    await eventually(() => received.at(-1)?.events.length ?? 0, (count) => count >= 2);
    const { url: path, authorization, events } = received.at(-1)!;
    expect(path).toBe('/v1/realtime?model=gpt-realtime');
    expect(authorization).toBe('Bearer sk-test');
    const [update, append] = events as [ClientEvent & { session: Record<string, unknown> }, ClientEvent];
    expect(shape(update)).toMatchObject(shape(docs.sessionUpdate) as object);
    expect(update.session).toMatchObject({
      instructions: options.instructions,
      tools: docs.sessionUpdate.session.tools,
      audio: {
        input: { format: { type: 'audio/pcmu' }, transcription: { language: 'en' }, turn_detection: { type: 'server_vad' } },
        output: { format: { type: 'audio/pcmu' }, voice: 'marin' },
      },
    });
    expect(shape(append)).toEqual(shape(docs.inputAudioBufferAppend));
    expect(Buffer.from(append.audio as string, 'base64')).toEqual(Buffer.alloc(160, 0xff));
    session.close();
  });

  it('reads the documented server events as speech started, both transcripts, audio, a tool call and the response done', async () => {
    const audio = Buffer.from([1, 2, 3, 4, 5, 6, 7, 8]);
    const functionCallItem = { ...docs.outputItemAdded, item: { id: 'fc_001', type: 'function_call', status: 'in_progress', name: 'display_color_palette', call_id: 'call_001', arguments: '' } };
    script = (socket) => {
      socket.once('message', () => {
        for (const event of [
          docs.speechStarted,
          docs.speechStopped,
          docs.inputTranscriptionCompleted,
          docs.responseCreated,
          docs.outputItemAdded,
          docs.outputAudioTranscriptDelta,
          { ...docs.outputAudioDelta, delta: audio.toString('base64') },
          docs.outputAudioTranscriptDone,
          functionCallItem,
          docs.functionCallArgumentsDone,
          docs.responseDone,
        ]) {
          socket.send(JSON.stringify(event));
        }
      });
    };
    const session = openAIRealtimeSpeechToSpeech({ url }).open(options);
    const events = await until(session.events[Symbol.asyncIterator](), 8);
    expect(events).toEqual([
      { type: 'speech-started' },
      { type: 'user-transcript', text: 'Hey, can you hear me?' },
      { type: 'assistant-transcript', text: 'Hello, how can I a', final: false },
      { type: 'audio', audio: new Uint8Array(audio) },
      { type: 'assistant-transcript', text: 'Hello, how can I assist you today?', final: true },
      { type: 'tool-call', callId: 'call_001', name: 'display_color_palette', arguments: '{"location": "San Francisco"}' },
      // The response's tokens, as `response.done` counts them.
      { type: 'usage', inputTokens: 132, outputTokens: 121 },
      { type: 'response-done' },
    ]);
    expect(received.at(-1)!.authorization).toBeUndefined();
    session.close();
  });

  it('hands a tool output back as a function_call_output item, then asks for the response', async () => {
    script = (socket) => {
      socket.once('message', () => {
        socket.send(JSON.stringify({ ...docs.outputItemAdded, item: { id: 'fc_001', type: 'function_call', name: 'display_color_palette', call_id: 'call_001' } }));
        socket.send(JSON.stringify(docs.functionCallArgumentsDone));
        socket.send(JSON.stringify(docs.responseDone));
      });
    };
    const session = openAIRealtimeSpeechToSpeech({ url }).open(options);
    const events = await until(session.events[Symbol.asyncIterator](), 3);
    expect(events.map((event) => event.type)).toEqual(['tool-call', 'usage', 'response-done']);
    session.toolResult('call_001', docs.functionCallOutput.item.output);
    expect(await eventually(() => received.at(-1)!.events.map((event) => event.type), (types) => types.length >= 3)).toEqual(['session.update', 'conversation.item.create', 'response.create']);
    const [, output, create] = received.at(-1)!.events;
    expect(output).toEqual(docs.functionCallOutput);
    expect(create).toEqual({ type: 'response.create' });
    session.close();
  });

  it('interrupts as documented: the response cancelled, the item truncated to what was played (never past what arrived)', async () => {
    script = (socket) => {
      socket.once('message', () => {
        socket.send(JSON.stringify({ ...docs.responseCreated, response: { ...docs.responseCreated.response, id: 'resp_12345' } }));
        // 400 ms of telephone audio arrived.
        socket.send(JSON.stringify({ ...docs.outputAudioDelta, item_id: 'msg_002', delta: Buffer.alloc(3_200, 0xff).toString('base64') }));
      });
    };
    const session = openAIRealtimeSpeechToSpeech({ url }).open(options);
    await until(session.events[Symbol.asyncIterator](), 1);
    session.interrupt(250.4);
    session.say('Welcome to Acme.');
    await eventually(() => received.at(-1)!.events.length, (count) => count >= 4);
    const [, cancel, truncate, say] = received.at(-1)!.events;
    expect(cancel).toEqual(docs.responseCancel);
    expect(truncate).toEqual({ ...docs.conversationItemTruncate, event_id: undefined, audio_end_ms: 250 });
    expect(shape(say)).toEqual(shape(docs.responseCreate));
    expect(say).toMatchObject({ response: { instructions: expect.stringContaining('Welcome to Acme.') } });
    session.close();

    const clamped = openAIRealtimeSpeechToSpeech({ url }).open(options);
    await until(clamped.events[Symbol.asyncIterator](), 1);
    clamped.interrupt(9_000);
    await eventually(() => received.at(-1)!.events.length, (count) => count >= 3);
    expect(received.at(-1)!.events[2]).toMatchObject({ type: 'conversation.item.truncate', audio_end_ms: 400 });
    clamped.close();
  });

  it('ends with an error on the documented error event, and on a refused upgrade', async () => {
    script = (socket) => socket.once('message', () => socket.send(JSON.stringify(docs.error)));
    const session = openAIRealtimeSpeechToSpeech({ url }).open(options);
    const events: SpeechToSpeechEvent[] = [];
    for await (const event of session.events) events.push(event);
    expect(events).toEqual([{ type: 'error', message: "openai-realtime: invalid_event: The 'type' field is missing." }]);

    const refused = openAIRealtimeSpeechToSpeech({ url: url.replace('/v1', '/nowhere') }).open(options);
    const failures: SpeechToSpeechEvent[] = [];
    for await (const event of refused.events) failures.push(event);
    expect(failures).toEqual([expect.objectContaining({ type: 'error' })]);
  });
});
