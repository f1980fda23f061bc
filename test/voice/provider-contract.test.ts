/**
 * Our carrier side against Twilio's own documents, not against our simulator: ConversationRelay's message examples
 * and the parameter sets of the status callbacks (test/fixtures/twilio/, each with its source), sent as Twilio
 * sends them and signed with the twilio package's reference signer.
 */
import twilio from 'twilio';
import { describe, expect, it } from 'vitest';
import relayMessages from '../fixtures/twilio/conversation-relay-messages.json' with { type: 'json' };
import statusCallbacks from '../fixtures/twilio/status-callbacks.json' with { type: 'json' };
import { eventually } from '../support/eventually.ts';
import { postAsTwilio, sessionEvents, voiceOrg, voiceTestApi, type VoiceOrg } from '../support/voice.ts';

const suite = voiceTestApi();
const { receiver, simulator } = suite;
const { messages: documented } = relayMessages;

type Message = { role: string; content: string; metadata?: Record<string, any> };
const transcript = async (org: VoiceOrg, sessionId: string): Promise<Message[]> =>
  (await suite.api.request('GET', `/api/v1/chat/sessions/${sessionId}/messages?limit=50`, { key: org.key })).body.data;

/** A call on a callee who says "Hello?" and stays on the line: its relay stays open for the documented messages. */
async function liveCall(org: VoiceOrg, to: string): Promise<{ sessionId: string; callSid: string }> {
  const started = await suite.api.request('POST', `/api/v1/phone-numbers/${org.phoneNumberId}/calls/start`, { key: org.key, body: { to_phone_number: to, agent_id: org.agentId } });
  expect(started.status, started.text).toBe(201);
  const { sessionId } = started.body;
  await eventually(() => transcript(org, sessionId), (found) => found.length >= 2);
  const callSid = (await suite.api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key: org.key })).body.metadata.roomName as string;
  return { sessionId, callSid };
}

describe("ConversationRelay's documented messages", () => {
  it('setup, prompt, both forms of interrupt, dtmf and error, sent verbatim on a live call, each do what Twilio means', async () => {
    // Prepare
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl);
    const { sessionId, callSid } = await liveCall(org, '+15550155');
    const send = (message: object) => simulator().sendToRelay(callSid, JSON.stringify(message));
    const settled = (count: number) => eventually(() => transcript(org, sessionId), (found) => found.length >= count && found.at(-1)?.role === 'ASSISTANT');

    // Act: each interrupt cuts the reply to the prompt before it.
    send(documented.setup);
    send(documented.prompt);
    await settled(4);
    send(documented.interruptWithStringDuration);
    await eventually(() => transcript(org, sessionId), (found) => found[3]?.metadata?.interruption !== undefined);
    send(documented.dtmf);
    await settled(6);
    send(documented.prompt);
    await settled(8);
    send(documented.interruptWithNumberDuration);
    await eventually(() => transcript(org, sessionId), (found) => found[7]?.metadata?.interruption !== undefined);
    send(documented.error);
    const messages = await transcript(org, sessionId);

    // Assess
    expect(messages.map((message) => message.role)).toEqual(['USER', 'ASSISTANT', 'USER', 'ASSISTANT', 'USER', 'ASSISTANT', 'USER', 'ASSISTANT']);
    expect(messages[2]).toMatchObject({ content: documented.prompt.voicePrompt, metadata: { source: 'voice' } });
    expect(messages[4]).toMatchObject({ content: '[The caller pressed 1]', metadata: { source: 'dtmf', digit: '1' } });
    for (const interrupted of [messages[3]!, messages[7]!]) {
      expect(interrupted.content).toBe('Life is a complex set of');
      expect(interrupted.metadata?.interruption).toMatchObject({ spokenChars: 24, durationUntilInterruptMs: 460, unspoken: expect.any(String) });
    }
    const session = await suite.api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key: org.key });
    expect(session.body.state).toBe('OPEN');
  }, 60_000);

  it('the TwiML of a call turns DTMF detection on, so that Twilio sends key presses at all', async () => {
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl);

    const { callSid } = await liveCall(org, '+15550156');

    expect(simulator().twimlOf(callSid)).toMatch(/<ConversationRelay\b[^>]*\bdtmfDetection="true"/);
  });
});

/** A fixture's parameter sets, each a plain form of names and values as Twilio posts them. */
const parameterSets = (sets: readonly object[]): Record<string, string>[] => sets.map((set) => Object.fromEntries(Object.entries(set).map(([name, value]) => [name, String(value)])));

describe("Twilio's documented status callbacks", () => {
  const fill = (params: Record<string, string>, accountSid: string, callSid: string) =>
    Object.fromEntries(Object.entries(params).map(([name, value]) => [name, value.replace('{AccountSid}', accountSid).replace('{CallSid}', callSid)]));

  it.each([
    ['initiated, ringing, in-progress, then completed after 12 s', 'HANGUP_CALLEE', parameterSets(statusCallbacks.answeredThenCompleted)],
    ['busy', 'BUSY', parameterSets(statusCallbacks.busy)],
  ] as const)('%s: every documented parameter is signed and verified, and the call ends once as %s', async (_, endedReason, sequence) => {
    // Prepare: a call whose callee stays silent, so that only the documented callbacks end it.
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl);
    const { sessionId, callSid } = await liveCall(org, '+15550157');
    const url = `${suite.api.baseUrl}/twilio/calls/${org.orgId}/${sessionId}/status`;

    // Act
    const statuses = [];
    for (const params of sequence) {
      const filled = fill(params, org.account.accountSid, callSid);
      statuses.push((await postAsTwilio(url, filled, twilio.getExpectedTwilioSignature(org.account.authToken, url, filled))).status);
    }

    // Assess
    expect(statuses).toEqual(sequence.map(() => 200));
    const events = await sessionEvents(receiver, org.webhookPath, sessionId);
    expect(events.filter((receipt) => receipt.body.eventType === 'session.ended')).toHaveLength(1);
    const session = await suite.api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key: org.key });
    expect(session.body).toMatchObject({ state: 'CLOSED', endedReason });
  }, 60_000);
});
