/**
 * The Twilio simulator's side of a Media Stream against Twilio's documented messages (test/fixtures/twilio/), with a
 * WebSocket server of the test's own as the `<Stream url>`: what it sends has Twilio's fields, the upgrade is signed,
 * a mark comes back only once the audio before it has played, `clear` drops the audio and echoes its marks, and the
 * callee's hang-up is a `stop`. Its callee's speech is scripted here (each line 200 ms of one byte), so that what is
 * counted is frames, never time.
 */
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { startTwilioSimulator, type TwilioSimulator } from '../../infra/local/twilio-simulator.ts';
import type { CalleeSpeech } from '../../infra/local/media-stream-line.ts';
import { twilioSignature } from '../../shared/voice/twilio-signature.ts';
import streamMessages from '../fixtures/twilio/media-streams-messages.json' with { type: 'json' };
import { eventually } from '../support/eventually.ts';

const { fromTwilio } = streamMessages;
const speechByte = 0x11;
const silenceByte = 0xff;

/** The callee's scripted mouth (200 ms of `speechByte` a line) and an ear that recognises nothing. */
const speech: CalleeSpeech = {
  tts: { provider: 'scripted', synthesize: async function* () { yield Buffer.alloc(1_600, speechByte); } },
  voiceId: 'scripted',
  stt: { provider: 'scripted', open: () => ({ write: () => {}, finalize: () => {}, end: () => {}, close: () => {}, events: { async *[Symbol.asyncIterator]() {} } }) },
};

const account = { accountSid: `AC${'2'.repeat(32)}`, authToken: 'd'.repeat(32) };
let simulator: TwilioSimulator;
let worker: WebSocketServer;
let streamUrl = '';
/** Each stream the simulator opened: its upgrade and every message, in order. */
const streams: { request: IncomingMessage; socket: WebSocket; received: Record<string, any>[] }[] = [];

beforeAll(async () => {
  simulator = await startTwilioSimulator({ speech, ringMs: 10 });
  worker = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise((listening) => worker.once('listening', listening));
  streamUrl = `ws://127.0.0.1:${(worker.address() as AddressInfo).port}/media-stream/org/session`;
  worker.on('connection', (socket, request) => {
    const stream = { request, socket, received: [] as Record<string, any>[] };
    streams.push(stream);
    socket.on('message', (data) => stream.received.push(JSON.parse(data.toString())));
  });
});
afterAll(async () => {
  await simulator.stop();
  await new Promise((closed) => worker.close(closed));
});

/** A call Twilio places with this TwiML, to a callee of the test range that talks and then hangs up. */
async function placeCall(twiml: string): Promise<string> {
  const response = await fetch(`${simulator.baseUrl}/2010-04-01/Accounts/${account.accountSid}/Calls.json`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${account.accountSid}:${account.authToken}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
    // Nobody listens at the status callback: the simulator keeps what it sent all the same.
    body: new URLSearchParams({ From: '+15550142', To: '+15550110', Twiml: twiml, StatusCallback: 'http://127.0.0.1:9/status' }).toString(),
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { sid: string }).sid;
}

const twiml = (url: string) => `<Response><Connect><Stream url="${url}"><Parameter name="token" value="t0k3n"/></Stream></Connect></Response>`;
const payloadOf = (message: Record<string, any>) => Buffer.from(message.media.payload as string, 'base64');
const keys = (value: object) => Object.keys(value).sort();

describe('the simulator’s Media Stream', () => {
  it('speaks Twilio’s messages, echoes a mark once its audio has played, clears on clear, and stops at the hang-up', async () => {
    const callSid = await placeCall(twiml(streamUrl));
    const stream = (await eventually(() => streams.at(-1), (found) => found !== undefined))!;
    const sent = (message: object) => stream.socket.send(JSON.stringify(message));

    // The upgrade is signed over the <Stream url>; connected, then start with the <Parameter>s, as documented.
    expect(stream.request.headers['x-twilio-signature']).toBe(twilioSignature(account.authToken, streamUrl));
    const [connected, start] = await eventually(() => stream.received, (found) => found.length >= 4);
    expect(keys(connected!)).toEqual(keys(fromTwilio.connected));
    expect(keys(start!)).toEqual(keys(fromTwilio.start));
    expect(keys(start!.start)).toEqual(keys(fromTwilio.start.start));
    expect(start!.start).toMatchObject({ callSid, accountSid: account.accountSid, customParameters: { token: 't0k3n' }, mediaFormat: fromTwilio.start.start.mediaFormat });
    const streamSid = start!.streamSid as string;

    // Audio every 20 ms of the line, silence while the callee says nothing, counted in audio time.
    const media = stream.received.filter((message) => message.event === 'media');
    expect(keys(media[0]!)).toEqual(keys(fromTwilio.media));
    expect(keys(media[0]!.media)).toEqual(keys(fromTwilio.media.media));
    expect(media.slice(0, 2).map((message) => [message.media.chunk, message.media.timestamp])).toEqual([
      ['1', '0'],
      ['2', '20'],
    ]);
    expect([...payloadOf(media[0]!)]).toEqual(new Array(160).fill(silenceByte));

    // 10 frames and a mark: the mark comes back once they have played, 10 frames of the line later at least.
    const inboundBefore = stream.received.filter((message) => message.event === 'media').length;
    for (let frame = 0; frame < 10; frame += 1) sent({ event: 'media', streamSid, media: { payload: Buffer.alloc(160, 0x55).toString('base64') } });
    sent({ event: 'mark', streamSid, mark: { name: 'played' } });
    const echoed = await eventually(() => stream.received.findIndex((message) => message.event === 'mark'), (index) => index >= 0);
    expect(keys(stream.received[echoed]!)).toEqual(keys(fromTwilio.mark));
    expect(stream.received[echoed]!.mark).toEqual({ name: 'played' });
    expect(stream.received.slice(0, echoed).filter((message) => message.event === 'media').length - inboundBefore).toBeGreaterThanOrEqual(10);

    // 10 seconds of audio and a mark, then clear: the mark comes back long before that audio could have played.
    const beforeClear = stream.received.filter((message) => message.event === 'media').length;
    for (let frame = 0; frame < 500; frame += 1) sent({ event: 'media', streamSid, media: { payload: Buffer.alloc(160, 0x55).toString('base64') } });
    sent({ event: 'mark', streamSid, mark: { name: 'dropped' } });
    sent({ event: 'clear', streamSid });
    const dropped = await eventually(() => stream.received.findIndex((message) => message.event === 'mark' && message.mark.name === 'dropped'), (index) => index >= 0);
    expect(stream.received.slice(0, dropped).filter((message) => message.event === 'media').length - beforeClear).toBeLessThan(500);

    // The callee speaks once the line is quiet, hears a reply, says goodbye, hears one, hangs up: stop, as documented.
    const spoken = () => stream.received.filter((message) => message.event === 'media' && payloadOf(message)[0] === speechByte).length;
    await eventually(spoken, (frames) => frames >= 10);
    sent({ event: 'media', streamSid, media: { payload: Buffer.alloc(160, 0x55).toString('base64') } });
    await eventually(spoken, (frames) => frames >= 20);
    sent({ event: 'media', streamSid, media: { payload: Buffer.alloc(160, 0x55).toString('base64') } });
    const stop = await eventually(() => stream.received.find((message) => message.event === 'stop'), (found) => found !== undefined);
    expect(keys(stop!)).toEqual(keys(fromTwilio.stop));
    expect(stop!.stop).toEqual({ accountSid: account.accountSid, callSid });
  });

  it('fails a call whose <Stream url> has a query string, which Twilio does not take', async () => {
    const opened = streams.length;
    const callSid = await placeCall(twiml(`${streamUrl}?token=t0k3n`));
    const statuses = () => simulator.callbacks.filter((callback) => callback.params.CallSid === callSid).map((callback) => callback.params.CallStatus);
    expect(await eventually(statuses, (found) => found.includes('failed'))).toContain('failed');
    expect(streams.length).toBe(opened);
  });
});
