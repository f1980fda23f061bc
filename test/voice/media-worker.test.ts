/**
 * The media worker against Twilio's documented Media Streams messages (test/fixtures/twilio/), driven by hand as
 * Twilio would: the upgrade's signature, the single-use token at `start`, the agent's reply as `media` and `mark`,
 * a barge-in's `clear` and the transcript cut to what was played. Its speech is a scripted pair of ports here (the
 * test says what the recogniser heard; each character synthesized is 1 ms of audio), so that each step is the
 * test's to decide; test/voice/media-stream-call.test.ts runs whole calls with the built-in engines.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { SpeechToText, TranscriptEvent, TranscriptionOptions, TranscriptionStream } from '../../shared/speech/ports.ts';
import { createMediaWorker, type MediaWorker } from '../../shared/voice/media-worker.ts';
import type { CallSpeech } from '../../shared/voice/ports.ts';
import { twilioSignature } from '../../shared/voice/twilio-signature.ts';
import { mediaWorkerRuntime } from '../../shared/voice/voice-runtime.ts';
import streamMessages from '../fixtures/twilio/media-streams-messages.json' with { type: 'json' };
import { eventually } from '../support/eventually.ts';
import { postAsTwilio, voiceOrg, voiceTestApi, type VoiceOrg } from '../support/voice.ts';

const suite = voiceTestApi();
const { receiver } = suite;
const { fromTwilio, toTwilio } = streamMessages;

/** A recogniser whose events the test emits. */
class ScriptedStream implements TranscriptionStream {
  written = 0;
  /** What `finalize()` reports: the words heard since the last final, as a provider's `Finalize` does. */
  finalizeWith = '';
  readonly options: TranscriptionOptions;
  constructor(options: TranscriptionOptions) {
    this.options = options;
  }
  private queue: TranscriptEvent[] = [];
  private wake: (() => void) | undefined;
  ended = false;
  write(audio: Uint8Array): void {
    this.written += audio.length;
  }
  finalize(): void {
    this.emit({ type: 'final', text: this.finalizeWith, endOfTurn: true, startMs: 0, endMs: 0 });
  }
  end(): void {
    this.close();
  }
  close(): void {
    this.ended = true;
    this.wake?.();
  }
  emit(event: TranscriptEvent): void {
    this.queue.push(event);
    this.wake?.();
  }
  get events(): AsyncIterable<TranscriptEvent> {
    const stream = this;
    return {
      async *[Symbol.asyncIterator]() {
        for (;;) {
          const next = stream.queue.shift();
          if (next) yield next;
          else if (stream.ended) return;
          else await new Promise<void>((resolveNext) => (stream.wake = resolveNext));
        }
      },
    };
  }
}

const streams: ScriptedStream[] = [];
const scriptedStt: SpeechToText = {
  provider: 'scripted',
  open: (options) => {
    const stream = new ScriptedStream(options);
    streams.push(stream);
    return stream;
  },
};
const speech: CallSpeech = {
  speechToText: async () => ({ stt: scriptedStt }),
  // 8 bytes of μ-law a character: each character is 1 ms of audio.
  textToSpeech: async () => ({ tts: { provider: 'scripted', synthesize: async function* (text) { yield Buffer.alloc(text.length * 8, 0x55); } }, voiceId: 'scripted' }),
  voiceActivity: (silenceMs) => {
    detector.silenceMs = silenceMs;
    return { push: () => detector.next.shift() };
  },
  speechToSpeech: async () => undefined,
};
/** The voice activity detector of the last call that asked for one: its threshold, and what it says of the next frames. */
const detector: { silenceMs?: number; next: ('speech-started' | 'silence')[] } = { next: [] };

let worker: MediaWorker;
let workerPort = 0;
beforeAll(async () => {
  worker = createMediaWorker({ ...mediaWorkerRuntime(), speech });
  await new Promise<void>((resolveListen) => worker.server.listen(0, '127.0.0.1', resolveListen));
  workerPort = (worker.server.address() as AddressInfo).port;
});
afterAll(() => worker.close());

/** An agent whose calls take the media worker: a voice ConversationRelay does not speak with (the built-in one). */
const workerAgent = { voice: { provider: 'builtin', voiceId: 'en-us' } };

/** Twilio's voice webhook for a call to the organization's number: its session, and the `<Stream>` it was told to open. */
async function callIn(org: VoiceOrg): Promise<{ sessionId: string; streamUrl: string; token: string }> {
  const params = { CallSid: `CA${crypto.randomUUID().replace(/-/g, '')}`, From: '+15550142', To: org.phoneNumber, AccountSid: org.account.accountSid };
  const url = `${suite.api.baseUrl}/twilio/voice`;
  const twiml = await (await postAsTwilio(url, params, twilioSignature(org.account.authToken, url, params))).text();
  const streamUrl = /<Stream url="([^"]+)">/.exec(twiml)?.[1] as string;
  const token = /<Parameter name="token" value="([^"]+)"\/>/.exec(twiml)?.[1] as string;
  expect(streamUrl, twiml).toBeDefined();
  return { sessionId: streamUrl.split('/').at(-1) as string, streamUrl, token };
}

interface TwilioSide {
  socket: WebSocket;
  received: Record<string, unknown>[];
  send(message: object): void;
  status: Promise<number>;
}

/** Connects to the in-process worker as Twilio does to the `<Stream url>`, signed (or not) over that URL. */
function connect(streamUrl: string, signature: string | undefined): TwilioSide {
  const path = new URL(streamUrl).pathname;
  const socket = new WebSocket(`ws://127.0.0.1:${workerPort}${path}`, { headers: signature === undefined ? {} : { 'x-twilio-signature': signature } });
  const received: Record<string, unknown>[] = [];
  socket.on('message', (data) => received.push(JSON.parse(data.toString())));
  const status = new Promise<number>((resolveStatus) => {
    socket.once('open', () => resolveStatus(101));
    socket.once('unexpected-response', (_request, response) => resolveStatus(response.statusCode ?? 0));
    socket.once('error', () => resolveStatus(0));
  });
  return { socket, received, send: (message) => socket.send(JSON.stringify(message)), status };
}

/** Twilio's documented `start`, for this call: its stream and the `<Parameter>`s of the TwiML. */
function startOf(streamSid: string, token: string) {
  return { ...fromTwilio.start, streamSid, start: { ...fromTwilio.start.start, streamSid, customParameters: { token } } };
}

/** A call to the organization's number whose stream has started: Twilio's side, its stream, and the recogniser it opened. */
async function startedCall(org: VoiceOrg, streamSid: string): Promise<{ sessionId: string; twilio: TwilioSide; recogniser: ScriptedStream }> {
  const { sessionId, streamUrl, token } = await callIn(org);
  const twilio = connect(streamUrl, twilioSignature(org.account.authToken, streamUrl));
  await twilio.status;
  const before = streams.length;
  twilio.send(startOf(streamSid, token));
  const recogniser = (await eventually(() => streams[before], (stream) => stream !== undefined)) as ScriptedStream;
  return { sessionId, twilio, recogniser };
}

const messages = async (org: VoiceOrg, sessionId: string) => (await suite.api.request('GET', `/api/v1/chat/sessions/${sessionId}/messages?limit=50`, { key: org.key })).body.data;

const marksOf = (side: TwilioSide) => side.received.filter((message) => message.event === 'mark') as { mark: { name: string } }[];

describe('the media worker', () => {
  it('refuses an upgrade without the signature over the call’s stream URL (401), and a path that names no call (404)', async () => {
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl, { agent: workerAgent });
    const { streamUrl } = await callIn(org);
    expect(await connect(streamUrl, undefined).status).toBe(401);
    expect(await connect(streamUrl, twilioSignature('0'.repeat(32), streamUrl)).status).toBe(401);
    expect(await connect(`${streamUrl}x`, twilioSignature(org.account.authToken, streamUrl)).status).toBe(401);
    expect(await connect('ws://127.0.0.1/media-stream/only-one-segment', twilioSignature(org.account.authToken, streamUrl)).status).toBe(404);
  });

  it('talks through Twilio’s documented messages: a key press is answered with media and marks as Twilio documents them', async () => {
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl, { agent: workerAgent });
    const { sessionId, streamUrl, token } = await callIn(org);
    const twilio = connect(streamUrl, twilioSignature(org.account.authToken, streamUrl));
    expect(await twilio.status).toBe(101);
    const streamSid = 'MZ' + '1'.repeat(32);
    twilio.send(fromTwilio.connected);
    twilio.send(startOf(streamSid, token));
    twilio.send({ ...fromTwilio.media, streamSid });
    twilio.send({ ...fromTwilio.dtmf, streamSid });
    const marks = await eventually(() => marksOf(twilio), (found) => found.length > 0);
    const media = twilio.received.find((message) => message.event === 'media');
    // What the worker sends is what Twilio documents, key for key.
    expect(Object.keys(media!).sort()).toEqual(Object.keys(toTwilio.media).sort());
    expect(media).toMatchObject({ event: 'media', streamSid, media: { payload: expect.any(String) } });
    expect(Object.keys(marks[0]!).sort()).toEqual(Object.keys(toTwilio.mark).sort());
    // Telephone audio in frames of 20 ms at most (the last of a piece is shorter).
    expect(Buffer.from((media as { media: { payload: string } }).media.payload, 'base64').length).toBeLessThanOrEqual(160);
    const [pressed, reply] = await eventually(() => messages(org, sessionId), (found) => found.length === 2);
    expect(pressed).toMatchObject({ role: 'USER', content: '[The caller pressed 1]', metadata: { source: 'dtmf', digit: '1' } });
    expect(reply.role).toBe('ASSISTANT');
    // The documented frame reached the recogniser; `stop` ends its stream.
    const recogniser = streams.at(-1)!;
    expect(recogniser.written).toBe(160);
    twilio.send({ ...fromTwilio.stop, streamSid });
    expect(await eventually(() => recogniser.ended, Boolean)).toBe(true);
    twilio.socket.close();
  });

  it('opens one stream a call, once: a replayed upgrade’s start is closed unheard', async () => {
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl, { agent: workerAgent });
    const { streamUrl, token } = await callIn(org);
    const signature = twilioSignature(org.account.authToken, streamUrl);
    const first = connect(streamUrl, signature);
    await first.status;
    const before = streams.length;
    first.send(startOf('MZ' + 'a'.repeat(32), token));
    await eventually(() => streams.length, (count) => count === before + 1);
    const replay = connect(streamUrl, signature);
    expect(await replay.status).toBe(101);
    const closed = new Promise<number>((resolveClose) => replay.socket.once('close', (code) => resolveClose(code)));
    replay.send(startOf('MZ' + 'b'.repeat(32), token));
    expect(await closed).toBe(1000);
    // The replay opened no recogniser: it was refused before any speech.
    expect(streams.length).toBe(before + 1);
    first.socket.close();
  });

  it('clears the audio when the caller talks over the agent, and keeps of the reply only what was played', async () => {
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl, { agent: workerAgent });
    const streamSid = 'MZ' + '2'.repeat(32);
    const { sessionId, twilio, recogniser } = await startedCall(org, streamSid);
    recogniser.emit({ type: 'speech-started', atMs: 0 });
    recogniser.emit({ type: 'final', text: 'Tell me everything about your offers please', endOfTurn: true, startMs: 0, endMs: 2000 });
    const marks = await eventually(() => marksOf(twilio), (found) => found.length >= 2);
    // The first piece (a sentence) is played; the caller speaks during the second.
    const firstPieceBytes = twilio.received
      .slice(0, twilio.received.indexOf(marks[0]!))
      .filter((message) => message.event === 'media')
      .reduce((total, message) => total + Buffer.from((message as { media: { payload: string } }).media.payload, 'base64').length, 0);
    twilio.send({ event: 'mark', sequenceNumber: '10', streamSid, mark: marks[0]!.mark });
    await eventually(() => messages(org, sessionId), (found) => found.length === 2);
    recogniser.emit({ type: 'speech-started', atMs: 4000 });
    await eventually(() => twilio.received.filter((message) => message.event === 'clear'), (found) => found.length === 1);
    expect(twilio.received.find((message) => message.event === 'clear')).toEqual({ ...toTwilio.clear, streamSid });
    // Twilio echoes the marks `clear` dropped: they were not played.
    for (const mark of marks.slice(1)) twilio.send({ event: 'mark', sequenceNumber: '11', streamSid, mark: mark.mark });
    const [, interrupted] = await eventually(() => messages(org, sessionId), (found) => found[1]?.metadata?.interruption !== undefined);
    const whole = 'You said: "Tell me everything about your offers please". I am the built-in offline model; connect a provider model for real answers.';
    const played = 'You said: "Tell me everything about your offers please". ';
    expect(interrupted).toMatchObject({ role: 'ASSISTANT', content: played });
    expect(interrupted.metadata.interruption).toMatchObject({ spokenChars: played.length, unspoken: whole.slice(played.length), durationUntilInterruptMs: firstPieceBytes / 8 });
    twilio.socket.close();
  });

  it('says the welcome first, and with welcomeAllowInterruptions false speech does not cut it', async () => {
    const welcomeMessage = 'Hello, this is Vox, how can I help you today?';
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl, { agent: { voice: { ...workerAgent.voice, welcomeMessage }, welcomeAllowInterruptions: false } });
    const streamSid = 'MZ' + '3'.repeat(32);
    const { sessionId, twilio, recogniser } = await startedCall(org, streamSid);
    const [welcome] = await eventually(() => marksOf(twilio), (found) => found.length === 1);
    const audio = twilio.received.filter((message) => message.event === 'media').length;
    expect(audio).toBe(Math.ceil((welcomeMessage.length * 8) / 160));
    recogniser.emit({ type: 'speech-started', atMs: 100 });
    twilio.send({ event: 'mark', sequenceNumber: '5', streamSid, mark: welcome!.mark });
    recogniser.emit({ type: 'final', text: 'Hi', endOfTurn: true, startMs: 100, endMs: 400 });
    // The reply comes after the speech was heard: nothing was cleared, and the welcome is no message of the transcript.
    await eventually(() => marksOf(twilio), (found) => found.length >= 2);
    expect(twilio.received.some((message) => message.event === 'clear')).toBe(false);
    const transcript = await eventually(() => messages(org, sessionId), (found) => found.length === 2);
    expect(transcript.map((message: { role: string; content: string }) => [message.role, message.content])).toEqual([
      ['USER', 'Hi'],
      ['ASSISTANT', expect.any(String)],
    ]);
    twilio.socket.close();
  });

  it('hands the agent’s silence to the provider’s endpointing with STT_ENDPOINTING', async () => {
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl, { agent: { voice: { ...workerAgent.voice, endOfTurn: 'STT_ENDPOINTING', endOfTurnSilenceMs: 700 } } });
    const { twilio, recogniser } = await startedCall(org, 'MZ' + '4'.repeat(32));
    expect(recogniser.options).toMatchObject({ language: 'en-US', endpointingMs: 700 });
    twilio.socket.close();
  });

  it('ends a turn on the detector’s silence with SILENCE, not on the provider’s endpointing', async () => {
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl, { agent: { voice: { ...workerAgent.voice, endOfTurn: 'SILENCE', endOfTurnSilenceMs: 800 } } });
    const streamSid = 'MZ' + '5'.repeat(32);
    const { sessionId, twilio, recogniser } = await startedCall(org, streamSid);
    expect(detector.silenceMs).toBe(800);
    expect(recogniser.options.endpointingMs).toBeUndefined();
    // The provider says the speaker finished; the detector has not heard the silence yet: the turn goes on.
    recogniser.emit({ type: 'final', text: 'Hello there', endOfTurn: true, startMs: 0, endMs: 900 });
    recogniser.finalizeWith = 'again';
    detector.next.push('silence');
    twilio.send({ ...fromTwilio.media, streamSid });
    // One user message of both finals: the provider's end of turn ended nothing, the detector's silence did.
    const [said] = await eventually(() => messages(org, sessionId), (found) => found.length === 2);
    expect(said).toMatchObject({ role: 'USER', content: 'Hello there again', metadata: { source: 'voice' } });
    twilio.socket.close();
  });
});
