/**
 * Calls to an imported number, through the Twilio simulator as a caller would place them: the number's voice URL and
 * status callback (set at import), and the recording of inbound calls a number asks for.
 */
import { describe, expect, it } from 'vitest';
import twilio from 'twilio';
import WebSocket from 'ws';
import { phoneChannelPath } from '../../infra/local/phone-channel.ts';
import { twilioSignature } from '../../shared/voice/twilio-signature.ts';
import { expectError } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { postAsTwilio, sessionEvents, voiceOrg, voiceTestApi, type VoiceOrg } from '../support/voice.ts';

const suite = voiceTestApi();
const { receiver, simulator } = suite;

/** Someone calls the organization's number; the session of the call, once the platform has it. */
async function callIn(org: VoiceOrg, script: Parameters<ReturnType<typeof simulator>['dialIn']>[0]['script']): Promise<{ callSid: string; sessionId: string }> {
  const callSid = await simulator().dialIn({ from: '+15550142', to: org.phoneNumber, script });
  const sessions = await eventually(
    async () => (await suite.api.request('GET', '/v1/chat/chat/sessions?platform=PHONE', { key: org.key })).body.data as { id: string }[],
    (found) => found.length === 1,
  );
  return { callSid, sessionId: sessions[0]!.id };
}

async function endedOnce(org: VoiceOrg, sessionId: string) {
  const events = await sessionEvents(receiver, org.webhookPath, sessionId);
  expect(events.filter((receipt) => receipt.body.eventType === 'session.ended')).toHaveLength(1);
  return (await suite.api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key: org.key })).body;
}

const recordCalls = async (org: VoiceOrg) => {
  const patched = await suite.api.request('PATCH', `/api/v1/phone-numbers/${org.phoneNumberId}`, { key: org.key, body: { record_inbound_calls: true } });
  expect(patched.status, patched.text).toBe(200);
};

describe('inbound calls', () => {
  it('are recorded when the number asks: <Start><Recording> in the TwiML, the copy in our bucket, the carrier’s deleted', async () => {
    // Prepare
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl);
    await recordCalls(org);

    // Act
    const { callSid, sessionId } = await callIn(org, { steps: [{ say: 'Hello, is this the shop?' }], then: 'hangup' });

    // Assess
    const session = await endedOnce(org, sessionId);
    expect(session).toMatchObject({ direction: 'INBOUND', endedReason: 'HANGUP_CALLEE', recordingUrl: `${suite.api.baseUrl}/v1/chat/sessions/${sessionId}/recording` });
    const callback = `${suite.api.baseUrl}/twilio/calls/${org.orgId}/${sessionId}/recording`;
    const reference = new twilio.twiml.VoiceResponse();
    reference.start().recording({ recordingStatusCallback: callback, recordingStatusCallbackEvent: ['completed'] });
    expect(simulator().twimlOf(callSid)).toContain(/<Start>.*<\/Start>/.exec(reference.toString())![0]);
    const recording = await eventually(
      () => suite.api.request('GET', `/v1/chat/sessions/${sessionId}/recording`, { key: org.key }),
      (response) => response.status === 302,
    );
    expect(recording.status, recording.text).toBe(302);
    const [recordingSid, carrierCopy] = [...simulator().recordings.entries()].find(([, copy]) => copy.callSid === callSid)!;
    expect(recording.headers.get('location')).toContain(`${org.orgId}/${sessionId}/${recordingSid}.mp3`);
    expect(Buffer.from(await (await fetch(recording.headers.get('location')!)).arrayBuffer())).toEqual(carrierCopy.audio);
    expect(carrierCopy.deleted).toBe(true);
    const told = simulator().callbacks.find((sent) => sent.params.RecordingSid === recordingSid)!;
    expect(told).toMatchObject({ url: callback, status: 200, params: { RecordingSource: 'StartCallRecordingTwiML' } });
  });

  it('are not recorded when the number does not ask', async () => {
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl);
    const { callSid, sessionId } = await callIn(org, { steps: [{ say: 'Hello?' }], then: 'hangup' });
    const session = await endedOnce(org, sessionId);
    expect(session.recordingUrl).toBeUndefined();
    expect(simulator().twimlOf(callSid)).not.toContain('<Recording');
    expect([...simulator().recordings.values()].some((copy) => copy.callSid === callSid)).toBe(false);
    expectError(await suite.api.request('GET', `/v1/chat/sessions/${sessionId}/recording`, { key: org.key }), 404, 'NOT_FOUND');
  });

  it("end on the number's status callback, signed with the account's token; a forged one is 401, an unknown number 404", async () => {
    // Prepare: a caller who stays on the line, so that only the status callback can end the session.
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl);
    const { callSid, sessionId } = await callIn(org, { steps: [{ say: 'Hello?' }], then: 'stay' });
    const url = `${suite.api.baseUrl}/twilio/voice/status`;
    const completed = { AccountSid: org.account.accountSid, ApiVersion: '2010-04-01', CallSid: callSid, CallStatus: 'completed', CallDuration: '4', Direction: 'inbound', From: '+15550142', To: org.phoneNumber };

    // Act
    const forged = await postAsTwilio(url, completed, twilioSignature('0'.repeat(32), url, completed));
    const openAfterForgery = (await suite.api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key: org.key })).body.state;
    const told = await postAsTwilio(url, completed, twilioSignature(org.account.authToken, url, completed));
    const retold = await postAsTwilio(url, completed, twilioSignature(org.account.authToken, url, completed));
    const unknown = { ...completed, To: '+19990000001' };
    const elsewhere = await postAsTwilio(url, unknown, twilioSignature(org.account.authToken, url, unknown));

    // Assess
    expect(forged.status).toBe(401);
    expect(openAfterForgery).toBe('OPEN');
    expect([told.status, retold.status]).toEqual([200, 200]);
    expect((await endedOnce(org, sessionId)).endedReason).toBe('HANGUP_CALLEE');
    expect(elsewhere.status).toBe(404);
  });

  it('tell their end to the number’s status callback when the caller hangs up (the simulator as Twilio)', async () => {
    const org = await voiceOrg(suite.api, receiver, suite.receiverUrl);
    const { callSid, sessionId } = await callIn(org, { steps: [{ say: 'Hello?' }], then: 'hangup' });
    await endedOnce(org, sessionId);
    const toNumber = simulator().callbacks.filter((sent) => sent.params.CallSid === callSid && sent.url === `${suite.api.baseUrl}/twilio/voice/status`);
    expect(toNumber.map((sent) => [sent.params.CallStatus, sent.status])).toEqual([['completed', 200]]);
  });

  it("are placed by the local API's own pages (the playground) as a phone at the simulator, and by no page of another origin", async () => {
    // What the phone channel answers first: `ready`, or the refusal's HTTP status.
    const firstAnswer = (origin: string) =>
      new Promise<string>((resolveAnswer) => {
        const socket = new WebSocket(`${suite.api.baseUrl.replace(/^http/, 'ws')}${phoneChannelPath}?number=${encodeURIComponent('+15550144')}`, { origin });
        socket.once('message', (data) => {
          resolveAnswer((JSON.parse(data.toString()) as { type: string }).type);
          socket.close();
        });
        socket.once('unexpected-response', (_request, response) => resolveAnswer(String(response.statusCode)));
        socket.once('error', (error) => resolveAnswer(error.message));
      });

    expect(await firstAnswer(suite.api.baseUrl)).toBe('ready');
    expect(await firstAnswer('https://elsewhere.example')).toBe('404');
  });
});
