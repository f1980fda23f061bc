import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { twilioSignature } from '../../shared/voice/twilio-signature.ts';
import { eventually } from '../support/eventually.ts';
import { postAsTwilio, sessionEvents, voiceOrg, voiceTestApi, type VoiceOrg } from '../support/voice.ts';

const suite = voiceTestApi();
const { receiver, simulator } = suite;

/** The relay URL of a call's TwiML, as the carrier was given it (token included). */
async function relayUrlOf(org: VoiceOrg, sessionId: string): Promise<string> {
  const callSid = (await suite.api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key: org.key })).body.metadata.roomName;
  return /<ConversationRelay\b[^>]*\burl="([^"]*)"/.exec(simulator().twimlOf(callSid) ?? '')?.[1]?.replace(/&amp;/g, '&') as string;
}

async function call(org: VoiceOrg, to: string, extra: object = {}): Promise<string> {
  const started = await suite.api.request('POST', `/api/v1/phone-numbers/${org.phoneNumberId}/calls/start`, { key: org.key, body: { to_phone_number: to, agent_id: org.agentId, ...extra } });
  expect(started.status, started.text).toBe(201);
  return started.body.sessionId;
}

const endedOnce = async (org: VoiceOrg, sessionId: string) => {
  const events = await sessionEvents(receiver, org.webhookPath, sessionId);
  expect(events.filter((receipt) => receipt.body.eventType === 'session.ended')).toHaveLength(1);
  return (await suite.api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key: org.key })).body;
};

const messages = async (org: VoiceOrg, sessionId: string) => (await suite.api.request('GET', `/api/v1/chat/sessions/${sessionId}/messages?limit=50`, { key: org.key })).body.data;

describe('the conversation of a call', () => {
  it('truncates an interrupted reply to what was spoken and records the rest', async () => {
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl);
    const to = '+15550103';
    simulator().setScript(to, { steps: [{ say: 'Tell me everything about your offers please', interruptAfterTokens: 3 }, { say: 'Sorry, go on.' }], then: 'hangup' });
    const sessionId = await call(org, to);
    await endedOnce(org, sessionId);
    const [, interrupted] = await messages(org, sessionId);
    const heard = simulator().heard((await suite.api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key: org.key })).body.metadata.roomName);
    expect(interrupted.role).toBe('ASSISTANT');
    expect(interrupted.content).toBe(heard[0]);
    expect(interrupted.metadata.interruption).toMatchObject({ spokenChars: heard[0]!.length, unspoken: expect.any(String), durationUntilInterruptMs: 400 });
    expect(interrupted.content + interrupted.metadata.interruption.unspoken).toBe(
      'You said: "Tell me everything about your offers please". I am the built-in offline model; connect a provider model for real answers.',
    );
  });

  it('makes a key press a user message the agent answers', async () => {
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl);
    const to = '+15550104';
    simulator().setScript(to, { steps: [{ dtmf: '5' }], then: 'hangup' });
    const sessionId = await call(org, to);
    await endedOnce(org, sessionId);
    const [pressed, reply] = await messages(org, sessionId);
    expect(pressed).toMatchObject({ role: 'USER', content: '[The caller pressed 5]', metadata: { source: 'dtmf', digit: '5' } });
    expect(reply.role).toBe('ASSISTANT');
  });

  it('ends at ttl as TTL when the callee stays on the line', async () => {
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl);
    const sessionId = await call(org, '+15550151', { ttl: 10 });
    const session = await endedOnce(org, sessionId);
    expect(session).toMatchObject({ state: 'CLOSED', endedReason: 'TTL' });
    const callbacks = simulator().callbacks.filter((callback) => callback.params.CallSid === session.metadata.roomName);
    const answeredAt = callbacks.find((callback) => callback.params.CallStatus === 'in-progress')!.at;
    const completedAt = callbacks.find((callback) => callback.params.CallStatus === 'completed')!.at;
    // Not before the ttl; after it, only as late as a busy machine makes a timer (the backstop would be minutes).
    for (const endedAt of [completedAt, Date.parse(session.endedAt)]) {
      expect(endedAt - answeredAt).toBeGreaterThanOrEqual(9_000);
      expect(endedAt - answeredAt).toBeLessThan(20_000);
    }
  });

  it('ends once as CONNECTION_LOST when the WebSocket drops, the carrier hanging up', async () => {
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl);
    const sessionId = await call(org, '+15550152');
    await eventually(() => messages(org, sessionId), (found) => found.length >= 2);
    suite.api.voice!.gateway.dropConnections();
    const session = await endedOnce(org, sessionId);
    expect(session).toMatchObject({ state: 'CLOSED', endedReason: 'CONNECTION_LOST' });
    await eventually(() => simulator().callbacks.some((callback) => callback.params.CallSid === session.metadata.roomName && callback.params.CallStatus === 'completed'), Boolean);
  });

  it('ends exactly once when the callbacks come again, in reverse order', async () => {
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl);
    const to = '+15550105';
    simulator().setScript(to, { steps: [{ say: 'Hi there' }], then: 'hangup' });
    const sessionId = await call(org, to);
    const session = await endedOnce(org, sessionId);
    const sent = simulator().callbacks.filter((callback) => callback.url.includes(`${sessionId}/status`));
    expect(sent.map((callback) => callback.params.CallStatus)).toEqual(['initiated', 'ringing', 'in-progress', 'completed']);
    for (const callback of [...sent].reverse()) {
      const replay = await postAsTwilio(callback.url, callback.params, callback.signature);
      expect(replay.status).toBe(200);
    }
    const again = await endedOnce(org, sessionId);
    expect(again).toMatchObject({ endedReason: session.endedReason, endedAt: session.endedAt });
  });

  it('answers an inbound call to an imported number with its agent, and ends it once when the caller hangs up', async () => {
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl);
    const callSid = await simulator().dialIn({
      from: '+15550142',
      to: org.phoneNumber,
      script: { steps: [{ say: 'Hi, I am calling about my order' }], then: 'hangup' },
    });
    const sessions = await eventually(
      async () => (await suite.api.request('GET', '/v1/chat/chat/sessions?platform=PHONE', { key: org.key })).body.data,
      (found: { id: string; state: string }[]) => found.length === 1 && found[0]!.state === 'CLOSED',
    );
    const session = await endedOnce(org, sessions[0]!.id);
    expect(session).toMatchObject({
      type: 'VOICE',
      platform: 'PHONE',
      direction: 'INBOUND',
      agentId: org.agentId,
      endedReason: 'HANGUP_CALLEE',
      metadata: { customerPhoneNumber: '+15550142', roomName: callSid, sessionVariables: {} },
    });
    const [said, reply] = await messages(org, session.id);
    expect(said).toMatchObject({ role: 'USER', content: 'Hi, I am calling about my order' });
    expect(simulator().heard(callSid)).toEqual([reply.content]);
    // Twilio retries the voice webhook: the same call finds the same session.
    const first = simulator().callbacks.find((callback) => callback.params.CallSid === callSid && callback.url.endsWith('/twilio/voice'))!;
    const retried = await postAsTwilio(first.url, first.params, first.signature);
    expect(retried.status).toBe(200);
    expect(await retried.text()).toContain(`session=${session.id}`);
    expect((await suite.api.request('GET', '/v1/chat/chat/sessions?platform=PHONE', { key: org.key })).body.data).toHaveLength(1);
  });

  it('rejects an inbound call to a number without an inbound agent, and refuses an unknown number (404)', async () => {
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl);
    await suite.api.request('PATCH', `/api/v1/phone-numbers/${org.phoneNumberId}`, { key: org.key, body: { agentId: null } });
    const params = { CallSid: 'CA0123', From: '+15550142', To: org.phoneNumber, AccountSid: org.account.accountSid };
    const url = `${suite.api.baseUrl}/twilio/voice`;
    const rejected = await postAsTwilio(url, params, twilioSignature(org.account.authToken, url, params));
    expect(rejected.status).toBe(200);
    expect(await rejected.text()).toContain('<Reject');
    const unknown = await postAsTwilio(url, { ...params, To: '+19990000000' }, 'x');
    expect(unknown.status).toBe(404);
  });

  it('checks the signature over the URL as requested, query included: a signed request sent with a query appended is refused (401)', async () => {
    // Prepare: requests signed for our URLs, sent to those URLs with `?extra=1` / `&extra=1` appended.
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl);
    const sessionId = await call(org, '+15550154');
    const statusUrl = `${suite.api.baseUrl}/twilio/calls/${org.orgId}/${sessionId}/status`;
    const completed = { CallSid: 'CAappended', CallStatus: 'completed', CallDuration: '3' };
    const voiceUrl = `${suite.api.baseUrl}/twilio/voice`;
    const inbound = { CallSid: 'CAappended', From: '+15550155', To: org.phoneNumber, AccountSid: org.account.accountSid };
    const relayUrl = await relayUrlOf(org, sessionId);
    const queriedStatusUrl = `${statusUrl}?attempt=2`;

    // Act
    const status = await postAsTwilio(`${statusUrl}?extra=1`, completed, twilioSignature(org.account.authToken, statusUrl, completed));
    const voice = await postAsTwilio(`${voiceUrl}?extra=1`, inbound, twilioSignature(org.account.authToken, voiceUrl, inbound));
    const upgrade = await new Promise<number>((resolve) => {
      const socket = new WebSocket(`${relayUrl}&extra=1`, { headers: { 'x-twilio-signature': twilioSignature(org.account.authToken, relayUrl) } });
      socket.on('open', () => {
        socket.close();
        resolve(101);
      });
      socket.on('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0));
      socket.on('error', () => resolve(0));
    });
    const stillOpen = (await suite.api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key: org.key })).body.state;
    // A URL Twilio was given with a query is signed with it, and passes.
    const signedWithQuery = await postAsTwilio(queriedStatusUrl, completed, twilioSignature(org.account.authToken, queriedStatusUrl, completed));

    // Assess
    for (const refused of [status, voice]) {
      expect(refused.status).toBe(401);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('INVALID_SIGNATURE');
    }
    expect(upgrade).toBe(401);
    expect(stillOpen).toBe('OPEN');
    expect(signedWithQuery.status).toBe(200);
    expect((await endedOnce(org, sessionId)).endedReason).toBe('HANGUP_CALLEE');
  });

  it('refuses a second WebSocket for a live call with the same URL and signature (403): it neither speaks nor hears, and the first keeps working', async () => {
    // Prepare: a callee who speaks when told to, on a call whose relay is up.
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl);
    const to = '+15550106';
    const calleeHeard: string[] = [];
    let repliesHeard = 0;
    let say: ((line: string | null) => void) | undefined;
    simulator().attachCallee(to, {
      onToken: (token, last) => {
        calleeHeard.push(token);
        if (last) repliesHeard += 1;
      },
      onEnd: () => undefined,
      onConnected: (speak) => (say = speak),
    });
    const sessionId = await call(org, to);
    const speak = (await eventually(() => say, Boolean)) as (line: string | null) => void;
    // What Twilio connected to, and its signature over it: both are in any copy of the upgrade request.
    const relayUrl = await relayUrlOf(org, sessionId);

    // Act
    const intruder = new WebSocket(relayUrl, { headers: { 'x-twilio-signature': twilioSignature(org.account.authToken, relayUrl) } });
    const intruderHeard: string[] = [];
    intruder.on('message', (data) => intruderHeard.push(data.toString()));
    const upgrade = await new Promise<number>((resolve) => {
      intruder.once('open', () => resolve(101));
      intruder.once('unexpected-response', (request, response) => {
        request.destroy();
        resolve(response.statusCode ?? 0);
      });
      intruder.once('error', () => resolve(0));
    });
    if (upgrade === 101) intruder.send(JSON.stringify({ type: 'prompt', voicePrompt: 'Injected by a second connection', lang: 'en-US', last: true }));
    speak('What time do you open?');
    const transcript = await eventually(
      () => messages(org, sessionId),
      (found) => found.some((message: { role: string; content: string }) => message.role === 'ASSISTANT' && message.content.includes('What time do you open?')),
    );
    await eventually(() => repliesHeard, (count) => count >= 1);
    speak(null);
    await endedOnce(org, sessionId);

    // Assess
    expect(upgrade).toBe(403);
    expect(intruderHeard).toEqual([]);
    expect(transcript.map((message: { role: string }) => message.role)).toEqual(['USER', 'ASSISTANT']);
    expect(transcript[0].content).toBe('What time do you open?');
    expect(calleeHeard.join('')).toBe(transcript[1].content);
    intruder.terminate();
  }, 60_000);

  it('refuses callbacks and WebSocket upgrades whose signature does not verify (401), changing nothing', async () => {
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl);
    const sessionId = await call(org, '+15550153');
    const url = `${suite.api.baseUrl}/twilio/calls/${org.orgId}/${sessionId}/status`;
    const params = { CallSid: 'CAforged', CallStatus: 'completed', CallDuration: '3' };
    const forged = await postAsTwilio(url, params, twilioSignature('0'.repeat(32), url, params));
    expect(forged.status).toBe(401);
    expect(((await forged.json()) as { error: { code: string } }).error.code).toBe('INVALID_SIGNATURE');
    const unsigned = await postAsTwilio(url, params);
    expect(unsigned.status).toBe(401);
    const upgrade = await new Promise<number>((resolve) => {
      const socket = new WebSocket(`${suite.api.voice!.gateway.url}?org=${org.orgId}&session=${sessionId}`);
      socket.onopen = () => resolve(101);
      socket.onerror = () => resolve(401);
    });
    expect(upgrade).toBe(401);
    const session = await suite.api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key: org.key });
    expect(session.body.state).toBe('OPEN');
    // A correctly signed completed callback then ends it.
    const signed = await postAsTwilio(url, params, twilioSignature(org.account.authToken, url, params));
    expect(signed.status).toBe(200);
    expect((await endedOnce(org, sessionId)).endedReason).toBe('HANGUP_CALLEE');
  });
});
