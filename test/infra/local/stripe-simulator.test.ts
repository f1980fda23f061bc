/**
 * The Stripe simulator against Stripe's documents, with the official `stripe` library as the client: it must take
 * what Stripe takes, answer in Stripe's shapes, and refuse what Stripe refuses (never more forgiving), or the
 * platform's tests against it prove nothing.
 */
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeStripeForm, startStripeSimulator, type StripeSimulator } from '../../../infra/local/stripe-simulator.ts';
import { errorAttributes, meterEventCreate } from '../../fixtures/stripe/documented-examples.ts';

let simulator: StripeSimulator;
let stripe: Stripe;

beforeAll(async () => {
  simulator = await startStripeSimulator({ secretKey: 'sk_test_simulator' });
  const { hostname, port } = new URL(simulator.url);
  stripe = new Stripe('sk_test_simulator', { host: hostname, port, protocol: 'http', telemetry: false, maxNetworkRetries: 2 });
});
afterAll(async () => {
  await simulator.stop();
});

async function meteredPrice(eventName: string) {
  const meter = await stripe.billing.meters.create({ display_name: eventName, event_name: eventName, default_aggregation: { formula: 'sum' } });
  return stripe.prices.create({ currency: 'usd', unit_amount: 1, recurring: { interval: 'month', usage_type: 'metered', meter: meter.id }, product_data: { name: eventName } });
}

const flatPrice = () => stripe.prices.create({ currency: 'usd', unit_amount: 2900, recurring: { interval: 'month' }, product_data: { name: 'Pro' } });

async function customerWithCard(token: 'pm_card_visa' | 'pm_card_chargeCustomerFail') {
  const customer = await stripe.customers.create({ metadata: { orgId: 'org-1' } });
  const method = await stripe.paymentMethods.attach(token, { customer: customer.id });
  await stripe.customers.update(customer.id, { invoice_settings: { default_payment_method: method.id } });
  return customer;
}

/** The error a call fails with, as the library raises it. */
async function failure(call: Promise<unknown>): Promise<Stripe.errors.StripeError> {
  try {
    await call;
  } catch (error) {
    return error as Stripe.errors.StripeError;
  }
  throw new Error('the call succeeded');
}

describe('Stripe simulator: the wire protocol', () => {
  it('reads form bodies as Stripe does: brackets nest, numeric segments index lists, an empty value unsets', () => {
    // Act
    const decoded = decodeStripeForm('items[0][price]=price_1&items[1][id]=si_2&items[1][deleted]=true&metadata[orgId]=a%20b&pause_collection=');

    // Assess
    expect(decoded).toEqual({ items: [{ price: 'price_1' }, { id: 'si_2', deleted: 'true' }], metadata: { orgId: 'a b' }, pause_collection: '' });
  });

  it('refuses a wrong key (401) and an unknown parameter (400 parameter_unknown), in Stripe’s error envelope', async () => {
    // Prepare
    const { hostname, port } = new URL(simulator.url);
    const wrongKey = new Stripe('sk_test_other', { host: hostname, port, protocol: 'http', telemetry: false });

    // Act
    const unauthorized = await failure(wrongKey.customers.create({}));
    const unknown = await failure(stripe.customers.create({ nickname: 'x' } as Stripe.CustomerCreateParams));
    const raw = await fetch(`${simulator.url}/v1/customers`, { method: 'POST', headers: { authorization: 'Bearer sk_test_simulator' }, body: 'nickname=x' });
    const body = (await raw.json()) as { error: Record<string, unknown> };

    // Assess
    expect(unauthorized).toBeInstanceOf(Stripe.errors.StripeAuthenticationError);
    expect(unknown).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect(unknown.code).toBe('parameter_unknown');
    expect(unknown.param).toBe('nickname');
    expect(raw.status).toBe(400);
    expect(Object.keys(body)).toEqual(['error']);
    expect(Object.keys(body.error).every((key) => (errorAttributes as readonly string[]).includes(key))).toBe(true);
  });

  it('replays an idempotent request’s first answer, refuses the key with other parameters, and executes a request once when its answer was lost', async () => {
    // Prepare
    const key = `idem-${crypto.randomUUID()}`;
    const post = (body: string) =>
      fetch(`${simulator.url}/v1/customers`, { method: 'POST', headers: { authorization: 'Bearer sk_test_simulator', 'idempotency-key': key, 'content-type': 'application/x-www-form-urlencoded' }, body });

    // Act
    const first = await post('metadata[orgId]=org-9');
    const again = await post('metadata[orgId]=org-9');
    const other = await post('metadata[orgId]=org-10');
    const before = simulator.customers.size;
    simulator.loseResponses('/v1/customers', 1);
    const created = await stripe.customers.create({ metadata: { orgId: 'org-lost' } });

    // Assess
    const firstBody = (await first.json()) as { id: string };
    expect(((await again.json()) as { id: string }).id).toBe(firstBody.id);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(other.status).toBe(400);
    expect(((await other.json()) as { error: { type: string } }).error.type).toBe('idempotency_error');
    // The library retried with the same key after the cut connection; the replay named the one customer made.
    expect(simulator.customers.size).toBe(before + 1);
    expect(simulator.customers.get(created.id)?.metadata).toEqual({ orgId: 'org-lost' });
  });
});

describe('Stripe simulator: billing meters', () => {
  it('takes the documented meter event and answers the documented shape', async () => {
    // Prepare
    await stripe.billing.meters.create({ display_name: 'AI search', event_name: meterEventCreate.request.event_name, default_aggregation: { formula: 'sum' } });
    const customer = await stripe.customers.create({});

    // Act
    const event = await stripe.billing.meterEvents.create({ ...meterEventCreate.request, payload: { ...meterEventCreate.request.payload, stripe_customer_id: customer.id } });

    // Assess
    expect(Object.keys(event).filter((key) => key !== 'lastResponse').sort()).toEqual(Object.keys(meterEventCreate.response).sort());
    expect(event).toMatchObject({ object: 'billing.meter_event', event_name: 'ai_search_api', identifier: 'identifier_123', payload: { value: '25', stripe_customer_id: customer.id } });
    expect(simulator.meteredTotal(customer.id, 'ai_search_api')).toBe(25);
    const [meter] = (await stripe.billing.meters.list()).data.filter((candidate) => candidate.event_name === 'ai_search_api');
    const now = Math.floor(Date.now() / 1000);
    const summaries = await stripe.billing.meters.listEventSummaries(String(meter?.id), { customer: customer.id, start_time: now - 3600, end_time: now + 60 });
    expect(summaries.data.map((summary) => summary.aggregated_value)).toEqual([25]);
  });

  it('accepts invalid events as Stripe does (200), never counts them, and reports each with Stripe’s code; refuses a reused identifier', async () => {
    // Prepare
    await meteredPrice('validated_units');
    const customer = await stripe.customers.create({});
    const send = (payload: Record<string, string>, extra: Partial<Stripe.Billing.MeterEventCreateParams> = {}) =>
      stripe.billing.meterEvents.create({ event_name: 'validated_units', payload, ...extra });

    // Act
    await send({ stripe_customer_id: customer.id, value: '2.5' });
    await send({ stripe_customer_id: 'cus_nobody', value: '1' });
    await send({ value: '1' });
    await stripe.billing.meterEvents.create({ event_name: 'no_such_meter', payload: { stripe_customer_id: customer.id, value: '1' } });
    await send({ stripe_customer_id: customer.id, value: '1' }, { timestamp: Math.floor(Date.now() / 1000) + 3600 });
    await send({ stripe_customer_id: customer.id, value: '3' }, { identifier: 'once-only' });
    const reused = await failure(send({ stripe_customer_id: customer.id, value: '3' }, { identifier: 'once-only' }));

    // Assess
    expect(simulator.meterEventErrors.slice(-5).map((error) => error.code)).toEqual([
      'meter_event_invalid_value',
      'meter_event_customer_not_found',
      'meter_event_no_customer_defined',
      'no_meter',
      'timestamp_in_future',
    ]);
    expect(simulator.meteredTotal(customer.id, 'validated_units')).toBe(3);
    expect(reused).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
  });
});

describe('Stripe simulator: subscriptions and Checkout', () => {
  it('creates a subscription with a flat and a metered price, refusing a quantity on the metered one, and charges the default card', async () => {
    // Prepare
    const [flat, metered, customer] = await Promise.all([flatPrice(), meteredPrice(`units_${crypto.randomUUID().slice(0, 8)}`), customerWithCard('pm_card_visa')]);

    // Act
    const withQuantity = await failure(stripe.subscriptions.create({ customer: customer.id, items: [{ price: metered.id, quantity: 1 }] }));
    const subscription = await stripe.subscriptions.create({ customer: customer.id, items: [{ price: flat.id, quantity: 1 }, { price: metered.id }], payment_behavior: 'error_if_incomplete' });

    // Assess
    expect(withQuantity.param).toBe('items[0][quantity]');
    expect(subscription.status).toBe('active');
    expect(subscription.items.data.map((item) => [item.price.id, item.quantity])).toEqual([
      [flat.id, 1],
      [metered.id, undefined],
    ]);
  });

  it('declines a card that fails its charge with 402 card_declined under error_if_incomplete, and creates nothing', async () => {
    // Prepare
    const [flat, customer] = await Promise.all([flatPrice(), customerWithCard('pm_card_chargeCustomerFail')]);
    const before = simulator.subscriptions.size;

    // Act
    const declined = await failure(stripe.subscriptions.create({ customer: customer.id, items: [{ price: flat.id, quantity: 1 }], payment_behavior: 'error_if_incomplete' }));
    const noCard = await failure(stripe.subscriptions.create({ customer: (await stripe.customers.create({})).id, items: [{ price: flat.id, quantity: 1 }], payment_behavior: 'error_if_incomplete' }));

    // Assess
    expect(declined).toBeInstanceOf(Stripe.errors.StripeCardError);
    expect(declined.code).toBe('card_declined');
    expect(noCard).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect(simulator.subscriptions.size).toBe(before);
  });

  it('updates items one by one (replace, delete, add) and pauses collection; cancels with the parameters in the query', async () => {
    // Prepare
    const [flat, other, metered, customer] = await Promise.all([flatPrice(), flatPrice(), meteredPrice(`units_${crypto.randomUUID().slice(0, 8)}`), customerWithCard('pm_card_visa')]);
    const subscription = await stripe.subscriptions.create({ customer: customer.id, items: [{ price: flat.id, quantity: 1 }, { price: metered.id }] });
    const [flatItem, meteredItem] = subscription.items.data;

    // Act
    const updated = await stripe.subscriptions.update(subscription.id, {
      items: [{ id: flatItem?.id, price: other.id }, { id: meteredItem?.id, deleted: true }],
      pause_collection: { behavior: 'void' },
      metadata: { plan: 'enterprise' },
    });
    const canceled = await stripe.subscriptions.cancel(subscription.id, { invoice_now: true, prorate: true });

    // Assess
    expect(updated.items.data.map((item) => item.price.id)).toEqual([other.id]);
    expect(updated.items.data[0]?.id).toBe(flatItem?.id);
    expect(updated.pause_collection?.behavior).toBe('void');
    expect(updated.metadata).toEqual({ plan: 'enterprise' });
    expect(canceled.status).toBe('canceled');
    expect(simulator.requests.at(-1)).toMatchObject({ method: 'DELETE', params: { invoice_now: 'true', prorate: 'true' } });
  });

  it('opens a Checkout Session in subscription mode whose hosted page, once paid, makes the subscription and completes the session', async () => {
    // Prepare
    const [flat, metered] = await Promise.all([flatPrice(), meteredPrice(`units_${crypto.randomUUID().slice(0, 8)}`)]);
    const customer = await stripe.customers.create({});

    // Act
    const missingQuantity = await failure(stripe.checkout.sessions.create({ mode: 'subscription', customer: customer.id, line_items: [{ price: flat.id }], success_url: 'https://example.com/ok' }));
    const session = await stripe.checkout.sessions.create({
      mode: 'subscription',
      customer: customer.id,
      line_items: [{ price: flat.id, quantity: 1 }, { price: metered.id }],
      success_url: 'https://example.com/ok?session={CHECKOUT_SESSION_ID}',
      cancel_url: 'https://example.com/cancel',
      subscription_data: { metadata: { orgId: 'org-7' } },
    });
    const paid = await fetch(session.url ?? '', { method: 'POST', body: new URLSearchParams({ payment_method: 'pm_card_visa' }), redirect: 'manual' });
    const completed = await stripe.checkout.sessions.retrieve(session.id);
    const subscription = await stripe.subscriptions.retrieve(String(completed.subscription));

    // Assess
    expect(missingQuantity.param).toBe('line_items[0][quantity]');
    expect(session).toMatchObject({ object: 'checkout.session', status: 'open', mode: 'subscription', subscription: null });
    expect(paid.status).toBe(303);
    expect(paid.headers.get('location')).toBe(`https://example.com/ok?session=${session.id}`);
    expect(completed).toMatchObject({ status: 'complete', payment_status: 'paid', customer: customer.id });
    expect(subscription).toMatchObject({ status: 'active', customer: customer.id, metadata: { orgId: 'org-7' } });
  });
});
