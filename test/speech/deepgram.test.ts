/**
 * The Deepgram adapter against Deepgram's documented messages (test/fixtures/deepgram/) and against the Deepgram
 * simulator; the simulator's checks of the upgrade.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { startDeepgramSimulator, type DeepgramSimulator } from '../../infra/local/deepgram-simulator.ts';
import { deepgramSpeechToText } from '../../shared/speech/deepgram.ts';
import type { TranscriptEvent } from '../../shared/speech/ports.ts';
import * as docs from '../fixtures/deepgram/documented-examples.ts';
import { eventually } from '../support/eventually.ts';
import { protocolEngines } from '../support/speech.ts';

async function all(events: AsyncIterable<TranscriptEvent>): Promise<TranscriptEvent[]> {
  const seen: TranscriptEvent[] = [];
  for await (const event of events) seen.push(event);
  return seen;
}

/** Loud audio (μ-law 0x00 is the largest amplitude) and silence (0xFF is zero), in ms of telephone audio. */
const speech = (ms: number) => new Uint8Array(ms * 8).fill(0x00);
const silence = (ms: number) => new Uint8Array(ms * 8).fill(0xff);

describe('the Deepgram adapter, given what Deepgram documents', () => {
  let server: ReturnType<typeof createServer>;
  let sockets: WebSocketServer;
  let url: string;
  const received: { url: string; authorization: string | undefined; messages: (string | number)[] }[] = [];
  let script: (socket: WebSocket) => void = () => undefined;

  beforeAll(async () => {
    server = createServer();
    sockets = new WebSocketServer({ server });
    sockets.on('connection', (socket, request) => {
      const record = { url: request.url ?? '', authorization: request.headers.authorization, messages: [] as (string | number)[] };
      received.push(record);
      socket.on('message', (data: Buffer, isBinary) => record.messages.push(isBinary ? data.length : data.toString('utf8')));
      script(socket);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    for (const client of sockets.clients) client.terminate();
    await new Promise((resolve) => server.close(resolve));
  });

  it('opens /v1/listen with the documented parameters and key, and reads SpeechStarted, interim and final Results', async () => {
    script = (socket) => {
      socket.once('message', () => {
        for (const message of [docs.speechStarted, docs.interimResults, docs.speechFinalResults]) socket.send(JSON.stringify(message));
        socket.close(1000);
      });
    };
    const stream = deepgramSpeechToText({ apiUrl: url, apiKey: 'dg-key' }).open({ language: 'en-US', model: 'nova-3', endpointingMs: 300 });
    stream.write(speech(20));

    const events = await all(stream.events);

    const opened = new URL(received.at(-1)!.url, 'ws://local');
    expect([...opened.searchParams.keys()].sort()).toEqual([...docs.listenParameters].sort());
    expect(Object.fromEntries(opened.searchParams)).toMatchObject({ model: 'nova-3', language: 'en-US', encoding: 'mulaw', sample_rate: '8000', channels: '1', interim_results: 'true', vad_events: 'true', endpointing: '300' });
    expect(received.at(-1)!.authorization).toBe('Token dg-key');
    expect(received.at(-1)!.messages).toEqual([160]);
    expect(events).toEqual([
      { type: 'speech-started', atMs: 9540 },
      { type: 'partial', text: 'another' },
      { type: 'final', text: 'another big', endOfTurn: true, startMs: 3400, endMs: 4420 },
    ]);
  });

  it("sends Finalize and CloseStream as documented; a Finalize's result ends the turn", async () => {
    script = (socket) => {
      socket.on('message', (data: Buffer, isBinary) => {
        if (isBinary) return;
        const { type } = JSON.parse(data.toString('utf8')) as { type: string };
        if (type === 'Finalize') socket.send(JSON.stringify(docs.finalizeResults));
        if (type === 'CloseStream') socket.close(1000);
      });
    };
    const stream = deepgramSpeechToText({ apiUrl: url, apiKey: 'dg-key' }).open({ language: 'en-US' });
    stream.write(speech(20));
    stream.finalize();
    stream.end();

    const events = await all(stream.events);

    expect(received.at(-1)!.messages).toEqual([160, JSON.stringify(docs.controlMessages.finalize), JSON.stringify(docs.controlMessages.closeStream)]);
    expect(events).toEqual([{ type: 'final', text: 'deal', endOfTurn: true, startMs: 4420, endMs: 5020 }]);
  });

  it('reports a connection Deepgram drops as an error, and its events end', async () => {
    script = (socket) => socket.close(1011, 'NET-0001');
    const stream = deepgramSpeechToText({ apiUrl: url, apiKey: 'dg-key' }).open({ language: 'en-US' });

    const events = await all(stream.events);

    expect(events).toEqual([{ type: 'error', message: expect.stringContaining('1011') }]);
  });
});

describe('the Deepgram adapter against the simulator', () => {
  let simulator: DeepgramSimulator;
  const engines = protocolEngines('what time is it');
  beforeAll(async () => {
    simulator = await startDeepgramSimulator({ engines, models: ['nova-3'] });
  });
  afterAll(() => simulator.stop());

  it('hears an utterance: SpeechStarted, then a final that ends the turn after the endpointing silence', async () => {
    const stream = deepgramSpeechToText({ apiUrl: simulator.url, apiKey: simulator.apiKey }).open({ language: 'en-US', endpointingMs: 400 });
    stream.write(silence(200));
    stream.write(speech(600));
    stream.write(silence(500));
    stream.end();

    const events = await all(stream.events);

    expect(events).toEqual([
      { type: 'speech-started', atMs: 200 },
      { type: 'final', text: 'what time is it', endOfTurn: true, startMs: 0, endMs: 1200 },
    ]);
    // What it recognised is the utterance, with the silence before it that it keeps (up to 300 ms), to the end of
    // the endpointing silence.
    expect(engines.recognised.at(-1)?.length).toBe((200 + 600 + 400) * 8);
  });

  it('answers a Finalize with what it buffered, as the end of the turn', async () => {
    const stream = deepgramSpeechToText({ apiUrl: simulator.url, apiKey: simulator.apiKey }).open({ language: 'en-US', endpointingMs: 2000 });
    stream.write(speech(400));
    stream.finalize();
    stream.end();

    const events = await all(stream.events);

    expect(events).toContainEqual({ type: 'final', text: 'what time is it', endOfTurn: true, startMs: 0, endMs: 400 });
  });

  it('refuses a wrong key on the upgrade (401), and the adapter reports it', async () => {
    const stream = deepgramSpeechToText({ apiUrl: simulator.url, apiKey: 'wrong-key' }).open({ language: 'en-US' });

    const events = await all(stream.events);

    expect(events).toEqual([{ type: 'error', message: expect.stringMatching(/HTTP 401.*INVALID_AUTH/) }]);
  });

  it('refuses a model it does not know and a parameter Deepgram does not have (400)', async () => {
    const unknownModel = await all(deepgramSpeechToText({ apiUrl: simulator.url, apiKey: simulator.apiKey }).open({ language: 'en-US', model: 'nova-9' }).events);
    const status = await new Promise<number>((resolve) => {
      const socket = new WebSocket(`${simulator.url}/v1/listen?model=nova-3&encoding=mulaw&sample_rate=8000&frobnicate=1`, { headers: { authorization: `Token ${simulator.apiKey}` } });
      socket.on('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0));
      socket.on('open', () => resolve(101));
      socket.on('error', () => undefined);
    });

    expect(unknownModel).toEqual([{ type: 'error', message: expect.stringContaining('HTTP 400') }]);
    expect(status).toBe(400);
  });

  it('closes the stream when the adapter is closed, and after an abort', async () => {
    const aborter = new AbortController();
    const adapter = deepgramSpeechToText({ apiUrl: simulator.url, apiKey: simulator.apiKey });
    const closed = adapter.open({ language: 'en-US' });
    const aborted = adapter.open({ language: 'en-US', signal: aborter.signal });
    closed.write(speech(20));
    aborted.write(speech(20));
    expect(await eventually(async () => simulator.openStreams, (open) => open === 2)).toBe(2);

    closed.close();
    aborter.abort();

    expect(await all(closed.events)).toEqual([]);
    expect(await all(aborted.events)).toEqual([]);
    expect(await eventually(async () => simulator.openStreams, (open) => open === 0)).toBe(0);
  });
});
