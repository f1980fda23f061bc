/**
 * `calls/start` and campaign dials are admitted by the plan (docs/usage-and-billing.md#enforcement): its concurrent
 * calls, its voice seconds, an active subscription. The free plan is shrunk to one concurrent call and one voice
 * second; `solo` has one concurrent call and no quota (PLANS).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { campaignRuntime } from '../../shared/campaigns/campaign-runtime.ts';
import { dispatchCampaign } from '../../shared/campaigns/campaign-dispatcher.ts';
import { addContacts, callee, campaignBody, dialsOf, startedCampaign } from '../support/campaigns.ts';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { Receiver } from '../support/webhook-receiver.ts';
import { voiceOrg, type VoiceOrg } from '../support/voice.ts';

const freePlan = { name: 'Free (test)', quotas: { chat_messages: 100, voice_seconds: 1, knowledge_chunks: 10 }, concurrentCalls: 1, requestsPerSecond: 50, burst: 100 };
const soloPlan = { name: 'Solo (test)', quotas: { chat_messages: null, voice_seconds: null, knowledge_chunks: null }, concurrentCalls: 1, requestsPerSecond: 100, burst: 200 };

let api: TestApi;
const receiver = new Receiver();
let receiverUrl: string;

beforeAll(async () => {
  receiverUrl = await receiver.start();
  api = await startApi({ PLANS: JSON.stringify({ free: freePlan, solo: soloPlan }), QUOTA_CACHE_SECONDS: '1', USAGE_ROLLUP_SECONDS: '2' }, { streamPoller: true, queues: true, voice: true });
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
  }, 60_000);
});

/** A callee that answers and stays on the line until the test hangs up; `hangUp` is there once the call is connected. */
function heldCallee(number: string): { connected: () => boolean; hangUp: () => void } {
  let say: ((line: string | null) => void) | undefined;
  api.voice!.simulator.attachCallee(number, { onToken: () => undefined, onEnd: () => undefined, onConnected: (speak) => (say = speak) });
  return { connected: () => say !== undefined, hangUp: () => say?.(null) };
}

async function soloOrg(): Promise<VoiceOrg> {
  const org = await voiceOrg(api, receiver, receiverUrl);
  const changed = await api.request('PATCH', '/v1/chat/subscription', { key: org.key, body: { plan: 'solo' } });
  expect(changed.status, changed.text).toBe(200);
  return org;
}

const sessionState = async (org: VoiceOrg, sessionId: string) => (await api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key: org.key })).body.state;

describe('admitting calls that arrive at the same moment', () => {
  it('admits exactly one of ten parallel calls/start on a one-call plan, and the next once that call has ended', async () => {
    // Arrange
    const org = await soloOrg();
    const numbers = Array.from({ length: 10 }, (_, n) => callee(731, n));
    const callees = numbers.map(heldCallee);
    const start = (to: string) => api.request('POST', `/api/v1/phone-numbers/${org.phoneNumberId}/calls/start`, { key: org.key, body: { to_phone_number: to, agent_id: org.agentId } });

    // Act
    const answers = await Promise.all(numbers.map(start));
    const admitted = answers.filter((answer) => answer.status === 201);
    const heldIndex = answers.findIndex((answer) => answer.status === 201);
    const held = callees[heldIndex];
    await eventually(() => held?.connected(), Boolean);
    const whileHeld = await start(callee(731, 20));
    held?.hangUp();
    await eventually(() => sessionState(org, admitted[0]?.body.sessionId), (state) => state === 'CLOSED');
    const afterwards = await start(callee(731, 21));

    // Assess
    expect(answers.map((answer) => answer.status).sort()).toEqual([201, ...Array(9).fill(429)]);
    for (const refused of answers.filter((answer) => answer.status !== 201)) expectError(refused, 429, 'CONCURRENT_CALLS_EXCEEDED');
    expect(dialsOf(api.voice!.simulator, new Set(numbers))).toHaveLength(1);
    expectError(whileHeld, 429, 'CONCURRENT_CALLS_EXCEEDED');
    expect(afterwards.status, afterwards.text).toBe(201);
  }, 60_000);

  it('lets three campaigns dispatched side by side dial one call in all on a one-call plan, refuses calls/start beside it, and dials the next once it ends', async () => {
    // Arrange
    const org = await soloOrg();
    const campaigns: string[] = [];
    const numbers: string[] = [];
    for (const area of [741, 742, 743]) {
      const audience = [callee(area, 1), callee(area, 2)];
      await addContacts(org.orgId, audience.map((phoneNumber) => ({ phoneNumber, tags: [`solo-${area}`] })));
      campaigns.push(await startedCampaign(api, org.key, campaignBody(org, { audience: { tags: [`solo-${area}`] }, maxConcurrentCalls: 2 })));
      numbers.push(...audience);
    }
    const callees = new Map(numbers.map((number) => [number, heldCallee(number)]));
    const deps = campaignRuntime();
    const dispatchAll = () => Promise.all(campaigns.map((campaignId) => dispatchCampaign(deps, org.orgId, campaignId, 1_500)));

    // Act
    await dispatchAll();
    const afterBurst = dialsOf(api.voice!.simulator, new Set(numbers));
    const direct = await api.request('POST', `/api/v1/phone-numbers/${org.phoneNumberId}/calls/start`, { key: org.key, body: { to_phone_number: callee(744, 1), agent_id: org.agentId } });
    const held = callees.get(afterBurst[0]?.to ?? '');
    await eventually(() => held?.connected(), Boolean);
    held?.hangUp();
    await eventually(() => sessionState(org, afterBurst[0]?.sessionId ?? ''), (state) => state === 'CLOSED');
    await dispatchAll();
    const afterRelease = dialsOf(api.voice!.simulator, new Set(numbers));

    // Assess
    expect(afterBurst).toHaveLength(1);
    expectError(direct, 429, 'CONCURRENT_CALLS_EXCEEDED');
    expect(afterRelease).toHaveLength(2);
  }, 60_000);
});
