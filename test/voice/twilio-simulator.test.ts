/**
 * The Twilio simulator is no more forgiving than Twilio: it refuses inline TwiML over 4,000 characters as Twilio does
 * (error 32018), sends key presses only when the TwiML turned DTMF detection on, and partial prompts (`last: false`)
 * only when it asked for them (https://www.twilio.com/docs/voice/twiml/connect/conversationrelay, attributes
 * `dtmfDetection` and `partialPrompts`, both off by default); and it runs a `<Dial>` the `<Connect>` action answers as
 * Twilio documents it (https://www.twilio.com/docs/voice/twiml/dial, .../twiml/number: a caller ID of the account,
 * a `<Number url>` played to the called party only, with no `<Dial>` in it). Driven here without the platform: a
 * WebSocket server and an HTTP server of the test's own play the application.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { readText } from '../../infra/local/twilio-simulator.ts';
import { inlineTwimlLimit, startTwilioSimulator, type TwilioSimulator } from '../../infra/local/twilio-simulator.ts';
import { eventually } from '../support/eventually.ts';
import { closeServer, listenOnLoopback } from '../support/loopback-server.ts';
import { twilioAccount } from '../support/voice.ts';

let simulator: TwilioSimulator;
let application: WebSocketServer;
/** The application's HTTP side: what it answers each path with, and the requests it got. */
let actions: Server;
let actionsBase: string;
const actionAnswers = new Map<string, string>();
const actionRequests: { path: string; params: Record<string, string> }[] = [];
/** What the application received, by the `call` query parameter of the relay URL. */
const received = new Map<string, Record<string, unknown>[]>();

beforeAll(async () => {
  simulator = await startTwilioSimulator({ ringMs: 10 });
  application = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise((listening) => application.once('listening', listening));
  application.on('connection', (socket, request) => {
    const call = new URL(request.url ?? '/', 'http://application').searchParams.get('call') as string;
    received.set(call, []);
    socket.on('message', (data) => {
      const message = JSON.parse(data.toString()) as Record<string, unknown>;
      received.get(call)?.push(message);
      // Whatever the caller says or presses is answered, so that the callee's script goes on.
      if ((message.type === 'prompt' && message.last === true) || message.type === 'dtmf') socket.send(JSON.stringify({ type: 'text', token: 'Noted.', last: true }));
      // A caller asking for a transfer: the application ends the relay with its hand-off data.
      if (message.type === 'prompt' && message.last === true && String(message.voicePrompt).includes('transfer')) {
        socket.send(JSON.stringify({ type: 'end', handoffData: JSON.stringify({ reasonCode: 'transfer' }) }));
      }
    });
  });
  actions = createServer((request, response) => {
    void readText(request).then((body) => {
      const path = request.url ?? '/';
      actionRequests.push({ path, params: Object.fromEntries(new URLSearchParams(body)) });
      response.writeHead(200, { 'content-type': 'text/xml' }).end(actionAnswers.get(path) ?? '<Response><Hangup/></Response>');
    });
  });
  actionsBase = `http://127.0.0.1:${await listenOnLoopback(actions)}`;
});
afterAll(async () => {
  await closeServer(actions);
  await simulator.stop();
  await new Promise((closed) => application.close(closed));
});

const relayUrl = (call: string) => `ws://127.0.0.1:${(application.address() as { port: number }).port}/relay?call=${call}`;
const twiml = (call: string, attributes: string) => `<?xml version="1.0" encoding="UTF-8"?><Response><Connect><ConversationRelay url="${relayUrl(call)}" ${attributes}/></Connect></Response>`;

async function createCall(to: string, document: string): Promise<Response> {
  const { accountSid, authToken } = twilioAccount();
  return fetch(`${simulator.baseUrl}/2010-04-01/Accounts/${accountSid}/Calls.json`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ To: to, From: '+15557770001', Twiml: document }).toString(),
  });
}

/** What the application heard from one scripted call: a key press, then a line. */
async function scriptedCall(call: string, to: string, attributes: string): Promise<Record<string, unknown>[]> {
  simulator.setScript(to, { steps: [{ dtmf: '7' }, { say: 'I would like an appointment' }], then: 'hangup' });
  const created = await createCall(to, twiml(call, attributes));
  expect(created.status).toBe(201);
  return eventually(() => received.get(call) ?? [], (messages) => messages.some((message) => message.type === 'prompt' && message.last === true));
}

describe('the Twilio simulator, as strict as Twilio', () => {
  it('refuses a call whose inline TwiML is over 4,000 characters with 400 and error 32018, and takes one of exactly 4,000', async () => {
    const base = twiml('limit', 'welcomeGreeting=""');
    const padded = (length: number) => base.replace('welcomeGreeting=""', `welcomeGreeting="${'a'.repeat(length - base.length)}"`);

    const over = await createCall('+15550160', padded(inlineTwimlLimit + 1));
    const atLimit = await createCall('+15550160', padded(inlineTwimlLimit));

    expect(over.status).toBe(400);
    expect(await over.json()).toMatchObject({ code: 32018, status: 400 });
    expect(atLimit.status).toBe(201);
  });

  it('sends no dtmf message when the TwiML did not turn detection on', async () => {
    const messages = await scriptedCall('no-dtmf', '+15550120', '');

    expect(messages.map((message) => message.type)).toEqual(['setup', 'prompt']);
  });

  it('sends the key press when the TwiML set dtmfDetection="true"', async () => {
    const messages = await scriptedCall('dtmf', '+15550121', 'dtmfDetection="true"');

    expect(messages.map((message) => message.type)).toEqual(['setup', 'dtmf', 'prompt']);
    expect(messages[1]).toEqual({ type: 'dtmf', digit: '7' });
  });

  it('sends partial prompts (last: false) before the final one only when the TwiML set partialPrompts="true"', async () => {
    const partial = await scriptedCall('partial', '+15550122', 'partialPrompts="true"');
    const whole = await scriptedCall('whole', '+15550123', 'partialPrompts="false"');

    const prompts = (messages: Record<string, unknown>[]) => messages.filter((message) => message.type === 'prompt').map((message) => [message.voicePrompt, message.last]);
    expect(prompts(partial)).toEqual([
      ['I', false],
      ['I would', false],
      ['I would like', false],
      ['I would like an', false],
      ['I would like an appointment', true],
    ]);
    expect(prompts(whole)).toEqual([['I would like an appointment', true]]);
  });

  describe('a <Dial> after the relay', () => {
    const account = twilioAccount();
    const ownNumber = '+15557770002';

    /** A call whose callee asks for a transfer; the action answers `dial` (with `{base}` for the test's server). */
    async function transferredCall(name: string, dial: string, whisper?: string) {
      if (!simulator.incomingNumber(ownNumber)) simulator.addIncomingNumber({ ...account, phoneNumber: ownNumber });
      actionAnswers.set(`/${name}/action`, dial.replaceAll('{base}', `${actionsBase}/${name}`));
      if (whisper) actionAnswers.set(`/${name}/whisper`, whisper);
      simulator.setScript('+15550157', { steps: [{ say: 'Please transfer me' }], then: 'stay' });
      const document = `<?xml version="1.0" encoding="UTF-8"?><Response><Connect action="${actionsBase}/${name}/action"><ConversationRelay url="${relayUrl(name)}"/></Connect></Response>`;
      const created = await fetch(`${simulator.baseUrl}/2010-04-01/Accounts/${account.accountSid}/Calls.json`, {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from(`${account.accountSid}:${account.authToken}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ To: '+15550157', From: ownNumber, Twiml: document }).toString(),
      });
      const { sid } = (await created.json()) as { sid: string };
      const [dialled] = await eventually(() => simulator.dials(sid), (dials) => dials.length > 0);
      return { sid, dialled: dialled!, requests: actionRequests.filter((request) => request.path.startsWith(`/${name}/`)) };
    }

    it('gives the action the relay\'s handoffData, plays the <Say> to the caller and the <Number url> to the called party', async () => {
      const { sid, dialled, requests } = await transferredCall(
        'warm',
        `<Response><Say>Hold on</Say><Dial callerId="${ownNumber}"><Number url="{base}/whisper">+15550130</Number></Dial></Response>`,
        '<Response><Say>A caller wants sales</Say></Response>',
      );

      expect(requests[0]!.params).toMatchObject({ CallSid: sid, CallStatus: 'in-progress', HandoffData: '{"reasonCode":"transfer"}' });
      expect(requests[1]).toMatchObject({ path: '/warm/whisper', params: { ParentCallSid: sid, To: '+15550130', From: ownNumber } });
      expect(dialled).toEqual({ number: '+15550130', callerId: ownNumber, callerHeard: ['Hold on'], whisper: ['A caller wants sales'], outcome: 'answered' });
    });

    it('fails a dial whose caller ID is not a number of the account, and runs no <Dial> inside a whisper', async () => {
      const stranger = await transferredCall('stranger', '<Response><Dial callerId="+15557779999"><Number>+15550131</Number></Dial></Response>');
      const nested = await transferredCall(
        'nested',
        `<Response><Dial callerId="${ownNumber}"><Number url="{base}/whisper">+15550132</Number></Dial></Response>`,
        '<Response><Say>Psst</Say><Dial>+15550133</Dial></Response>',
      );

      expect(stranger.dialled.outcome).toBe('failed');
      expect(nested.dialled).toMatchObject({ outcome: 'answered', whisper: [] });
    });
  });
});
