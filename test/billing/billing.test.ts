/**
 * Plans, subscriptions and quota enforcement on the local runtime, with the stream poller counting usage and
 * webhooks delivering `subscription.updated`. The free plan is shrunk to 4 chat messages a month (PLANS).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventSchemas } from '../../shared/webhooks/event-catalog.ts';
import { listPlansResponse, subscriptionSchema } from '../../shared/billing/billing-schemas.ts';
import { usageResponse } from '../../shared/billing/usage-schemas.ts';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { Receiver } from '../support/webhook-receiver.ts';

const freePlan = { name: 'Free (test)', quotas: { chat_messages: 4, voice_seconds: 60, knowledge_chunks: 10 }, concurrentCalls: 1, requestsPerSecond: 5, burst: 10 };
const rollupSeconds = 2;
let api: TestApi;
const receiver = new Receiver();
let receiverUrl: string;

beforeAll(async () => {
  receiverUrl = await receiver.start();
  api = await startApi({ PLANS: JSON.stringify({ free: freePlan }), QUOTA_CACHE_SECONDS: '1', USAGE_ROLLUP_SECONDS: String(rollupSeconds) }, { streamPoller: true, queues: true });
});
afterAll(async () => {
  await api.close();
  await receiver.close();
});

async function orgWithAgent() {
  const { key, orgId } = await api.newOrg();
  const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Quota', description: 'q', role: 'Helpful' } });
  expect(agent.status, agent.text).toBe(201);
  return { key, orgId, agentId: agent.body.id as string };
}

const openSession = (key: string, agentId: string) => api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId } });
const send = (key: string, sessionId: string) =>
  api.request('POST', `/v1/chat/chat/sessions/${sessionId}/messages`, { key, body: { content: 'hello', stream: false } });

describe('plans', () => {
  it('lists the catalog: the defaults with PLANS applied', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('GET', '/v1/chat/plans', { key });

    // Assess
    expect(response.status).toBe(200);
    const plans = listPlansResponse.parse(response.body).data;
    expect(plans.map((plan) => plan.id)).toEqual(['free', 'pro', 'enterprise']);
    expect(plans[0]).toEqual({ id: 'free', ...freePlan, meteredMetrics: [] });
    expect(plans[2]?.quotas.chat_messages).toBeNull();
  });
});

describe('subscription', () => {
  it('starts on free and active, for the current calendar month', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('GET', '/v1/chat/subscription', { key });

    // Assess
    expect(response.status).toBe(200);
    const subscription = subscriptionSchema.parse(response.body);
    expect(subscription).toMatchObject({ status: 'active', currentPlan: 'free', provider: 'manual' });
    expect(subscription.subscriptionId).toMatch(/^sub_[0-9a-f]{24}$/);
    const now = new Date();
    expect(subscription.currentPeriodStart).toBe(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString());
    expect(subscription.currentPeriodEnd).toBe(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString());
  });

  it('pauses (403 on consuming operations, reads still work), resumes, refuses impossible transitions, and reports each change to a webhook', async () => {
    // Prepare
    const { key, agentId } = await orgWithAgent();
    const path = `/ok/${crypto.randomUUID()}`;
    const endpoint = await api.request('POST', '/v1/chat/webhooks', { key, body: { url: receiverUrl + path, events: ['subscription.updated'] } });
    receiver.secrets.set(path, [endpoint.body.secret]);
    const session = await openSession(key, agentId);

    // Act
    const paused = await api.request('POST', '/v1/chat/subscription/pause', { key });
    const sendWhilePaused = await send(key, session.body.id);
    const createWhilePaused = await openSession(key, agentId);
    const readWhilePaused = await api.request('GET', `/api/v1/chat/sessions/${session.body.id}`, { key });
    const pausedAgain = await api.request('POST', '/v1/chat/subscription/pause', { key });
    const resumed = await api.request('POST', '/v1/chat/subscription/resume', { key });
    const resumedAgain = await api.request('POST', '/v1/chat/subscription/resume', { key });
    const sendAfterResume = await send(key, session.body.id);
    const upgraded = await api.request('PATCH', '/v1/chat/subscription', { key, body: { plan: 'pro' } });
    const unknownPlan = await api.request('PATCH', '/v1/chat/subscription', { key, body: { plan: 'platinum' } });

    // Assess
    expect(subscriptionSchema.parse(paused.body).status).toBe('paused');
    expectError(sendWhilePaused, 403, 'SUBSCRIPTION_INACTIVE');
    expectError(createWhilePaused, 403, 'SUBSCRIPTION_INACTIVE');
    expect(readWhilePaused.status).toBe(200);
    expectError(pausedAgain, 409, 'INVALID_SUBSCRIPTION_TRANSITION');
    expect(resumed.body.status).toBe('active');
    expectError(resumedAgain, 409, 'INVALID_SUBSCRIPTION_TRANSITION');
    expect(sendAfterResume.status, sendAfterResume.text).toBe(200);
    expect(upgraded.body).toMatchObject({ status: 'active', currentPlan: 'pro', subscriptionId: paused.body.subscriptionId });
    expectError(unknownPlan, 422, 'UNKNOWN_PLAN');
    const receipts = await eventually(() => receiver.for(path), (list) => list.length >= 3);
    expect(receipts.every((receipt) => receipt.verified)).toBe(true);
    // Deliveries may arrive in any order (a retried one after a later one): the events' times tell their order.
    const payloads = receipts.map((receipt) => eventSchemas['subscription.updated'].parse(receipt.body)).sort((a, b) => a.createdAt.localeCompare(b.createdAt));
    expect(payloads.map((payload) => [payload.data.status, payload.data.currentPlan])).toEqual([
      ['paused', 'free'],
      ['active', 'free'],
      ['active', 'pro'],
    ]);
    expect(new Set(payloads.map((payload) => payload.data.subscriptionId))).toEqual(new Set([paused.body.subscriptionId]));
  });

  it('cancels: consuming operations answer 403; choosing a plan starts a new subscription', async () => {
    // Prepare
    const { key, agentId } = await orgWithAgent();

    // Act
    const canceled = await api.request('POST', '/v1/chat/subscription/cancel', { key });
    const create = await openSession(key, agentId);
    const renewed = await api.request('PATCH', '/v1/chat/subscription', { key, body: { plan: 'free' } });
    const createAfter = await openSession(key, agentId);

    // Assess
    expect(canceled.body.status).toBe('canceled');
    expectError(create, 403, 'SUBSCRIPTION_INACTIVE');
    expect(renewed.body.status).toBe('active');
    expect(renewed.body.subscriptionId).not.toBe(canceled.body.subscriptionId);
    expect(createAfter.status).toBe(201);
  });

  it('needs billing scopes: billing:read cannot change it, and usage needs usage:read', async () => {
    // Prepare
    const { orgId } = await api.newOrg();
    const reader = await api.newKey(orgId, ['billing:read']);

    // Act
    const read = await api.request('GET', '/v1/chat/subscription', { key: reader });
    const change = await api.request('POST', '/v1/chat/subscription/pause', { key: reader });
    const usage = await api.request('GET', '/v1/chat/usage', { key: reader });

    // Assess
    expect(read.status).toBe(200);
    expectError(change, 403, 'FORBIDDEN');
    expectError(usage, 403, 'FORBIDDEN');
  });

  it('has no checkout when billing is manual: 409 CHECKOUT_NOT_NEEDED, and PATCH changes the plan', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const checkout = await api.request('POST', '/v1/chat/subscription/checkout', { key, body: { plan: 'pro', successUrl: 'https://app.example.com/ok', cancelUrl: 'https://app.example.com' } });
    const changed = await api.request('PATCH', '/v1/chat/subscription', { key, body: { plan: 'pro' } });

    // Assess
    expectError(checkout, 409, 'CHECKOUT_NOT_NEEDED');
    expect(changed.body).toMatchObject({ currentPlan: 'pro', provider: 'manual' });
  });
});

describe('quota enforcement', () => {
  it('answers 429 QUOTA_EXCEEDED with Retry-After to the period end once the free plan’s messages are used, until the plan grows', async () => {
    // Prepare
    const { key, agentId } = await orgWithAgent();
    const session = await openSession(key, agentId);
    for (let turn = 0; turn < 2; turn += 1) expect((await send(key, session.body.id)).status).toBe(200);
    await eventually(
      async () => usageResponse.parse((await api.request('GET', '/v1/chat/usage', { key })).body),
      (usage) => usage.currentPeriod.metrics.chat_messages === 4,
    );
    // What a process read of the usage is trusted for QUOTA_CACHE_SECONDS (1 s here).
    await new Promise((resolve) => setTimeout(resolve, 1_100));

    // Act
    const refused = await send(key, session.body.id);
    const refusedCreate = await openSession(key, agentId);
    const usage = await api.request('GET', '/v1/chat/usage', { key });
    await api.request('PATCH', '/v1/chat/subscription', { key, body: { plan: 'pro' } });
    const afterUpgrade = await send(key, session.body.id);

    // Assess
    expectError(refused, 429, 'QUOTA_EXCEEDED');
    const now = new Date();
    const periodEnd = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(Math.abs(retryAfter - (periodEnd - now.getTime()) / 1000)).toBeLessThan(5);
    expectError(refusedCreate, 429, 'QUOTA_EXCEEDED');
    expect(usage.status).toBe(200);
    expect(usage.body.currentPeriod.quotas.chat_messages).toBe(4);
    expect(afterUpgrade.status, afterUpgrade.text).toBe(200);
    const history = await api.request('GET', `/api/v1/chat/sessions/${session.body.id}/messages?limit=100`, { key });
    expect(history.body.pagination.total).toBe(6);
  });
});

describe('usage.updated', () => {
  it('reaches a webhook with the period totals, at most once per roll-up interval, and only when they changed', async () => {
    // Prepare
    const { key, agentId } = await orgWithAgent();
    await api.request('PATCH', '/v1/chat/subscription', { key, body: { plan: 'pro' } });
    const path = `/ok/${crypto.randomUUID()}`;
    const endpoint = await api.request('POST', '/v1/chat/webhooks', { key, body: { url: receiverUrl + path, events: ['usage.updated'] } });
    receiver.secrets.set(path, [endpoint.body.secret]);
    const session = await openSession(key, agentId);

    // Act: three turns, the last one after the first roll-up.
    await send(key, session.body.id);
    await send(key, session.body.id);
    await eventually(() => receiver.for(path), (list) => list.length >= 1);
    await send(key, session.body.id);
    const receipts = await eventually(
      () => receiver.for(path),
      (list) => list.some((receipt) => receipt.body.data.metrics.chat_messages === 6),
    );
    // Nothing changes now: no further event may come.
    await new Promise((resolve) => setTimeout(resolve, (rollupSeconds + 1) * 1000));

    // Assess
    expect(receiver.for(path)).toHaveLength(receipts.length);
    const payloads = receipts.map((receipt) => eventSchemas['usage.updated'].parse(receipt.body));
    const counts = payloads.map((payload) => payload.data.metrics.chat_messages);
    expect(counts).toEqual([...new Set(counts)].sort((a, b) => a - b));
    expect(counts.at(-1)).toBe(6);
    for (let index = 1; index < payloads.length; index += 1) {
      const gap = Date.parse(payloads[index]?.createdAt ?? '') - Date.parse(payloads[index - 1]?.createdAt ?? '');
      expect(gap).toBeGreaterThanOrEqual(rollupSeconds * 1000);
    }
    const now = new Date();
    expect(payloads[0]?.data.period).toEqual({
      start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(),
      end: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
    });
    expect(payloads[0]?.data.metrics).toMatchObject({ voice_seconds: 0, knowledge_chunks: 0 });
  });
});
