import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { Receiver } from '../support/webhook-receiver.ts';
import { sessionEvents, voiceOrg } from '../support/voice.ts';

let api: TestApi;
const receiver = new Receiver();
let receiverUrl: string;

beforeAll(async () => {
  receiverUrl = await receiver.start();
  api = await startApi({ CALL_RING_TIMEOUT_SECONDS: '5', CALL_BACKSTOP_GRACE_SECONDS: '0' }, { streamPoller: true, queues: true, voice: true });
});
afterAll(async () => {
  await api.close();
  await receiver.close();
});

describe('the backstop of a call', () => {
  it('ends once, as CARRIER_SILENT, a call whose carrier never reports the end, at ring timeout + ttl + grace', async () => {
    const org = await voiceOrg(api, receiver, receiverUrl);
    const startedAt = Date.now();
    const started = await api.request('POST', `/api/v1/phone-numbers/${org.phoneNumberId}/calls/start`, {
      key: org.key,
      body: { to_phone_number: '+15550191', agent_id: org.agentId, ttl: 10 },
    });
    expect(started.status, started.text).toBe(201);
    const { sessionId } = started.body;
    expect(api.voice!.scheduler!.pending()).toContain(`call-${sessionId}`);
    const events = await sessionEvents(receiver, org.webhookPath, sessionId);
    expect(events.filter((receipt) => receipt.body.eventType === 'session.ended')).toHaveLength(1);
    const session = (await api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key: org.key })).body;
    expect(session).toMatchObject({ state: 'CLOSED', endedReason: 'CARRIER_SILENT' });
    // The schedule's time has one-second precision here (AWS: one minute).
    expect(Date.parse(session.endedAt) - startedAt).toBeGreaterThanOrEqual(14_000);
    expect(api.voice!.scheduler!.pending()).not.toContain(`call-${sessionId}`);
  });

  it('changes nothing for a call that ended before it fired', async () => {
    const org = await voiceOrg(api, receiver, receiverUrl);
    const started = await api.request('POST', `/api/v1/phone-numbers/${org.phoneNumberId}/calls/start`, {
      key: org.key,
      body: { to_phone_number: '+15550161', agent_id: org.agentId, ttl: 10 },
    });
    const { sessionId } = started.body;
    const first = await sessionEvents(receiver, org.webhookPath, sessionId);
    const ended = (await api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key: org.key })).body;
    expect(ended.endedReason).toBe('BUSY');
    await new Promise((resolve) => setTimeout(resolve, 16_000));
    expect(api.voice!.scheduler!.pending()).not.toContain(`call-${sessionId}`);
    const later = await sessionEvents(receiver, org.webhookPath, sessionId, 0);
    expect(later).toHaveLength(first.length);
    expect((await api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key: org.key })).body).toEqual(ended);
  }, 40_000);
});
