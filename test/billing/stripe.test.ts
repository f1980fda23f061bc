/**
 * The Stripe side of billing: webhook events signed by the official library's test helper, and by the local
 * simulator (Stripe's signature scheme written out), verified by the route with the official library; the
 * Stripe adapter's calls answered by the simulator.
 */
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStripeSimulator, type StripeSimulator } from '../../infra/local/stripe-simulator.ts';
import { StripeBillingProvider, stripeClient } from '../../shared/billing/stripe.ts';
import { checkoutSessionCompleted } from '../fixtures/stripe/documented-examples.ts';
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

describe('Stripe checkout events', () => {
  /** Stripe's documented `checkout.session.completed`, for this organization's customer and subscription. */
  function checkoutCompleted(orgId: string, customer: string, subscription: string, plan = 'pro'): string {
    return JSON.stringify(checkoutSessionCompleted)
      .replaceAll('{{ORG_ID}}', orgId)
      .replaceAll('{{CUSTOMER_ID}}', customer)
      .replaceAll('{{SUBSCRIPTION_ID}}', subscription)
      .replace('"plan":"pro"', `"plan":"${plan}"`);
  }
  const signed = (payload: string) => post(payload, stripe.webhooks.generateTestHeaderString({ payload, secret: webhookSecret }));

  it('a paid checkout puts the organization on its plan, billed by Stripe; told again, it changes nothing', async () => {
    // Prepare
    const { key, orgId } = await api.newOrg();
    const completed = checkoutCompleted(orgId, 'cus_checkout1', 'sub_checkout1');

    // Act
    const first = await signed(completed);
    const subscription = await api.request('GET', '/v1/chat/subscription', { key });
    const again = await signed(completed);

    // Assess
    expect(first.body).toEqual({ received: true, applied: true });
    expect(subscription.body).toMatchObject({ status: 'active', currentPlan: 'pro', provider: 'stripe' });
    expect(again.body).toEqual({ received: true, applied: false });
  });

  it('ignores a checkout for a plan the catalog does not hold, and one that is not paid yet', async () => {
    // Prepare
    const { key, orgId } = await api.newOrg();
    const unknownPlan = checkoutCompleted(orgId, 'cus_checkout2', 'sub_checkout2', 'platinum');
    const open = checkoutCompleted(orgId, 'cus_checkout2', 'sub_checkout3').replace('"status":"complete"', '"status":"open"');

    // Act
    const answers = [await signed(unknownPlan), await signed(open)];

    // Assess
    for (const answer of answers) expect(answer.body).toEqual({ received: true, applied: false });
    expect((await api.request('GET', '/v1/chat/subscription', { key })).body).toMatchObject({ currentPlan: 'free', provider: 'manual' });
  });

  it('once linked, events of another subscription of the customer (one it replaced or ended) move nothing', async () => {
    // Prepare
    const { key, orgId } = await api.newOrg();
    await signed(checkoutCompleted(orgId, 'cus_checkout4', 'sub_linked4'));
    const endedElsewhere = JSON.stringify({ id: 'evt_x', object: 'event', type: 'customer.subscription.deleted', data: { object: { id: 'sub_old4', object: 'subscription', metadata: { orgId } } } });
    const linkedFailed = invoiceEvent('invoice.payment_failed', orgId).replace('"subscription":"sub_1"', '"subscription":"sub_linked4"');

    // Act
    const ignored = await signed(endedElsewhere);
    const afterIgnored = await api.request('GET', '/v1/chat/subscription', { key });
    const applied = await signed(linkedFailed);

    // Assess
    expect(ignored.body).toEqual({ received: true, applied: false });
    expect(afterIgnored.body.status).toBe('active');
    expect(applied.body).toEqual({ received: true, applied: true });
    expect((await api.request('GET', '/v1/chat/subscription', { key })).body.status).toBe('past_due');
  });
});

describe('Stripe adapter against the simulator', () => {
  it('pauses, resumes, swaps the price of and cancels the linked Stripe subscription', async () => {
    // Prepare
    const client = stripeClient({ STRIPE_SECRET_KEY: simulator.secretKey, STRIPE_API_URL: simulator.url });
    const price = (name: string) => client.prices.create({ currency: 'usd', unit_amount: 2900, recurring: { interval: 'month' }, product_data: { name } });
    const [pro, enterprise] = [await price('Pro'), await price('Enterprise')];
    const customer = await client.customers.create({ metadata: { orgId: 'org-1' } });
    const card = await client.paymentMethods.attach('pm_card_visa', { customer: customer.id });
    await client.customers.update(customer.id, { invoice_settings: { default_payment_method: card.id } });
    const created = await client.subscriptions.create({ customer: customer.id, items: [{ price: pro.id, quantity: 1 }], metadata: { orgId: 'org-1' } });
    const provider = new StripeBillingProvider(client, new Map([['pro', { flat: pro.id, metered: {} }], ['enterprise', { flat: enterprise.id, metered: {} }]]));
    const now = new Date().toISOString();
    const subscription = { orgId: 'org-1', subscriptionId: 'sub_x', status: 'active' as const, currentPlan: 'pro', provider: 'stripe' as const, providerCustomerId: customer.id, providerSubscriptionId: created.id, createdAt: now, updatedAt: now };
    const held = () => structuredClone(simulator.subscriptions.get(created.id) as { pause_collection: { behavior: string } | null; items: { data: { price: { id: string } }[] }; metadata: object; status: string });

    // Act
    await provider.apply(subscription, { kind: 'pause' });
    const paused = held();
    await provider.apply(subscription, { kind: 'resume' });
    const resumed = held();
    const link = await provider.apply(subscription, { kind: 'changePlan', plan: 'enterprise' });
    const changed = held();
    await provider.apply(subscription, { kind: 'cancel' });
    const unknownToStripe = await provider.apply({ ...subscription, providerSubscriptionId: 'sub_deleted_in_dashboard' }, { kind: 'cancel' });

    // Assess
    expect(paused.pause_collection?.behavior).toBe('void');
    expect(resumed.pause_collection).toBeNull();
    expect(link).toEqual({ providerSubscriptionId: created.id });
    expect(changed.items.data.map((item) => item.price.id)).toEqual([enterprise.id]);
    expect(changed.metadata).toEqual({ orgId: 'org-1', plan: 'enterprise' });
    expect(held().status).toBe('canceled');
    expect(unknownToStripe).toBeUndefined();
    expect(simulator.requests.find((request) => request.method === 'DELETE' && request.path === `/v1/subscriptions/${created.id}`)?.params).toEqual({ invoice_now: 'true', prorate: 'true' });
  });
});
