/**
 * The Amazon Transcribe streaming adapter against its simulator (HTTP/2, AWS event streams), and what the adapter
 * makes of Transcribe's segments: its own end of turn (decision 453).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SpeechSimulator } from '../../infra/local/speech-simulator-server.ts';
import { startTranscribeSimulator } from '../../infra/local/transcribe-simulator.ts';
import type { TranscriptEvent } from '../../shared/speech/ports.ts';
import { transcribeSpeechToText } from '../../shared/speech/transcribe.ts';
import * as docs from '../fixtures/transcribe/documented-examples.ts';
import { eventually } from '../support/eventually.ts';
import { protocolEngines } from '../support/speech.ts';

const engines = protocolEngines('where is my order');
let simulator: SpeechSimulator;
beforeAll(async () => {
  simulator = await startTranscribeSimulator({ engines });
});
afterAll(() => simulator.stop());

const speech = (ms: number) => new Uint8Array(ms * 8).fill(0x00);
const silence = (ms: number) => new Uint8Array(ms * 8).fill(0xff);
const adapter = () => transcribeSpeechToText({ region: 'us-east-1', endpoint: simulator.url });

async function collectEvents(events: AsyncIterable<TranscriptEvent>, seen: TranscriptEvent[] = []): Promise<TranscriptEvent[]> {
  for await (const event of events) seen.push(event);
  return seen;
}

describe('the Transcribe adapter against its simulator', () => {
  it('sends the documented settings and PCM, and reports a segment Transcribe completed as the end of the turn once the endpointing audio followed it', async () => {
    const stream = adapter().open({ language: 'en-US', endpointingMs: 400 });
    stream.write(silence(200));
    stream.write(speech(600));
    stream.write(silence(900));
    stream.end();

    const events = await collectEvents(stream.events);

    expect(events).toEqual([
      { type: 'speech-started', atMs: 0 },
      { type: 'partial', text: 'where is my order' },
      { type: 'final', text: 'where is my order', endOfTurn: true, startMs: 0, endMs: 800 },
    ]);
    const sent = simulator.requests.at(-1)!;
    expect(sent).toMatchObject({ method: 'POST', path: '/stream-transcription', status: 200 });
    for (const name of docs.requestHeaders) expect(sent.headers[name], name).toBeDefined();
    expect(sent.headers).toMatchObject({ 'x-amzn-transcribe-language-code': 'en-US', 'x-amzn-transcribe-media-encoding': 'pcm', 'x-amzn-transcribe-sample-rate': '8000', 'x-amzn-transcribe-enable-partial-results-stabilization': 'true' });
    expect(sent.headers.authorization).toMatch(/\/transcribe\/aws4_request/);
  });

  it('ends the turn at finalize(), without waiting for the endpointing audio', async () => {
    const stream = adapter().open({ language: 'en-US', endpointingMs: 5_000 });
    const events: TranscriptEvent[] = [];
    const reading = collectEvents(stream.events, events);
    stream.write(speech(600));
    stream.write(silence(600));
    await eventually(async () => events.length, (count) => count >= 2);

    stream.finalize();

    await eventually(async () => events.length, (count) => count >= 3);
    expect(events.at(-1)).toEqual({ type: 'final', text: 'where is my order', endOfTurn: true, startMs: 0, endMs: 600 });
    stream.close();
    await reading;
  });

  it("reports Transcribe's refusal of a language it does not stream as the stream's error", async () => {
    const events = await collectEvents(adapter().open({ language: 'xx-XX' }).events);

    expect(events).toEqual([{ type: 'error', message: expect.stringContaining('BadRequestException') }]);
    expect(simulator.requests.at(-1)?.status).toBe(400);
  });
});
