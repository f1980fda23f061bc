/**
 * Stripe billing that bills, end to end on the local runtime against the Stripe simulator: the account is set up as
 * a user sets up theirs (a meter and prices made with the official `stripe` library), the platform runs with
 * BILLING_PROVIDER=stripe, the customer pays on the hosted Checkout page, Stripe's signed events come back to the
 * webhook route, and the usage roll-up reports chat messages to the meter. `pro` bills chat messages by use.
 */
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStripeSimulator, type StripeObject, type StripeSimulator } from '../../infra/local/stripe-simulator.ts';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';

const secretKey = 'sk_test_billing';
const proPlan = { name: 'Pro', quotas: { chat_messages: 100_000, voice_seconds: 60_000, knowledge_chunks: 100_000 }, concurrentCalls: 10, requestsPerSecond: 50, burst: 100, meteredMetrics: ['chat_messages'] };
let simulator: StripeSimulator;
let stripe: Stripe;
let api: TestApi;
const prices: Record<'proFlat' | 'proMessages' | 'enterprise', string> = { proFlat: '', proMessages: '', enterprise: '' };

beforeAll(async () => {
  simulator = await startStripeSimulator({ secretKey });
  const { hostname, port } = new URL(simulator.url);
  stripe = new Stripe(secretKey, { host: hostname, port, protocol: 'http', telemetry: false });
  const meter = await stripe.billing.meters.create({ display_name: 'Chat messages', event_name: 'chat_messages', default_aggregation: { formula: 'sum' } });
  const monthly = (unitAmount: number, name: string) => stripe.prices.create({ currency: 'usd', unit_amount: unitAmount, recurring: { interval: 'month' }, product_data: { name } });
  prices.proFlat = (await monthly(2900, 'Pro')).id;
  prices.enterprise = (await monthly(99_000, 'Enterprise')).id;
  prices.proMessages = (await stripe.prices.create({ currency: 'usd', unit_amount: 1, recurring: { interval: 'month', usage_type: 'metered', meter: meter.id }, product_data: { name: 'Chat messages' } })).id;
  api = await startApi(
    {
      BILLING_PROVIDER: 'stripe',
      STRIPE_SECRET_KEY: secretKey,
      STRIPE_API_URL: simulator.url,
      STRIPE_WEBHOOK_SECRET: simulator.webhookSecret,
      STRIPE_PRICES: JSON.stringify({ pro: { price: prices.proFlat, metered: { chat_messages: prices.proMessages } }, enterprise: prices.enterprise }),
      PLANS: JSON.stringify({ pro: proPlan }),
      USAGE_ROLLUP_SECONDS: '1',
    },
    // A roll-up whose report failed comes back within seconds, not the declared 40.
    { streamPoller: true, queues: { visibilityTimeoutSeconds: 2 } },
  );
  simulator.webhookUrl = `${api.baseUrl}/v1/billing/stripe/webhook`;
  // Loads the handlers a turn and its counting go through, once, before the tests time anything.
  const { key, sessionId } = await orgWithAgent();
  await turn(key, sessionId);
  await countedMessages(key, 2);
});
afterAll(async () => {
  await api.close();
  await simulator.stop();
});

async function orgWithAgent() {
  const { key, orgId } = await api.newOrg();
  const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Billed', description: 'b', role: 'Helpful' } });
  expect(agent.status, agent.text).toBe(201);
  const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
  expect(session.status, session.text).toBe(201);
  return { key, orgId, sessionId: session.body.id as string };
}

/** One turn: the user's message and the reply, 2 chat_messages. */
async function turn(key: string, sessionId: string) {
  const sent = await api.request('POST', `/v1/chat/chat/sessions/${sessionId}/messages`, { key, body: { content: 'hello', stream: false } });
  expect(sent.status, sent.text).toBe(200);
}

/** The month's chat messages once the meter counted `expected` of them. */
async function countedMessages(key: string, expected: number): Promise<number> {
  const read = async () => ((await api.request('GET', '/v1/chat/usage', { key })).body.currentPeriod.metrics.chat_messages as number);
  const counted = await eventually(read, (value) => value === expected);
  expect(counted).toBe(expected);
  return counted;
}

const checkout = (key: string, plan: string) =>
  api.request('POST', '/v1/chat/subscription/checkout', { key, body: { plan, successUrl: 'https://app.example.com/billing?session={CHECKOUT_SESSION_ID}', cancelUrl: 'https://app.example.com/billing' } });

/** What the customer does on the hosted page: pays with a test card; Stripe then tells the webhook. */
async function pay(url: string, card: 'pm_card_visa' | 'pm_card_chargeCustomerFail' = 'pm_card_visa') {
  return fetch(url, { method: 'POST', body: new URLSearchParams({ payment_method: card }), redirect: 'manual' });
}

async function subscriptionOnceLinked(key: string, plan: string) {
  const read = async () => (await api.request('GET', '/v1/chat/subscription', { key })).body;
  const subscription = await eventually(read, (body) => body.currentPlan === plan && body.provider === 'stripe');
  expect(subscription).toMatchObject({ currentPlan: plan, provider: 'stripe', status: 'active' });
  return subscription;
}

const customerOf = (orgId: string) => [...simulator.customers.values()].filter((customer) => (customer.metadata as Record<string, string>).orgId === orgId);

/** The counts each meter event of the customer reported, `[from, to]`, from their identifiers (`cus:month:metric:from-to`). */
function reportedRanges(customerId: string): [number, number][] {
  return simulator.meterEvents
    .filter((event) => (event.payload as Record<string, string>).stripe_customer_id === customerId)
    .map((event) => String(event.identifier).split(':').at(-1)?.split('-').map(Number) as [number, number])
    .sort((a, b) => a[0] - b[0]);
}

/** Ranges that follow each other without a gap or an overlap: every message billed once. */
function expectContiguous(ranges: [number, number][], from: number, to: number) {
  expect(ranges[0]?.[0]).toBe(from);
  expect(ranges.at(-1)?.[1]).toBe(to);
  ranges.slice(1).forEach((range, index) => expect(range[0]).toBe(ranges[index]?.[1]));
}

async function customerWithCard(orgId: string, key: string, card: 'pm_card_visa' | 'pm_card_chargeCustomerFail') {
  // A checkout the customer left unpaid made the organization's Stripe customer; they then saved a card (in Stripe's portal).
  expect((await checkout(key, 'pro')).status).toBe(201);
  const [customer] = customerOf(orgId);
  const method = await stripe.paymentMethods.attach(card, { customer: String(customer?.id) });
  await stripe.customers.update(String(customer?.id), { invoice_settings: { default_payment_method: method.id } });
  return String(customer?.id);
}

describe('choosing a paid plan through Checkout', () => {
  it('opens a Checkout for the plan’s prices; once paid, the organization is on the plan and its chat messages from then on are billed to the meter, each once', async () => {
    // Prepare
    const { key, orgId, sessionId } = await orgWithAgent();
    await turn(key, sessionId);
    await countedMessages(key, 2);

    // Act
    const started = await checkout(key, 'pro');
    const beforePayment = await api.request('GET', '/v1/chat/subscription', { key });
    const paid = await pay(started.body.url);
    const subscription = await subscriptionOnceLinked(key, 'pro');
    const again = await checkout(key, 'enterprise');
    await turn(key, sessionId);
    await turn(key, sessionId);
    await countedMessages(key, 6);
    const [customer] = customerOf(orgId);
    const billed = await eventually(() => simulator.meteredTotal(String(customer?.id), 'chat_messages'), (total) => total === 4);

    // Assess
    expect(started.status, started.text).toBe(201);
    expect(started.body).toMatchObject({ id: expect.stringMatching(/^cs_test_/), url: `${simulator.url}/c/pay/${started.body.id}`, plan: 'pro' });
    expect(Date.parse(started.body.expiresAt)).toBeGreaterThan(Date.now());
    const sessionRequest = simulator.requests.find((request) => request.path === '/v1/checkout/sessions' && request.status === 200 && (request.params.metadata as StripeObject).orgId === orgId);
    expect(sessionRequest?.params).toMatchObject({
      mode: 'subscription',
      customer: customer?.id,
      line_items: [{ price: prices.proFlat, quantity: '1' }, { price: prices.proMessages }],
      metadata: { orgId, plan: 'pro' },
      subscription_data: { metadata: { orgId, plan: 'pro' } },
    });
    expect(beforePayment.body).toMatchObject({ currentPlan: 'free', provider: 'manual' });
    expect(paid.status).toBe(303);
    expect(subscription.subscriptionId).toBe(beforePayment.body.subscriptionId);
    expectError(again, 409, 'CHECKOUT_NOT_NEEDED');
    expect(billed).toBe(4);
    // The two messages before the plan are not billed; the four after are, in ranges that neither gap nor overlap.
    expectContiguous(reportedRanges(String(customer?.id)), 2, 6);
    expect(simulator.meterEventErrors).toEqual([]);
    const meterRequests = simulator.requests.filter((request) => request.path === '/v1/billing/meter_events');
    for (const request of meterRequests) expect(request.idempotencyKey).toBe(request.params.identifier);
  });

  it('reports each message once when Stripe’s answers are lost: the library retries with the same key, the roll-up sends the same report again', async () => {
    // Prepare
    const { key, orgId, sessionId } = await orgWithAgent();
    await pay((await checkout(key, 'pro')).body.url);
    await subscriptionOnceLinked(key, 'pro');
    const [customer] = customerOf(orgId);
    // The first report's three attempts (the library's two retries) are executed, their answers cut.
    simulator.loseResponses('/v1/billing/meter_events', 3);

    // Act
    await turn(key, sessionId);
    await countedMessages(key, 2);
    // The failed roll-up comes back and sends its report again: Stripe replays the answer it saved.
    const meterEventRequests = () => simulator.requests.filter((request) => request.path === '/v1/billing/meter_events' && (request.params.payload as StripeObject).stripe_customer_id === customer?.id);
    const replayed = await eventually(() => meterEventRequests().filter((request) => request.replayed), (requests) => requests.length > 0);

    // Assess
    expect(replayed.length).toBeGreaterThan(0);
    expect(simulator.meteredTotal(String(customer?.id), 'chat_messages')).toBe(2);
    expectContiguous(reportedRanges(String(customer?.id)), 0, 2);
    expect(new Set(meterEventRequests().map((request) => request.params.identifier)).size).toBe(1);
  });

  it('refuses a checkout for a free plan, an unknown plan, and a return URL that is not http(s)', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const free = await checkout(key, 'free');
    const unknown = await checkout(key, 'platinum');
    const badUrl = await api.request('POST', '/v1/chat/subscription/checkout', { key, body: { plan: 'pro', successUrl: 'javascript:alert(1)', cancelUrl: 'https://app.example.com' } });

    // Assess
    expectError(free, 409, 'CHECKOUT_NOT_NEEDED');
    expectError(unknown, 422, 'UNKNOWN_PLAN');
    expectError(badUrl, 400, 'VALIDATION_ERROR');
  });

  it('answers 503 UPSTREAM_UNAVAILABLE when Stripe does not answer, and a retry makes no second customer', async () => {
    // Prepare
    const { key, orgId } = await api.newOrg();
    simulator.loseResponses('/v1/checkout/sessions', 3);

    // Act
    const unanswered = await checkout(key, 'pro');
    const retried = await checkout(key, 'pro');

    // Assess
    expectError(unanswered, 503, 'UPSTREAM_UNAVAILABLE');
    expect(retried.status, retried.text).toBe(201);
    expect(customerOf(orgId)).toHaveLength(1);
  });
});

describe('choosing a paid plan with a card on file', () => {
  it('subscribes at once when the customer has a default card, charging it (error_if_incomplete)', async () => {
    // Prepare
    const { key, orgId } = await api.newOrg();
    const customerId = await customerWithCard(orgId, key, 'pm_card_visa');

    // Act
    const changed = await api.request('PATCH', '/v1/chat/subscription', { key, body: { plan: 'enterprise' } });

    // Assess
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body).toMatchObject({ currentPlan: 'enterprise', provider: 'stripe', status: 'active' });
    const [made] = [...simulator.subscriptions.values()].filter((subscription) => subscription.customer === customerId);
    expect(made).toMatchObject({ status: 'active', metadata: { orgId, plan: 'enterprise' } });
    expect((made?.items as { data: { price: { id: string } }[] }).data.map((item) => item.price.id)).toEqual([prices.enterprise]);
    expect(simulator.requests.find((request) => request.method === 'POST' && request.path === '/v1/subscriptions' && request.params.customer === customerId)?.params.payment_behavior).toBe('error_if_incomplete');
  });

  it('answers 402 PAYMENT_METHOD_REQUIRED without a card and 402 PAYMENT_FAILED when the card is declined; the plan stays', async () => {
    // Prepare
    const { key: withoutCard } = await api.newOrg();
    const declining = await api.newOrg();
    const customerId = await customerWithCard(declining.orgId, declining.key, 'pm_card_chargeCustomerFail');

    // Act
    const noCard = await api.request('PATCH', '/v1/chat/subscription', { key: withoutCard, body: { plan: 'pro' } });
    const declined = await api.request('PATCH', '/v1/chat/subscription', { key: declining.key, body: { plan: 'pro' } });

    // Assess
    expectError(noCard, 402, 'PAYMENT_METHOD_REQUIRED');
    expect(noCard.body.error.message).toContain('/v1/chat/subscription/checkout');
    expectError(declined, 402, 'PAYMENT_FAILED');
    for (const key of [withoutCard, declining.key]) expect((await api.request('GET', '/v1/chat/subscription', { key })).body).toMatchObject({ currentPlan: 'free', provider: 'manual' });
    expect([...simulator.subscriptions.values()].filter((subscription) => subscription.customer === customerId)).toEqual([]);
  });
});

describe('changing a plan billed by Stripe', () => {
  it('reports the usage counted so far before the prices change, swaps them item by item, and on a move to free cancels at Stripe (usage invoiced now) while the organization stays active', async () => {
    // Prepare
    const { key, orgId, sessionId } = await orgWithAgent();
    await pay((await checkout(key, 'pro')).body.url);
    await subscriptionOnceLinked(key, 'pro');
    const [customer] = customerOf(orgId);
    const customerId = String(customer?.id);
    const [linked] = [...simulator.subscriptions.values()].filter((subscription) => subscription.customer === customerId);
    await turn(key, sessionId);
    await countedMessages(key, 2);

    // Act
    const toEnterprise = await api.request('PATCH', '/v1/chat/subscription', { key, body: { plan: 'enterprise' } });
    const billedAtChange = simulator.meteredTotal(customerId, 'chat_messages');
    const itemsAfter = (simulator.subscriptions.get(String(linked?.id))?.items as { data: { price: { id: string } }[] }).data.map((item) => item.price.id);
    const toFree = await api.request('PATCH', '/v1/chat/subscription', { key, body: { plan: 'free' } });
    const deleted = await eventually(
      () => simulator.deliveries.find((delivery) => delivery.type === 'customer.subscription.deleted' && delivery.objectId === linked?.id),
      (delivery) => delivery !== undefined,
    );
    const afterEvent = await api.request('GET', '/v1/chat/subscription', { key });

    // Assess
    expect(toEnterprise.body).toMatchObject({ currentPlan: 'enterprise', provider: 'stripe' });
    expect(billedAtChange).toBe(2);
    expect(itemsAfter).toEqual([prices.enterprise]);
    expect(toFree.body).toMatchObject({ currentPlan: 'free', provider: 'manual', status: 'active' });
    expect(simulator.subscriptions.get(String(linked?.id))?.status).toBe('canceled');
    expect(simulator.requests.find((request) => request.method === 'DELETE' && request.path === `/v1/subscriptions/${String(linked?.id)}`)?.params).toEqual({ invoice_now: 'true', prorate: 'true' });
    // Stripe tells of the cancellation it made for us; the organization, now on free, is not canceled by it.
    expect(deleted?.status).toBe(200);
    expect(afterEvent.body).toMatchObject({ currentPlan: 'free', status: 'active' });
  });
});
