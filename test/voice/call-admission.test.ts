/**
 * `calls/start` is admitted by the plan (docs/usage-and-billing.md#enforcement): its concurrent calls, its voice
 * seconds, an active subscription. The free plan is shrunk to one concurrent call and one voice second (PLANS).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { Receiver } from '../support/webhook-receiver.ts';
import { voiceOrg } from './support.ts';

const freePlan = { name: 'Free (test)', quotas: { chat_messages: 100, voice_seconds: 1, knowledge_chunks: 10 }, concurrentCalls: 1, requestsPerSecond: 50, burst: 100 };

let api: TestApi;
const receiver = new Receiver();
let receiverUrl: string;

beforeAll(async () => {
  receiverUrl = await receiver.start();
  api = await startApi({ PLANS: JSON.stringify({ free: freePlan }), QUOTA_CACHE_SECONDS: '1', USAGE_ROLLUP_SECONDS: '2' }, { streamPoller: true, queues: true, voice: true });
});
afterAll(async () => {
  await api.close();
  await receiver.close();
});

const simulator = () => api.voice!.simulator;

describe('admitting an outbound call', () => {
  it("refuses a call beyond the plan's concurrent calls with 429 CONCURRENT_CALLS_EXCEEDED, then, once the call's seconds are metered, the next with 429 QUOTA_EXCEEDED", async () => {
    // Arrange
    const org = await voiceOrg(api, receiver, receiverUrl);
    const start = (to: string) => api.request('POST', `/api/v1/phone-numbers/${org.phoneNumberId}/calls/start`, { key: org.key, body: { to_phone_number: to, agent_id: org.agentId } });
    simulator().setScript('+15550150', { steps: [{ say: 'Hello?' }], then: 'hangup' });

    // Act
    const first = await start('+15550150');
    const second = await start('+15550151');
    const ended = await eventually(
      () => api.request('GET', `/api/v1/chat/sessions/${first.body.sessionId}`, { key: org.key }),
      (session) => session.body.state !== 'OPEN',
    );
    // Voice seconds reach the period's usage through the roll-up (2 s here); admission trusts its read for QUOTA_CACHE_SECONDS (1 s).
    const usage = await eventually(
      () => api.request('GET', '/v1/chat/usage', { key: org.key }),
      (answer) => answer.body.currentPeriod?.metrics.voice_seconds >= 1,
    );
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const overQuota = await start('+15550152');
    await api.request('PATCH', '/v1/chat/subscription', { key: org.key, body: { plan: 'pro' } });
    const afterUpgrade = await start('+15550153');

    // Assess
    expect(first.status, first.text).toBe(201);
    expectError(second, 429, 'CONCURRENT_CALLS_EXCEEDED');
    expect(Number(second.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(second.body.error.message).toContain('1 concurrent calls');
    expect(ended.body.state).toBe('CLOSED');
    expect(usage.body.currentPeriod.metrics.voice_seconds).toBeGreaterThanOrEqual(1);
    expectError(overQuota, 429, 'QUOTA_EXCEEDED');
    expect(afterUpgrade.status, afterUpgrade.text).toBe(201);
  });
});
