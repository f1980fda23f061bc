/**
 * A pause made in Stripe reaches the subscription. Stripe reports a pause of collection (`pause_collection`, what
 * this platform sets, and what Stripe's dashboard sets) as `customer.subscription.updated`, never as `.paused` or
 * `.resumed`, which are for a status of `paused` (https://docs.stripe.com/billing/subscriptions/pause-payment).
 * Stripe's event objects are kept as fixtures (test/fixtures/stripe/), signed with the stripe package.
 */
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fixtures from '../fixtures/stripe/subscription-events.json' with { type: 'json' };
import { startApi, type TestApi } from '../support/api.ts';

const webhookSecret = `whsec_${crypto.randomUUID().replaceAll('-', '')}`;
const stripe = new Stripe('sk_test_unused');
let api: TestApi;

beforeAll(async () => {
  api = await startApi({ STRIPE_WEBHOOK_SECRET: webhookSecret });
});
afterAll(() => api.close());

/** A documented event for `orgId`, as Stripe sends it: a fresh id, signed. */
async function deliver(name: keyof typeof fixtures.events, orgId: string) {
  const payload = JSON.stringify({ ...fixtures.events[name], id: `evt_${crypto.randomUUID().replaceAll('-', '')}` }).replaceAll('{orgId}', orgId);
  return api.request('POST', '/v1/billing/stripe/webhook', {
    rawBody: payload,
    headers: { 'content-type': 'application/json', 'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload, secret: webhookSecret }) },
  });
}

const statusOf = async (key: string) => (await api.request('GET', '/v1/chat/subscription', { key })).body.status;

describe('Stripe pauses', () => {
  it('customer.subscription.updated that sets pause_collection pauses the subscription; the one that clears it resumes it', async () => {
    // Prepare
    const { key, orgId } = await api.newOrg();

    // Act
    const paused = await deliver('collectionPaused', orgId);
    const whilePaused = await statusOf(key);
    const resumed = await deliver('collectionResumed', orgId);

    // Assess
    expect(paused.body).toEqual({ received: true, applied: true });
    expect(whilePaused).toBe('paused');
    expect(resumed.body).toEqual({ received: true, applied: true });
    expect(await statusOf(key)).toBe('active');
  });

  it('the same event again, or an update that does not touch the pause, changes nothing', async () => {
    const { key, orgId } = await api.newOrg();
    await deliver('collectionPaused', orgId);

    const again = await deliver('collectionPaused', orgId);
    const unrelated = await deliver('metadataUpdated', orgId);

    expect(again.body).toEqual({ received: true, applied: false });
    expect(unrelated.body).toEqual({ received: true, applied: false });
    expect(await statusOf(key)).toBe('paused');
  });

  it("the echo of a pause made through the API (Stripe's event for our own pause_collection) is acknowledged without a second change", async () => {
    const { key, orgId } = await api.newOrg();
    const pausedByApi = await api.request('POST', '/v1/chat/subscription/pause', { key });

    const echo = await deliver('collectionPaused', orgId);

    expect(pausedByApi.status, pausedByApi.text).toBe(200);
    expect(echo.body).toEqual({ received: true, applied: false });
    expect(await statusOf(key)).toBe('paused');
  });

  it('customer.subscription.paused (a status of paused) still pauses it', async () => {
    const { key, orgId } = await api.newOrg();

    const paused = await deliver('statusPaused', orgId);

    expect(paused.body).toEqual({ received: true, applied: true });
    expect(await statusOf(key)).toBe('paused');
  });
});
