import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { phoneNumberRoutes } from '../../functions/phone-numbers/routes.ts';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { closeServer } from '../support/loopback-server.ts';
import { Receiver, type Receipt } from '../support/webhook-receiver.ts';
import { sessionEvents, startWeatherApi, voiceOrg } from '../support/voice.ts';

let api: TestApi;
const receiver = new Receiver();
let receiverUrl: string;
let weather: Awaited<ReturnType<typeof startWeatherApi>>;

beforeAll(async () => {
  receiverUrl = await receiver.start();
  weather = await startWeatherApi();
  api = await startApi({}, { streamPoller: true, queues: true, voice: true });
});
afterAll(async () => {
  await api.close();
  await receiver.close();
  await closeServer(weather.server);
});

const simulator = () => api.voice!.simulator;
const lifecycleTypes = new Set(['session.created', 'session.updated', 'session.closed', 'session.ended']);
const lifecycle = (events: Receipt[]) => events.map((receipt) => receipt.body.eventType as string).filter((type) => lifecycleTypes.has(type));

describe('an outbound call', () => {
  it('announces the session before the callee answers, converses with a tool call, and ends once with the analysis when the callee hangs up', async () => {
    const org = await voiceOrg(api, receiver, receiverUrl, { toolUrl: weather.url });
    const to = '+15550101';
    simulator().setScript(to, { steps: [{ say: 'Please run get_weather with {"city": "Paris"}' }, { say: 'Great, thanks.' }], then: 'hangup' });

    const started = await api.request('POST', `/api/v1/phone-numbers/${org.phoneNumberId}/calls/start`, {
      key: org.key,
      body: { to_phone_number: to, agent_id: org.agentId, session_variables: { company: 'Acme', tier: { level: 2 } } },
    });
    const answeredAfter = Date.now();
    expect(started.status, started.text).toBe(201);
    expect(phoneNumberRoutes.routes.startCall.response.parse(started.body)).toEqual({ sessionId: expect.any(String) });
    const { sessionId } = started.body;

    const events = await sessionEvents(receiver, org.webhookPath, sessionId);
    const created = events.filter((receipt) => receipt.body.eventType === 'session.created');
    const ended = events.filter((receipt) => receipt.body.eventType === 'session.ended');
        // Voice sessions go from session.created straight to session.ended: no session.updated, no session.closed.
    expect(lifecycle(events)).toEqual(['session.created', 'session.ended']);
    expect(created).toHaveLength(1);
    expect(ended).toHaveLength(1);
    const callSid = created[0]!.body.metadata.roomName as string;
    expect(callSid).toMatch(/^CA[0-9a-f]{32}$/);
    expect(created[0]!.body).toMatchObject({
      type: 'VOICE',
      platform: 'PHONE',
      direction: 'OUTBOUND',
      state: 'OPEN',
      metadata: { customerPhoneNumber: to, roomName: callSid, sessionVariables: { company: 'Acme', tier: { level: 2 } } },
    });
    // session.created was recorded (in the answer's transaction) before the simulator reported the answer.
    const answered = simulator().callbacks.find((callback) => callback.params.CallSid === callSid && callback.params.CallStatus === 'in-progress');
    expect(answered!.at).toBeGreaterThanOrEqual(answeredAfter);
    expect(ended[0]!.body).toMatchObject({ state: 'CLOSED', metadata: { sessionVariables: { company: 'Acme', tier: { level: 2 } } }, analysis: { status: 'COMPLETED' } });

    const session = await api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key: org.key });
    expect(session.body).toMatchObject({ state: 'CLOSED', endedReason: 'HANGUP_CALLEE', type: 'VOICE', direction: 'OUTBOUND', messageCount: 5 });

    const transcript = await api.request('GET', `/api/v1/chat/sessions/${sessionId}/messages?limit=10`, { key: org.key });
    expect(transcript.body.data.map((message: { role: string }) => message.role)).toEqual(['USER', 'TOOL', 'ASSISTANT', 'USER', 'ASSISTANT']);
    expect(transcript.body.data[0].content).toBe('Please run get_weather with {"city": "Paris"}');
    expect(transcript.body.data[1].toolCall).toMatchObject({ name: 'get_weather', arguments: { city: 'Paris' }, result: '{"tempC":21}', status: 'SUCCESS' });
    // What the callee heard is what was stored, reply by reply.
    expect(simulator().heard(callSid)).toEqual([transcript.body.data[2].content, transcript.body.data[4].content]);
    expect(transcript.body.data[2].content).toContain('{"tempC":21}');

    // The recording: our own URL in session.ended, a 302 to a signed URL of the copy, the carrier's copy deleted.
    expect(ended[0]!.body.recordingUrl).toBe(`${api.baseUrl}/v1/chat/sessions/${sessionId}/recording`);
    const recording = await eventually(
      () => api.request('GET', `/v1/chat/sessions/${sessionId}/recording`, { key: org.key }),
      (response) => response.status === 302,
    );
    expect(recording.status, recording.text).toBe(302);
    const location = recording.headers.get('location')!;
    expect(location).toContain('X-Amz-Signature=');
    expect(location).toContain('X-Amz-Expires=300');
    const [recordingSid, carrierCopy] = [...simulator().recordings.entries()].find(([, copy]) => copy.callSid === callSid)!;
    expect(location).toContain(recordingSid);
    expect(Buffer.from(await (await fetch(location)).arrayBuffer())).toEqual(carrierCopy.audio);
    expect(carrierCopy.deleted).toBe(true);
    expectError(await api.request('GET', `/v1/chat/sessions/${sessionId}/recording`, { key: (await api.newOrg()).key }), 404, 'SESSION_NOT_FOUND');
  });

  it('ends as HANGUP_AGENT when the agent says goodbye: `end`, then the carrier hangs up', async () => {
    const org = await voiceOrg(api, receiver, receiverUrl);
    const to = '+15550102';
    simulator().setScript(to, { steps: [{ say: 'That is all, goodbye!' }], then: 'stay' });
    const started = await api.request('POST', `/api/v1/phone-numbers/${org.phoneNumberId}/calls/start`, { key: org.key, body: { to_phone_number: to, agent_id: org.agentId } });
    expect(started.status, started.text).toBe(201);
    const events = await sessionEvents(receiver, org.webhookPath, started.body.sessionId);
    expect(events.filter((receipt) => receipt.body.eventType === 'session.ended')).toHaveLength(1);
    const session = await api.request('GET', `/api/v1/chat/sessions/${started.body.sessionId}`, { key: org.key });
    expect(session.body).toMatchObject({ state: 'CLOSED', endedReason: 'HANGUP_AGENT', messageCount: 2 });
  });

  it.each([
    ['+15550161', 'BUSY'],
    ['+15550171', 'NO_ANSWER'],
    ['+15550181', 'FAILED'],
  ])('to %s ends as %s, once', async (to, reason) => {
    const org = await voiceOrg(api, receiver, receiverUrl);
    const started = await api.request('POST', `/api/v1/phone-numbers/${org.phoneNumberId}/calls/start`, { key: org.key, body: { to_phone_number: to, agent_id: org.agentId } });
    expect(started.status, started.text).toBe(201);
    const events = await sessionEvents(receiver, org.webhookPath, started.body.sessionId);
    expect(lifecycle(events)).toEqual(['session.created', 'session.ended']);
    const session = await api.request('GET', `/api/v1/chat/sessions/${started.body.sessionId}`, { key: org.key });
    expect(session.body).toMatchObject({ state: 'CLOSED', endedReason: reason, messageCount: 0 });
  });
});
