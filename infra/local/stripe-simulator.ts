import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A Stripe stand-in for the local runtime, speaking Stripe's wire protocol for what the platform uses, and no more
 * forgiving than Stripe (docs/usage-and-billing.md#the-stripe-simulator):
 * - the API: form-encoded bodies (`items[0][price]=…`; DELETE takes its parameters in the query string), the secret
 *   key as `Authorization: Bearer sk_…` (or Basic, as `curl -u` sends it), JSON answers in Stripe's shapes and its
 *   error envelope (`{error: {type, code?, param?, message}}`), unknown parameters refused (`parameter_unknown`);
 * - idempotency as https://docs.stripe.com/api/idempotent_requests describes it: a POST's `Idempotency-Key` saves
 *   the first answer (success or failure, once the endpoint began executing) and replays it (`Idempotent-Replayed:
 *   true`); the key with other parameters is a 400 `idempotency_error`; the key while its request runs, a 409;
 * - customers, payment methods (the test tokens `pm_card_visa` and `pm_card_chargeCustomerFail`, whose charges are
 *   declined), prices, billing meters, subscriptions (created, updated item by item, canceled), Checkout Sessions
 *   with a hosted page (`GET /c/pay/{id}`) where the customer pays, and meter events (validated as Stripe validates
 *   them: the request synchronously, the event asynchronously, an invalid event left out of the sums and reported
 *   in `meterEventErrors`, as Stripe's `v1.billing.meter.error_report_triggered` does);
 * - webhooks: what changes is told to the platform as Stripe tells it (checkout.session.completed,
 *   customer.subscription.created/updated/deleted), signed exactly as Stripe signs (`Stripe-Signature:
 *   t=<unix s>,v1=<hex HMAC-SHA256 of "<t>.<body>">` with the `whsec_…` secret), so the official library verifies
 *   them; `POST /_simulator/events {type, object}` sends any event (what the Stripe CLI's `trigger` does).
 */
export interface StripeSimulator {
  url: string;
  webhookSecret: string;
  /** The secret key the API accepts. */
  secretKey: string;
  /** Where events are sent: the platform's webhook route (set once the platform listens). */
  webhookUrl: string | undefined;
  /** The account's objects as the API answers them, by id. */
  customers: Map<string, StripeObject>;
  subscriptions: Map<string, StripeObject>;
  checkoutSessions: Map<string, StripeObject>;
  prices: Map<string, StripeObject>;
  meters: Map<string, StripeObject>;
  /** Meter events accepted and valid (those the meters sum), in arrival order. */
  meterEvents: StripeObject[];
  /** Meter events accepted but invalid, with Stripe's error code (`no_meter`, `meter_event_customer_not_found` …). */
  meterEventErrors: { code: string; message: string; event: StripeObject }[];
  /** Every API request answered (not those whose answer was lost), in order. */
  requests: RecordedRequest[];
  /** Events sent to the webhook URL, with the platform's answer (0 when it could not be reached). */
  deliveries: { type: string; objectId: unknown; status: number }[];
  /** The sum of the valid meter events of a customer for an event name: what the meter bills. */
  meteredTotal(customerId: string, eventName: string): number;
  /** The next `count` API requests to `path` are executed, then their connection is cut before the answer. */
  loseResponses(path: string, count: number): void;
  /** Sends a signed event to the webhook URL; resolves with the platform's answer status. */
  sendEvent(type: string, object: StripeObject, previousAttributes?: StripeObject): Promise<number>;
  /**
   * Sets the account up for paid plans as a user sets up theirs: a monthly price each, a meter per metric billed by
   * use (its event name the metric's) and a metered price on it. Returns STRIPE_PRICES for them.
   */
  seedPlans(plans: readonly { id: string; name: string; meteredMetrics: readonly string[] }[]): Record<string, { price: string; metered: Record<string, string> }>;
  stop(): Promise<void>;
}

export type StripeObject = Record<string, unknown>;

export interface RecordedRequest {
  method: string;
  path: string;
  params: StripeObject;
  idempotencyKey: string | undefined;
  status: number;
  replayed: boolean;
}

/** Stripe's test payment methods (https://docs.stripe.com/testing#cards): attaching works; charges of the second fail. */
const testPaymentMethods: Record<string, { brand: string; last4: string; declines: boolean }> = {
  pm_card_visa: { brand: 'visa', last4: '4242', declines: false },
  pm_card_chargeCustomerFail: { brand: 'visa', last4: '0341', declines: true },
};

const apiVersion = '2026-10-28.endive';
const maxIdempotencyKeyLength = 255;
const meterEventIdentifierMaxLength = 100;
/** Meter events may be dated up to 35 days back and 5 minutes ahead (https://docs.stripe.com/api/billing/meter-event/create). */
const meterEventPastSeconds = 35 * 24 * 3600;
const meterEventFutureSeconds = 300;

/** A refusal in Stripe's error envelope. */
class StripeError extends Error {
  readonly status: number;
  readonly body: { type: string; code?: string; param?: string; decline_code?: string; message: string };
  /** Refused before the endpoint began executing: not saved for the idempotency key (the request may be retried). */
  readonly beforeExecution: boolean;

  constructor(status: number, body: StripeError['body'], beforeExecution = status === 400 || status === 401 || status === 404) {
    super(body.message);
    this.status = status;
    this.body = body;
    this.beforeExecution = beforeExecution;
  }
}

const invalid = (message: string, extra: { code?: string; param?: string } = {}) => new StripeError(400, { type: 'invalid_request_error', ...extra, message });
const missing = (kind: string, id: unknown, param?: string) =>
  new StripeError(404, { type: 'invalid_request_error', code: 'resource_missing', ...(param ? { param } : {}), message: `No such ${kind}: '${String(id)}'` });
const parameterMissing = (param: string) => invalid(`Missing required param: ${param}.`, { code: 'parameter_missing', param });

const newId = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;
const nowSeconds = () => Math.floor(Date.now() / 1000);

/**
 * A form-encoded body as Stripe reads it: `a[b][0][c]=v` is `{a: {b: [{c: 'v'}]}}` (numeric segments index arrays),
 * and an empty value is kept as '' (Stripe's "unset").
 */
export function decodeStripeForm(raw: string): StripeObject {
  const root: StripeObject = {};
  for (const [key, value] of new URLSearchParams(raw)) {
    const segments = key.replace(/\]/g, '').split('[');
    let node: Record<string, unknown> | unknown[] = root;
    segments.forEach((segment, index) => {
      const last = index === segments.length - 1;
      const container = node as Record<string, unknown>;
      if (last) {
        container[segment] = value;
        return;
      }
      const nextIsIndex = /^\d+$/.test(segments[index + 1] as string);
      container[segment] ??= nextIsIndex ? [] : {};
      node = container[segment] as Record<string, unknown>;
    });
  }
  return root;
}

/** Refuses parameters the endpoint does not take, as Stripe does, naming the first one in Stripe's bracket form. */
function allowOnly(params: StripeObject, allowed: readonly string[], prefix = ''): void {
  for (const key of Object.keys(params)) {
    if (!allowed.includes(key)) {
      const param = prefix ? `${prefix}[${key}]` : key;
      throw invalid(`Received unknown parameter: ${param}`, { code: 'parameter_unknown', param });
    }
  }
}

const asRecord = (value: unknown): StripeObject => (value && typeof value === 'object' && !Array.isArray(value) ? (value as StripeObject) : {});
const asList = (value: unknown): StripeObject[] => (Array.isArray(value) ? value.map(asRecord) : []);
const metadataOf = (value: unknown): Record<string, string> => Object.fromEntries(Object.entries(asRecord(value)).map(([key, entry]) => [key, String(entry)]));
const isTrue = (value: unknown) => value === 'true';

export async function startStripeSimulator(options: { webhookUrl?: string | undefined; webhookSecret?: string | undefined; secretKey?: string | undefined; host?: string }): Promise<StripeSimulator> {
  const webhookSecret = options.webhookSecret ?? `whsec_${randomBytes(24).toString('base64url')}`;
  const secretKey = options.secretKey ?? 'sk_test_local';
  const host = options.host ?? '127.0.0.1';
  const customers = new Map<string, StripeObject>();
  const paymentMethods = new Map<string, StripeObject & { declines: boolean }>();
  const prices = new Map<string, StripeObject>();
  const meters = new Map<string, StripeObject>();
  const subscriptions = new Map<string, StripeObject>();
  const checkoutSessions = new Map<string, StripeObject>();
  /** A session's line items and subscription metadata are not on the Session object (Stripe keeps them aside). */
  const sessionLineItems = new Map<string, StripeObject[]>();
  const subscriptionMetadata = new Map<string, Record<string, string>>();
  const meterEvents: StripeObject[] = [];
  const meterEventErrors: StripeSimulator['meterEventErrors'] = [];
  const meterEventIdentifiers = new Set<string>();
  const requests: RecordedRequest[] = [];
  const deliveries: StripeSimulator['deliveries'] = [];
  const saved = new Map<string, { fingerprint: string; status: number; body: unknown }>();
  const inFlight = new Set<string>();
  const lostResponses = new Map<string, number>();
  let url = '';

  const simulator: StripeSimulator = {
    url: '',
    webhookSecret,
    secretKey,
    webhookUrl: options.webhookUrl,
    customers,
    subscriptions,
    checkoutSessions,
    prices,
    meters,
    meterEvents,
    meterEventErrors,
    requests,
    deliveries,
    meteredTotal: (customerId, eventName) =>
      meterEvents
        .filter((event) => event.event_name === eventName && asRecord(event.payload).stripe_customer_id === customerId)
        .reduce((sum, event) => sum + Number(asRecord(event.payload).value), 0),
    loseResponses: (path, count) => lostResponses.set(path, count),
    sendEvent,
    seedPlans: (plans) => {
      const meterOf = (metric: string) =>
        [...meters.values()].find((meter) => meter.event_name === metric) ?? createMeter({ display_name: metric, event_name: metric, default_aggregation: { formula: 'sum' } });
      return Object.fromEntries(
        plans.map((plan) => [
          plan.id,
          {
            price: String(createPrice({ currency: 'usd', unit_amount: '2900', recurring: { interval: 'month' }, product_data: { name: plan.name } }).id),
            metered: Object.fromEntries(
              plan.meteredMetrics.map((metric) => [
                metric,
                String(createPrice({ currency: 'usd', unit_amount: '1', recurring: { interval: 'month', usage_type: 'metered', meter: meterOf(metric).id }, product_data: { name: `${plan.name}: ${metric}` } }).id),
              ]),
            ),
          },
        ]),
      );
    },
    stop: () => new Promise((closed) => server.close(() => closed())),
  };

  async function sendEvent(type: string, object: StripeObject, previousAttributes?: StripeObject): Promise<number> {
    const target = simulator.webhookUrl;
    if (!target) return 0;
    const body = JSON.stringify({
      id: newId('evt'),
      object: 'event',
      api_version: apiVersion,
      created: nowSeconds(),
      type,
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      data: { object, ...(previousAttributes ? { previous_attributes: previousAttributes } : {}) },
    });
    const timestamp = nowSeconds();
    const signature = createHmac('sha256', webhookSecret).update(`${timestamp}.${body}`).digest('hex');
    let status = 0;
    try {
      const response = await fetch(target, {
        method: 'POST',
        headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': `t=${timestamp},v1=${signature}`, 'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)' },
        body,
      });
      await response.arrayBuffer();
      status = response.status;
    } catch {
      status = 0;
    }
    deliveries.push({ type, objectId: object.id, status });
    return status;
  }

  /** Stripe tells webhooks after it answered the request that made the change. */
  const tellLater = (type: string, object: StripeObject, previousAttributes?: StripeObject) => {
    const snapshot = structuredClone(object);
    setImmediate(() => void sendEvent(type, snapshot, previousAttributes));
  };

  // --- Resources -------------------------------------------------------------------------------------------

  function customerOf(id: unknown, param = 'customer'): StripeObject {
    const customer = typeof id === 'string' ? customers.get(id) : undefined;
    if (!customer) throw missing('customer', id, param);
    return customer;
  }

  function priceOf(id: unknown, param: string): StripeObject {
    const price = typeof id === 'string' ? prices.get(id) : undefined;
    if (!price) throw missing('price', id, param);
    return price;
  }

  const isMetered = (price: StripeObject) => asRecord(price.recurring).usage_type === 'metered';

  /** Items of a subscription or lines of a session: a recurring price each, a quantity unless metered (Stripe's rules). */
  function checkItem(item: StripeObject, param: string, allowed: readonly string[]): StripeObject {
    allowOnly(item, allowed, param);
    const price = priceOf(item.price, `${param}[price]`);
    if (!price.recurring) throw invalid(`The price specified is set to \`type=one_time\` but this field only accepts prices with \`type=recurring\`.`, { param: `${param}[price]` });
    if (isMetered(price) && item.quantity !== undefined) throw invalid('Quantity should not be specified where usage_type is `metered`. Remove quantity from `' + param + '`.', { param: `${param}[quantity]` });
    return price;
  }

  function subscriptionItem(subscriptionId: string, price: StripeObject, quantity: unknown): StripeObject {
    return {
      id: newId('si'),
      object: 'subscription_item',
      created: nowSeconds(),
      metadata: {},
      price,
      ...(isMetered(price) ? {} : { quantity: quantity === undefined ? 1 : Number(quantity) }),
      subscription: subscriptionId,
      current_period_start: nowSeconds(),
      current_period_end: nowSeconds() + 30 * 24 * 3600,
    };
  }

  /** The amount the first invoice charges now: the flat prices (metered usage is billed at the period's end). */
  const dueNow = (items: StripeObject[]) =>
    items.reduce((sum, item) => sum + (isMetered(asRecord(item.price)) ? 0 : Number(asRecord(item.price).unit_amount ?? 0) * Number(item.quantity ?? 1)), 0);

  /** Charges a payment method; false when it declines. */
  const charges = (paymentMethodId: unknown) => {
    const method = typeof paymentMethodId === 'string' ? paymentMethods.get(paymentMethodId) : undefined;
    return method ? !method.declines : undefined;
  };

  function createSubscription(params: StripeObject, defaults: { defaultPaymentMethod?: string } = {}): StripeObject {
    const customer = customerOf(params.customer);
    const items = asList(params.items);
    if (!items.length) throw parameterMissing('items');
    const id = newId('sub');
    const seen = new Set<unknown>();
    const created = items.map((item, index) => {
      const price = checkItem(item, `items[${index}]`, ['price', 'quantity', 'metadata']);
      if (seen.has(price.id)) throw invalid('Cannot add multiple subscription items with the same price.', { param: `items[${index}][price]` });
      seen.add(price.id);
      return subscriptionItem(id, price, item.quantity);
    });
    const paymentMethod = (params.default_payment_method as string | undefined) ?? defaults.defaultPaymentMethod ?? (asRecord(customer.invoice_settings).default_payment_method as string | null | undefined) ?? undefined;
    const behavior = (params.payment_behavior as string | undefined) ?? 'allow_incomplete';
    let status = 'active';
    if (dueNow(created) > 0) {
      const paid = charges(paymentMethod);
      if (paid === undefined && behavior === 'error_if_incomplete') {
        throw invalid('This customer has no attached payment source or default payment method. Please consider adding a default payment method. For more information, visit https://stripe.com/docs/billing/subscriptions/payment-methods-setting#payment-method-priority.');
      }
      if (paid === false && behavior === 'error_if_incomplete') {
        throw new StripeError(402, { type: 'card_error', code: 'card_declined', decline_code: 'generic_decline', message: 'Your card was declined.' }, false);
      }
      if (!paid) status = 'incomplete';
    }
    const subscription: StripeObject = {
      id,
      object: 'subscription',
      created: nowSeconds(),
      customer: customer.id,
      status,
      items: { object: 'list', data: created, has_more: false, url: `/v1/subscription_items?subscription=${id}` },
      metadata: metadataOf(params.metadata),
      default_payment_method: paymentMethod ?? null,
      collection_method: 'charge_automatically',
      pause_collection: null,
      cancel_at_period_end: false,
      canceled_at: null,
      ended_at: null,
      cancellation_details: { comment: null, feedback: null, reason: null },
      latest_invoice: newId('in'),
      livemode: false,
    };
    subscriptions.set(id, subscription);
    tellLater('customer.subscription.created', subscription);
    return subscription;
  }

  function updateSubscription(subscription: StripeObject, params: StripeObject): StripeObject {
    if (subscription.status === 'canceled') {
      const onlyMetadata = Object.keys(params).every((key) => key === 'metadata' || key === 'cancellation_details' || key === 'expand');
      if (!onlyMetadata) throw invalid('A canceled subscription can only update its cancellation_details and metadata.');
    }
    const before = structuredClone(subscription);
    const items = [...asList(asRecord(subscription.items).data)];
    asList(params.items).forEach((change, index) => {
      const param = `items[${index}]`;
      allowOnly(change, ['id', 'price', 'quantity', 'deleted', 'metadata', 'clear_usage'], param);
      const position = change.id === undefined ? -1 : items.findIndex((item) => item.id === change.id);
      if (change.id !== undefined && position < 0) throw invalid(`Invalid subscription item: ${String(change.id)}`, { param: `${param}[id]` });
      if (isTrue(change.deleted)) {
        items.splice(position, 1);
        return;
      }
      const price = change.price === undefined ? asRecord(items[position]?.price) : checkItem({ price: change.price, ...(change.quantity === undefined ? {} : { quantity: change.quantity }) }, param, ['price', 'quantity']);
      const replacement = subscriptionItem(String(subscription.id), price, change.quantity ?? items[position]?.quantity);
      if (position < 0) items.push(replacement);
      else items[position] = { ...replacement, id: items[position]?.id };
    });
    const prices = items.map((item) => asRecord(item.price).id);
    if (new Set(prices).size !== prices.length) throw invalid('Cannot add multiple subscription items with the same price.', { param: 'items' });
    if (!items.length) throw invalid('A subscription must have at least one active item.', { param: 'items' });
    if (params.pause_collection !== undefined) {
      const pause = asRecord(params.pause_collection);
      if (params.pause_collection !== '' && !['keep_as_draft', 'mark_uncollectible', 'void'].includes(String(pause.behavior))) {
        throw invalid('Invalid pause_collection[behavior]: must be one of keep_as_draft, mark_uncollectible, or void', { param: 'pause_collection[behavior]' });
      }
      subscription.pause_collection = params.pause_collection === '' ? null : { behavior: pause.behavior, resumes_at: pause.resumes_at === undefined ? null : Number(pause.resumes_at) };
    }
    if (params.metadata !== undefined) {
      const metadata = { ...metadataOf(subscription.metadata) };
      for (const [key, value] of Object.entries(metadataOf(params.metadata))) {
        if (value === '') delete metadata[key];
        else metadata[key] = value;
      }
      subscription.metadata = metadata;
    }
    if (params.cancel_at_period_end !== undefined) subscription.cancel_at_period_end = isTrue(params.cancel_at_period_end);
    subscription.items = { ...asRecord(subscription.items), data: items };
    const previous = Object.fromEntries(Object.keys(subscription).filter((key) => JSON.stringify(subscription[key]) !== JSON.stringify(before[key])).map((key) => [key, before[key]]));
    if (Object.keys(previous).length) tellLater('customer.subscription.updated', subscription, previous);
    return subscription;
  }

  function cancelSubscription(subscription: StripeObject, params: StripeObject): StripeObject {
    if (subscription.status === 'canceled') throw invalid('This subscription is already canceled.');
    Object.assign(subscription, {
      status: 'canceled',
      canceled_at: nowSeconds(),
      ended_at: nowSeconds(),
      cancellation_details: { comment: asRecord(params.cancellation_details).comment ?? null, feedback: asRecord(params.cancellation_details).feedback ?? null, reason: 'cancellation_requested' },
    });
    tellLater('customer.subscription.deleted', subscription);
    return subscription;
  }

  function createCheckoutSession(params: StripeObject): StripeObject {
    if (params.mode === undefined) throw parameterMissing('mode');
    if (!['payment', 'setup', 'subscription'].includes(String(params.mode))) throw invalid(`Invalid mode: must be one of payment, setup, or subscription`, { param: 'mode' });
    if (params.mode !== 'subscription') throw invalid('This simulator takes Checkout Sessions in subscription mode only.', { param: 'mode' });
    const lines = asList(params.line_items);
    if (!lines.length) throw parameterMissing('line_items');
    lines.forEach((line, index) => {
      const price = checkItem(line, `line_items[${index}]`, ['price', 'quantity', 'adjustable_quantity']);
      if (!isMetered(price) && line.quantity === undefined) throw invalid(`Quantity is required. Add \`quantity\` to \`line_items[${index}]\``, { param: `line_items[${index}][quantity]` });
    });
    if ((params.ui_mode ?? 'hosted') === 'hosted' && params.success_url === undefined) throw parameterMissing('success_url');
    for (const field of ['success_url', 'cancel_url'] as const) {
      if (params[field] !== undefined && !URL.canParse(String(params[field]))) throw invalid(`Not a valid URL`, { code: 'url_invalid', param: field });
    }
    if (params.customer !== undefined) customerOf(params.customer);
    if (params.customer !== undefined && params.customer_email !== undefined) throw invalid('You may only specify one of these parameters: customer, customer_email.', { param: 'customer_email' });
    const id = `cs_test_${randomBytes(24).toString('hex')}`;
    const session: StripeObject = {
      id,
      object: 'checkout.session',
      mode: 'subscription',
      status: 'open',
      payment_status: 'unpaid',
      url: `${url}/c/pay/${id}`,
      success_url: params.success_url ?? null,
      cancel_url: params.cancel_url ?? null,
      customer: params.customer ?? null,
      customer_email: params.customer_email ?? null,
      client_reference_id: params.client_reference_id ?? null,
      metadata: metadataOf(params.metadata),
      subscription: null,
      currency: asRecord(priceOf(lines[0]?.price, 'line_items[0][price]')).currency ?? 'usd',
      amount_total: dueNow(lines.map((line) => ({ price: priceOf(line.price, 'line_items'), quantity: line.quantity }))),
      created: nowSeconds(),
      expires_at: nowSeconds() + 24 * 3600,
      livemode: false,
    };
    checkoutSessions.set(id, session);
    sessionLineItems.set(id, lines);
    const subscriptionData = asRecord(params.subscription_data);
    allowOnly(subscriptionData, ['metadata', 'description', 'trial_period_days', 'default_tax_rates', 'billing_cycle_anchor', 'proration_behavior'], 'subscription_data');
    subscriptionMetadata.set(id, metadataOf(subscriptionData.metadata));
    return session;
  }

  /** What the customer does on the hosted Checkout page: pays with a test card (a customer is made if none was given). */
  async function completeCheckout(session: StripeObject, paymentMethod: string): Promise<{ paid: boolean }> {
    if (session.status !== 'open') throw invalid(`This Checkout Session is no longer active (status: ${String(session.status)}).`);
    const customer = session.customer ? customerOf(session.customer) : createCustomer({ email: session.customer_email ?? undefined });
    const attached = attachPaymentMethod(paymentMethod, { customer: customer.id });
    if (attached.declines) return { paid: false };
    const subscription = createSubscription(
      {
        customer: customer.id,
        items: (sessionLineItems.get(String(session.id)) ?? []).map(({ price, quantity }) => ({ price, ...(quantity === undefined ? {} : { quantity }) })),
        metadata: subscriptionMetadata.get(String(session.id)) ?? {},
      },
      { defaultPaymentMethod: String(attached.id) },
    );
    Object.assign(session, { status: 'complete', payment_status: 'paid', customer: customer.id, subscription: subscription.id });
    // After the subscription's own event, as Stripe sends them (their order is not guaranteed).
    setImmediate(() => void sendEvent('checkout.session.completed', structuredClone(session)));
    return { paid: true };
  }

  function createCustomer(params: StripeObject): StripeObject {
    allowOnly(params, ['name', 'email', 'description', 'metadata', 'phone', 'invoice_settings', 'expand']);
    const customer: StripeObject = {
      id: newId('cus'),
      object: 'customer',
      created: nowSeconds(),
      name: params.name ?? null,
      email: params.email ?? null,
      description: params.description ?? null,
      metadata: metadataOf(params.metadata),
      invoice_settings: { custom_fields: null, default_payment_method: null, footer: null, rendering_options: null },
      balance: 0,
      currency: null,
      delinquent: false,
      livemode: false,
    };
    customers.set(String(customer.id), customer);
    return customer;
  }

  function updateCustomer(customer: StripeObject, params: StripeObject): StripeObject {
    allowOnly(params, ['name', 'email', 'description', 'metadata', 'phone', 'invoice_settings', 'expand']);
    const invoiceSettings = asRecord(params.invoice_settings);
    allowOnly(invoiceSettings, ['default_payment_method', 'custom_fields', 'footer', 'rendering_options'], 'invoice_settings');
    if (invoiceSettings.default_payment_method !== undefined && invoiceSettings.default_payment_method !== '') {
      const method = paymentMethods.get(String(invoiceSettings.default_payment_method));
      if (!method || method.customer !== customer.id) {
        throw invalid(`The customer does not have a payment method with the ID ${String(invoiceSettings.default_payment_method)}. The payment method must be attached to the customer.`, { param: 'invoice_settings[default_payment_method]' });
      }
    }
    for (const field of ['name', 'email', 'description'] as const) if (params[field] !== undefined) customer[field] = params[field] === '' ? null : params[field];
    if (params.metadata !== undefined) customer.metadata = { ...metadataOf(customer.metadata), ...metadataOf(params.metadata) };
    if (invoiceSettings.default_payment_method !== undefined) {
      customer.invoice_settings = { ...asRecord(customer.invoice_settings), default_payment_method: invoiceSettings.default_payment_method === '' ? null : invoiceSettings.default_payment_method };
    }
    return customer;
  }

  function attachPaymentMethod(token: string, params: StripeObject): StripeObject & { declines: boolean } {
    allowOnly(params, ['customer', 'expand']);
    const customer = customerOf(params.customer);
    const card = testPaymentMethods[token];
    if (!card) throw missing('PaymentMethod', token);
    const method = { id: newId('pm'), object: 'payment_method', type: 'card', card: { brand: card.brand, last4: card.last4, exp_month: 12, exp_year: 2034 }, customer: customer.id, created: nowSeconds(), livemode: false, declines: card.declines };
    paymentMethods.set(method.id, method);
    return method;
  }

  function createPrice(params: StripeObject): StripeObject {
    allowOnly(params, ['currency', 'unit_amount', 'recurring', 'product', 'product_data', 'nickname', 'lookup_key', 'metadata', 'billing_scheme', 'transform_quantity', 'expand']);
    if (params.currency === undefined) throw parameterMissing('currency');
    if (params.product === undefined && params.product_data === undefined) throw invalid('You must specify either `product` or `product_data` when creating a price.');
    const recurring = params.recurring === undefined ? undefined : asRecord(params.recurring);
    if (recurring) {
      allowOnly(recurring, ['interval', 'interval_count', 'usage_type', 'meter'], 'recurring');
      if (!['day', 'week', 'month', 'year'].includes(String(recurring.interval))) throw parameterMissing('recurring[interval]');
      if (recurring.usage_type === 'metered' && !meters.has(String(recurring.meter))) throw invalid('Metered prices must be backed by a meter: set `recurring[meter]` to the ID of an active meter.', { param: 'recurring[meter]' });
    }
    const price: StripeObject = {
      id: newId('price'),
      object: 'price',
      active: true,
      currency: params.currency,
      unit_amount: params.unit_amount === undefined ? null : Number(params.unit_amount),
      product: params.product ?? newId('prod'),
      nickname: params.nickname ?? null,
      lookup_key: params.lookup_key ?? null,
      metadata: metadataOf(params.metadata),
      type: recurring ? 'recurring' : 'one_time',
      recurring: recurring ? { interval: recurring.interval, interval_count: Number(recurring.interval_count ?? 1), usage_type: recurring.usage_type ?? 'licensed', meter: recurring.meter ?? null } : null,
      created: nowSeconds(),
      livemode: false,
    };
    prices.set(String(price.id), price);
    return price;
  }

  function createMeter(params: StripeObject): StripeObject {
    allowOnly(params, ['display_name', 'event_name', 'default_aggregation', 'customer_mapping', 'value_settings', 'event_time_window', 'expand']);
    for (const field of ['display_name', 'event_name', 'default_aggregation'] as const) if (params[field] === undefined) throw parameterMissing(field);
    if ([...meters.values()].some((meter) => meter.event_name === params.event_name && meter.status === 'active')) {
      throw invalid(`An active meter with event_name \`${String(params.event_name)}\` already exists.`, { param: 'event_name' });
    }
    const meter: StripeObject = {
      id: newId('mtr'),
      object: 'billing.meter',
      display_name: params.display_name,
      event_name: params.event_name,
      status: 'active',
      default_aggregation: { formula: asRecord(params.default_aggregation).formula },
      customer_mapping: { type: 'by_id', event_payload_key: asRecord(params.customer_mapping).event_payload_key ?? 'stripe_customer_id' },
      value_settings: { event_payload_key: asRecord(params.value_settings).event_payload_key ?? 'value' },
      created: nowSeconds(),
      livemode: false,
    };
    meters.set(String(meter.id), meter);
    return meter;
  }

  /**
   * `POST /v1/billing/meter_events`: the request is checked now (required fields, identifier length and uniqueness),
   * the event later, as Stripe does: an event naming no active meter, no or an unknown customer, a value that is not
   * a whole number, or a time outside [−35 days, +5 min] is accepted (200) but never counted, and reported.
   */
  function createMeterEvent(params: StripeObject): StripeObject {
    allowOnly(params, ['event_name', 'payload', 'identifier', 'timestamp', 'expand']);
    if (params.event_name === undefined) throw parameterMissing('event_name');
    if (params.payload === undefined) throw parameterMissing('payload');
    const identifier = params.identifier === undefined ? newId('mev') : String(params.identifier);
    if (identifier.length > meterEventIdentifierMaxLength) throw invalid(`Invalid identifier: must be at most ${meterEventIdentifierMaxLength} characters`, { param: 'identifier' });
    if (meterEventIdentifiers.has(identifier)) throw invalid(`An event with identifier ${identifier} already exists.`, { param: 'identifier' });
    meterEventIdentifiers.add(identifier);
    const timestamp = params.timestamp === undefined ? nowSeconds() : Number(params.timestamp);
    const event: StripeObject = { object: 'billing.meter_event', created: nowSeconds(), event_name: params.event_name, identifier, livemode: false, payload: metadataOf(params.payload), timestamp };
    const meter = [...meters.values()].find((candidate) => candidate.event_name === params.event_name && candidate.status === 'active');
    const payload = metadataOf(params.payload);
    const customerKey = String(asRecord(meter?.customer_mapping).event_payload_key ?? 'stripe_customer_id');
    const valueKey = String(asRecord(meter?.value_settings).event_payload_key ?? 'value');
    const error = !meter
      ? { code: 'no_meter', message: `No active meter was found for event_name ${String(params.event_name)}.` }
      : payload[customerKey] === undefined
        ? { code: 'meter_event_no_customer_defined', message: `Customer mapping key ${customerKey} not found in payload.` }
        : !customers.has(payload[customerKey] as string)
          ? { code: 'meter_event_customer_not_found', message: `Customer ${payload[customerKey]} not found.` }
          : !/^\d+$/.test(payload[valueKey] ?? '')
            ? { code: 'meter_event_invalid_value', message: `Value ${String(payload[valueKey])} is not a whole number.` }
            : timestamp > nowSeconds() + meterEventFutureSeconds
              ? { code: 'timestamp_in_future', message: 'Timestamp is too far in the future.' }
              : timestamp < nowSeconds() - meterEventPastSeconds
                ? { code: 'timestamp_too_far_in_past', message: 'Timestamp is too far in the past.' }
                : undefined;
    if (error) meterEventErrors.push({ ...error, event });
    else meterEvents.push(event);
    return event;
  }

  /** What a meter summed for a customer over [start_time, end_time): one summary for the whole range. */
  function meterEventSummaries(meter: StripeObject, params: StripeObject): StripeObject {
    allowOnly(params, ['customer', 'start_time', 'end_time', 'value_grouping_window', 'limit', 'starting_after', 'ending_before', 'expand']);
    for (const field of ['customer', 'start_time', 'end_time'] as const) if (params[field] === undefined) throw parameterMissing(field);
    const [start, end] = [Number(params.start_time), Number(params.end_time)];
    const aggregated = meterEvents
      .filter((event) => event.event_name === meter.event_name && asRecord(event.payload).stripe_customer_id === params.customer && Number(event.timestamp) >= start && Number(event.timestamp) < end)
      .reduce((sum, event) => sum + Number(asRecord(event.payload).value), 0);
    return {
      object: 'list',
      data: [{ id: newId('mtrusg'), object: 'billing.meter_event_summary', aggregated_value: aggregated, start_time: start, end_time: end, meter: meter.id, livemode: false }],
      has_more: false,
      url: `/v1/billing/meters/${String(meter.id)}/event_summaries`,
    };
  }

  // --- Routing ---------------------------------------------------------------------------------------------

  type Route = { method: string; pattern: RegExp; run: (params: StripeObject, match: RegExpExecArray) => StripeObject };
  const byId = <T>(map: Map<string, T>, kind: string) => (match: RegExpExecArray) => {
    const found = map.get(match[1] as string);
    if (!found) throw missing(kind, match[1], 'id');
    return found;
  };
  const subscriptionById = byId(subscriptions, 'subscription');
  const routes: Route[] = [
    { method: 'POST', pattern: /^\/v1\/customers$/, run: (params) => createCustomer(params) },
    { method: 'GET', pattern: /^\/v1\/customers\/([\w-]+)$/, run: (_params, match) => byId(customers, 'customer')(match) },
    { method: 'POST', pattern: /^\/v1\/customers\/([\w-]+)$/, run: (params, match) => updateCustomer(byId(customers, 'customer')(match), params) },
    { method: 'POST', pattern: /^\/v1\/payment_methods\/([\w-]+)\/attach$/, run: (params, match) => withoutTestFlag(attachPaymentMethod(match[1] as string, params)) },
    { method: 'POST', pattern: /^\/v1\/prices$/, run: (params) => createPrice(params) },
    { method: 'GET', pattern: /^\/v1\/prices\/([\w-]+)$/, run: (_params, match) => byId(prices, 'price')(match) },
    { method: 'POST', pattern: /^\/v1\/billing\/meters$/, run: (params) => createMeter(params) },
    { method: 'GET', pattern: /^\/v1\/billing\/meters$/, run: () => ({ object: 'list', data: [...meters.values()], has_more: false, url: '/v1/billing/meters' }) },
    { method: 'GET', pattern: /^\/v1\/billing\/meters\/([\w-]+)\/event_summaries$/, run: (params, match) => meterEventSummaries(byId(meters, 'billing.meter')(match), params) },
    { method: 'POST', pattern: /^\/v1\/billing\/meter_events$/, run: (params) => createMeterEvent(params) },
    {
      method: 'POST',
      pattern: /^\/v1\/subscriptions$/,
      run: (params) => {
        allowOnly(params, ['customer', 'items', 'metadata', 'payment_behavior', 'default_payment_method', 'proration_behavior', 'collection_method', 'description', 'off_session', 'expand']);
        if (params.customer === undefined) throw parameterMissing('customer');
        return createSubscription(params);
      },
    },
    { method: 'GET', pattern: /^\/v1\/subscriptions\/([\w-]+)$/, run: (_params, match) => subscriptionById(match) },
    {
      method: 'POST',
      pattern: /^\/v1\/subscriptions\/([\w-]+)$/,
      run: (params, match) => {
        allowOnly(params, ['items', 'metadata', 'pause_collection', 'proration_behavior', 'payment_behavior', 'cancel_at_period_end', 'default_payment_method', 'cancellation_details', 'description', 'expand']);
        return updateSubscription(subscriptionById(match), params);
      },
    },
    {
      method: 'DELETE',
      pattern: /^\/v1\/subscriptions\/([\w-]+)$/,
      run: (params, match) => {
        allowOnly(params, ['invoice_now', 'prorate', 'cancellation_details', 'expand']);
        return cancelSubscription(subscriptionById(match), params);
      },
    },
    {
      method: 'POST',
      pattern: /^\/v1\/checkout\/sessions$/,
      run: (params) => {
        allowOnly(params, ['mode', 'line_items', 'success_url', 'cancel_url', 'customer', 'customer_email', 'client_reference_id', 'metadata', 'subscription_data', 'ui_mode', 'allow_promotion_codes', 'billing_address_collection', 'locale', 'payment_method_types', 'expand']);
        return createCheckoutSession(params);
      },
    },
    { method: 'GET', pattern: /^\/v1\/checkout\/sessions\/([\w-]+)$/, run: (_params, match) => byId(checkoutSessions, 'checkout.session')(match) },
    {
      method: 'POST',
      pattern: /^\/v1\/checkout\/sessions\/([\w-]+)\/expire$/,
      run: (_params, match) => {
        const session = byId(checkoutSessions, 'checkout.session')(match);
        if (session.status !== 'open') throw invalid(`Only Checkout Sessions with a status of \`open\` can be expired. This Checkout Session has a status of \`${String(session.status)}\`.`);
        session.status = 'expired';
        return session;
      },
    },
  ];

  function withoutTestFlag(method: StripeObject & { declines: boolean }): StripeObject {
    const { declines: _declines, ...visible } = method;
    return visible;
  }

  // --- HTTP ------------------------------------------------------------------------------------------------

  const server = createServer((request, response) => {
    void handle(request, response).catch((error: Error) => answer(response, 500, { error: { type: 'api_error', message: error.message } }));
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const requestUrl = new URL(request.url ?? '/', 'http://simulator');
    const path = requestUrl.pathname;
    const method = request.method ?? 'GET';
    if (method === 'POST' && path === '/_simulator/events') {
      const { type, object } = JSON.parse(raw) as { type: string; object: StripeObject };
      return answer(response, 200, { delivered: await sendEvent(type, object) });
    }
    const checkoutPage = /^\/c\/pay\/([\w-]+)$/.exec(path);
    if (checkoutPage) return hostedCheckout(checkoutPage[1] as string, method, raw, response);
    if (!authorized(request.headers.authorization)) {
      return answer(response, 401, { error: { type: 'invalid_request_error', message: `Invalid API Key provided: ${redacted(request.headers.authorization)}` } });
    }
    const params = decodeStripeForm(method === 'GET' || method === 'DELETE' ? requestUrl.search.slice(1) : raw);
    const idempotencyKey = method === 'POST' ? (request.headers['idempotency-key'] as string | undefined) : undefined;
    const record = (status: number, replayed: boolean) => requests.push({ method, path, params, idempotencyKey, status, replayed });
    const lose = () => {
      const left = lostResponses.get(path) ?? 0;
      if (left <= 0) return false;
      lostResponses.set(path, left - 1);
      request.socket.destroy();
      return true;
    };

    if (idempotencyKey !== undefined) {
      if (idempotencyKey.length > maxIdempotencyKeyLength) {
        record(400, false);
        return answer(response, 400, { error: { type: 'invalid_request_error', message: `Invalid Idempotency-Key: must be at most ${maxIdempotencyKeyLength} characters.` } });
      }
      const fingerprint = `${method} ${path} ${[...new URLSearchParams(raw)].map(([key, value]) => `${key}=${value}`).sort().join('&')}`;
      const previous = saved.get(idempotencyKey);
      if (previous) {
        if (previous.fingerprint !== fingerprint) {
          record(400, false);
          return answer(response, 400, {
            error: { type: 'idempotency_error', message: `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${idempotencyKey}' if you meant to execute a different request.` },
          });
        }
        if (lose()) return;
        record(previous.status, true);
        return answer(response, previous.status, previous.body, { 'idempotent-replayed': 'true', 'idempotency-key': idempotencyKey });
      }
      if (inFlight.has(idempotencyKey)) {
        record(409, false);
        return answer(response, 409, {
          error: { type: 'invalid_request_error', code: 'idempotency_key_in_use', message: 'There is currently another in-progress request using this Idempotency Key. Please try again later.' },
        });
      }
      inFlight.add(idempotencyKey);
      try {
        const { status, body } = execute(method, path, params);
        if (status < 400 || !(body as { beforeExecution?: boolean }).beforeExecution) saved.set(idempotencyKey, { fingerprint, status, body: withoutFlag(body) });
        if (lose()) return;
        record(status, false);
        return answer(response, status, withoutFlag(body), { 'idempotency-key': idempotencyKey });
      } finally {
        inFlight.delete(idempotencyKey);
      }
    }
    const { status, body } = execute(method, path, params);
    if (lose()) return;
    record(status, false);
    return answer(response, status, withoutFlag(body));
  }

  function execute(method: string, path: string, params: StripeObject): { status: number; body: unknown } {
    const candidates = routes.filter((route) => route.pattern.test(path));
    const route = candidates.find((candidate) => candidate.method === method);
    if (!route) {
      return { status: 404, body: { beforeExecution: true, error: { type: 'invalid_request_error', message: `Unrecognized request URL (${method}: ${path}). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.` } } };
    }
    try {
      return { status: 200, body: route.run(params, route.pattern.exec(path) as RegExpExecArray) };
    } catch (error) {
      if (!(error instanceof StripeError)) throw error;
      return { status: error.status, body: { beforeExecution: error.beforeExecution, error: error.body } };
    }
  }

  const withoutFlag = (body: unknown) => {
    if (!body || typeof body !== 'object' || !('beforeExecution' in body)) return body;
    const { beforeExecution: _flag, ...rest } = body as StripeObject;
    return rest;
  };

  function authorized(header: string | undefined): boolean {
    if (!header) return false;
    if (header.startsWith('Bearer ')) return header.slice('Bearer '.length) === secretKey;
    if (header.startsWith('Basic ')) return Buffer.from(header.slice('Basic '.length), 'base64').toString('utf8').split(':')[0] === secretKey;
    return false;
  }

  /** The hosted Checkout page: GET shows the plan and test cards, POST pays and sends the customer to success_url. */
  async function hostedCheckout(id: string, method: string, raw: string, response: ServerResponse): Promise<void> {
    const session = checkoutSessions.get(id);
    if (!session) return answer(response, 404, { error: { type: 'invalid_request_error', message: 'This Checkout Session does not exist.' } });
    if (method === 'GET') {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      const cards = Object.keys(testPaymentMethods).map((token) => `<option value="${token}">${token}</option>`).join('');
      response.end(
        `<!doctype html><title>Checkout (Stripe simulator)</title><h1>Subscribe</h1><p>Session ${id}: ${String(session.status)}</p>` +
          `<form method="post"><select name="payment_method">${cards}</select> <button>Pay</button></form>`,
      );
      return;
    }
    let outcome: { paid: boolean };
    try {
      outcome = await completeCheckout(session, new URLSearchParams(raw).get('payment_method') ?? 'pm_card_visa');
    } catch (error) {
      if (!(error instanceof StripeError)) throw error;
      return answer(response, error.status, { error: error.body });
    }
    if (!outcome.paid) return answer(response, 402, { error: { type: 'card_error', code: 'card_declined', decline_code: 'generic_decline', message: 'Your card was declined.' } });
    response.writeHead(303, { location: String(session.success_url).replace('{CHECKOUT_SESSION_ID}', id) });
    response.end();
  }

  await new Promise<void>((listening) => server.listen(0, host, listening));
  const { port } = server.address() as AddressInfo;
  url = `http://${host}:${port}`;
  simulator.url = url;
  return simulator;
}

function redacted(header: string | undefined): string {
  const key = header?.replace(/^(Bearer|Basic) /, '') ?? '';
  return key.length > 8 ? `${key.slice(0, 8)}${'*'.repeat(Math.max(0, key.length - 12))}${key.slice(-4)}` : '(none)';
}

function answer(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${randomBytes(8).toString('hex')}`, 'stripe-version': apiVersion, ...headers });
  response.end(JSON.stringify(body));
}
