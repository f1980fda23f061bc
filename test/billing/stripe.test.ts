/**
 * The Stripe side of billing: webhook events signed by the official library's test helper, and by the local
 * simulator (Stripe's signature scheme written out), verified by the route with the official library; the
 * Stripe adapter's calls answered by the simulator.
 */
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStripeSimulator, type StripeSimulator } from '../../infra/local/stripe-simulator.ts';
import { StripeBillingProvider, stripeClient } from '../../shared/billing/stripe.ts';
import { expectError, startApi, type TestApi } from '../support/api.ts';

const webhookSecret = `whsec_${crypto.randomUUID().replaceAll('-', '')}`;
const stripe = new Stripe('sk_test_unused');
let api: TestApi;
let simulator: StripeSimulator;

beforeAll(async () => {
  api = await startApi({ STRIPE_WEBHOOK_SECRET: webhookSecret });
  simulator = await startStripeSimulator({ webhookUrl: `${api.baseUrl}/v1/billing/stripe/webhook`, webhookSecret });
});
afterAll(async () => {
  await simulator.stop();
  await api.close();
});

/** An invoice event as Stripe sends it, for the subscription of `orgId`. */
function invoiceEvent(type: string, orgId: string): string {
  return JSON.stringify({
    id: `evt_${crypto.randomUUID().replaceAll('-', '')}`,
    object: 'event',
    type,
    created: Math.floor(Date.now() / 1000),
    data: { object: { id: 'in_1', object: 'invoice', parent: { type: 'subscription_details', subscription_details: { subscription: 'sub_1', metadata: { orgId } } } } },
  });
}

const post = (payload: string, signature: string) =>
  api.request('POST', '/v1/billing/stripe/webhook', { rawBody: payload, headers: { 'content-type': 'application/json', 'stripe-signature': signature } });

describe('Stripe webhooks', () => {
  it('a failed payment makes the subscription past_due (still working in its grace period); a paid invoice makes it active again', async () => {
    // Prepare
    const { key, orgId } = await api.newOrg();
    const failed = invoiceEvent('invoice.payment_failed', orgId);
    const paid = invoiceEvent('invoice.paid', orgId);

    // Act
    const afterFailure = await post(failed, stripe.webhooks.generateTestHeaderString({ payload: failed, secret: webhookSecret }));
    const pastDue = await api.request('GET', '/v1/chat/subscription', { key });
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Grace', description: 'g', role: 'Helpful' } });
    const sessionInGrace = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
    const redelivered = await post(failed, stripe.webhooks.generateTestHeaderString({ payload: failed, secret: webhookSecret }));
    const afterPayment = await post(paid, stripe.webhooks.generateTestHeaderString({ payload: paid, secret: webhookSecret }));
    const active = await api.request('GET', '/v1/chat/subscription', { key });

    // Assess
    expect(afterFailure.status, afterFailure.text).toBe(200);
    expect(afterFailure.body).toEqual({ received: true, applied: true });
    expect(pastDue.body).toMatchObject({ status: 'past_due', pastDueSince: expect.any(String) });
    expect(sessionInGrace.status).toBe(201);
    expect(redelivered.body).toEqual({ received: true, applied: false });
    expect(afterPayment.body).toEqual({ received: true, applied: true });
    expect(active.body.status).toBe('active');
    expect(active.body.pastDueSince).toBeUndefined();
  });

  it('refuses a wrong, stale or missing signature with 401 INVALID_SIGNATURE and changes nothing', async () => {
    // Prepare
    const { key, orgId } = await api.newOrg();
    const failed = invoiceEvent('invoice.payment_failed', orgId);

    // Act
    const wrongSecret = await post(failed, stripe.webhooks.generateTestHeaderString({ payload: failed, secret: 'whsec_other' }));
    const stale = await post(failed, stripe.webhooks.generateTestHeaderString({ payload: failed, secret: webhookSecret, timestamp: Math.floor(Date.now() / 1000) - 600 }));
    const future = await post(failed, stripe.webhooks.generateTestHeaderString({ payload: failed, secret: webhookSecret, timestamp: Math.floor(Date.now() / 1000) + 3600 }));
    const altered = await post(failed.replace('invoice.payment_failed', 'invoice.paid'), stripe.webhooks.generateTestHeaderString({ payload: failed, secret: webhookSecret }));
    const missing = await post(failed, '');

    // Assess
    for (const response of [wrongSecret, stale, future, altered, missing]) expectError(response, 401, 'INVALID_SIGNATURE');
    expect((await api.request('GET', '/v1/chat/subscription', { key })).body.status).toBe('active');
  });

  it('signed a little ahead of our clock (within 5 minutes) is accepted', async () => {
    // Prepare
    const { key, orgId } = await api.newOrg();
    const failed = invoiceEvent('invoice.payment_failed', orgId);

    // Act
    const ahead = await post(failed, stripe.webhooks.generateTestHeaderString({ payload: failed, secret: webhookSecret, timestamp: Math.floor(Date.now() / 1000) + 200 }));

    // Assess
    expect(ahead.body).toEqual({ received: true, applied: true });
    expect((await api.request('GET', '/v1/chat/subscription', { key })).body.status).toBe('past_due');
  });

  it('acknowledges an event for an organization the platform does not have without applying it or storing anything', async () => {
    // Prepare
    const unknownOrgId = crypto.randomUUID();
    const failed = invoiceEvent('invoice.payment_failed', unknownOrgId);

    // Act
    const answer = await post(failed, stripe.webhooks.generateTestHeaderString({ payload: failed, secret: webhookSecret }));
    const keyOfThatId = await api.newKey(unknownOrgId, ['billing:read']);
    const subscription = await api.request('GET', '/v1/chat/subscription', { key: keyOfThatId });

    // Assess
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual({ received: true, applied: false });
    expect(subscription.body).toMatchObject({ status: 'active', currentPlan: 'free' });
    expect(subscription.body.pastDueSince).toBeUndefined();
  });

  it('accepts the simulator’s events, signed with Stripe’s scheme, and ignores events that move nothing', async () => {
    // Prepare
    const { key, orgId } = await api.newOrg();

    // Act
    const deleted = await simulator.sendEvent('customer.subscription.deleted', { id: 'sub_2', object: 'subscription', metadata: { orgId } });
    const unrelated = await simulator.sendEvent('customer.created', { id: 'cus_1', object: 'customer' });

    // Assess
    expect(deleted).toBe(200);
    expect(unrelated).toBe(200);
    expect((await api.request('GET', '/v1/chat/subscription', { key })).body.status).toBe('canceled');
  });
});

describe('Stripe adapter against the simulator', () => {
  it('pauses, resumes, changes the price and cancels the linked Stripe subscription', async () => {
    // Prepare
    const client = stripeClient({ STRIPE_SECRET_KEY: 'sk_test_local', STRIPE_API_URL: simulator.url });
    const created = await client.subscriptions.create({ customer: 'cus_1', items: [{ price: 'price_free' }], metadata: { orgId: 'org-1' } });
    const provider = new StripeBillingProvider(client, { pro: 'price_pro' });
    const now = new Date().toISOString();
    const subscription = { orgId: 'org-1', subscriptionId: 'sub_x', status: 'active' as const, currentPlan: 'free', provider: 'stripe' as const, providerSubscriptionId: created.id, createdAt: now, updatedAt: now };

    // Act
    await provider.apply(subscription, { kind: 'pause' });
    const paused = { ...(simulator.subscriptions.get(created.id)?.form as Record<string, string>) };
    await provider.apply(subscription, { kind: 'changePlan', plan: 'pro' });
    const changed = { ...(simulator.subscriptions.get(created.id)?.form as Record<string, string>) };
    await provider.apply(subscription, { kind: 'cancel' });

    // Assess
    expect(paused['pause_collection[behavior]']).toBe('void');
    expect(changed['items[0][price]']).toBe('price_pro');
    expect(changed['metadata[plan]']).toBe('pro');
    expect(simulator.subscriptions.get(created.id)?.status).toBe('canceled');
    await expect(provider.apply(subscription, { kind: 'changePlan', plan: 'platinum' })).rejects.toThrow(/no price/);
  });
});
