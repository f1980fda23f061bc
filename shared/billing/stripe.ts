import Stripe from 'stripe';
import * as z from 'zod';
import type { Config } from '../platform/config.ts';
import { CheckoutNotNeededError, PaymentFailedError, PaymentMethodRequiredError, UpstreamUnavailableError } from '../platform/errors.ts';
import { logger } from '../platform/logger.ts';
import { emfMetrics } from '../platform/metrics.ts';
import { billingMetrics } from './billing-metrics.ts';
import { meterableMetrics, type Checkout } from './billing-schemas.ts';
import type { PlanCatalog } from './plans.ts';
import type { BillingProvider, CheckoutRequest, MeterEvent, MeterEventSink, ProviderChange, ProviderLink, StoredSubscription } from './ports.ts';

/** The Stripe client of this process: api.stripe.com, or the local simulator at STRIPE_API_URL. */
export function stripeClient(config: Pick<Config, 'STRIPE_SECRET_KEY' | 'STRIPE_API_URL'>): Stripe {
  const local = config.STRIPE_API_URL ? new URL(config.STRIPE_API_URL) : undefined;
  return new Stripe(config.STRIPE_SECRET_KEY ?? 'sk_unset', {
    maxNetworkRetries: 2,
    telemetry: false,
    ...(local ? { host: local.hostname, port: local.port, protocol: local.protocol === 'https:' ? ('https' as const) : ('http' as const) } : {}),
  });
}

/** A plan's Stripe prices: its flat (licensed) price, and a metered price for each metric it bills by use. */
export interface PlanPrices {
  flat?: string | undefined;
  metered: Partial<Record<(typeof meterableMetrics)[number], string>>;
}

const priceId = z.string().regex(/^price_\w+$/, 'must be a Stripe price id (price_…)');
const planPricesSchema = z.union([
  priceId.transform((flat): PlanPrices => ({ flat, metered: {} })),
  z.strictObject({ price: priceId.optional(), metered: z.partialRecord(z.enum(meterableMetrics), priceId).default({}) }).transform(({ price, metered }): PlanPrices => ({ flat: price, metered })),
]);

/**
 * STRIPE_PRICES: each paid plan's prices, `{"pro": "price_…"}` or `{"pro": {"price": "price_…", "metered":
 * {"voice_seconds": "price_…"}}}`. A plan's metered metrics (the catalog's `meteredMetrics`) need a metered price
 * each, and only those have one; a plan without prices is free.
 */
export function parseStripePrices(raw: string | undefined, plans: PlanCatalog): Map<string, PlanPrices> {
  const problem = (message: string) => new Error(`Invalid configuration: STRIPE_PRICES ${message}`);
  let json: unknown = {};
  try {
    json = raw ? JSON.parse(raw) : {};
  } catch {
    throw problem('is not valid JSON');
  }
  const parsed = z.record(z.string(), planPricesSchema).safeParse(json);
  if (!parsed.success) throw problem(parsed.error.issues.map((issue) => `${issue.path.join('.')} ${issue.message}`).join('; '));
  const prices = new Map(Object.entries(parsed.data));
  for (const id of prices.keys()) if (!plans.list().some((plan) => plan.id === id)) throw problem(`names the plan "${id}", which the catalog does not hold`);
  for (const plan of plans.list()) {
    const metered = Object.keys(prices.get(plan.id)?.metered ?? {}).sort();
    if (metered.join() !== [...plan.meteredMetrics].sort().join()) {
      throw problem(`gives the plan "${plan.id}" metered prices for [${metered.join(', ')}], but it bills by use [${plan.meteredMetrics.join(', ')}]`);
    }
  }
  return prices;
}

/** What Stripe's answer means for our API: a declined card, or Stripe out of reach; anything else is ours to fix. */
async function withStripeErrors<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof Stripe.errors.StripeCardError) throw new PaymentFailedError(`The payment was declined: ${error.message}`, { cause: error });
    if (error instanceof Stripe.errors.StripeConnectionError || error instanceof Stripe.errors.StripeAPIError || error instanceof Stripe.errors.StripeRateLimitError) {
      throw new UpstreamUnavailableError('Stripe did not answer; retry.', { cause: error });
    }
    throw error;
  }
}

/** A subscription item of a price: one of a flat price, none counted for a metered one (Stripe refuses a quantity there). */
const itemOf = (price: { id: string; metered: boolean }) => (price.metered ? { price: price.id } : { price: price.id, quantity: 1 });

/**
 * Stripe bills: a paid plan is a Stripe subscription of the organization's Stripe customer, made through Checkout
 * (the customer enters a card) or directly when the customer has a default card. Its changes are Stripe's first:
 * plan → the prices swapped item by item, pause → collection paused, resume, cancel (and a move to a free plan) →
 * canceled with metered usage invoiced now and the unused time credited.
 */
export class StripeBillingProvider implements BillingProvider {
  readonly name = 'stripe' as const;
  private readonly stripe: Stripe;
  private readonly prices: Map<string, PlanPrices>;

  constructor(stripe: Stripe, prices: Map<string, PlanPrices>) {
    this.stripe = stripe;
    this.prices = prices;
  }

  apply(subscription: StoredSubscription, change: ProviderChange): Promise<ProviderLink | undefined> {
    return withStripeErrors(async () => {
      const linked = subscription.status === 'canceled' ? undefined : subscription.providerSubscriptionId;
      if (change.kind === 'changePlan') return this.changePlan(subscription, change.plan, linked);
      if (!linked) return undefined;
      if (change.kind === 'cancel') await this.cancel(linked);
      else await this.stripe.subscriptions.update(linked, { pause_collection: change.kind === 'pause' ? { behavior: 'void' } : '' });
      return undefined;
    });
  }

  startCheckout(subscription: StoredSubscription, request: CheckoutRequest): Promise<{ checkout: Checkout; providerCustomerId: string }> {
    const prices = this.pricesOf(request.plan);
    if (!prices.length) throw new CheckoutNotNeededError(`The plan ${request.plan} has no price: choose it with PATCH /v1/chat/subscription.`);
    return withStripeErrors(async () => {
      const metadata = { orgId: subscription.orgId, plan: request.plan };
      const customerId =
        subscription.providerCustomerId ??
        // One customer per organization, however often this is retried before its id is kept.
        (await this.stripe.customers.create({ metadata: { orgId: subscription.orgId } }, { idempotencyKey: `agent-platform-customer-${subscription.orgId}` })).id;
      const session = await this.stripe.checkout.sessions.create({
        mode: 'subscription',
        customer: customerId,
        line_items: prices.map(itemOf),
        success_url: request.successUrl,
        cancel_url: request.cancelUrl,
        metadata,
        subscription_data: { metadata },
      });
      if (!session.url) throw new Error('Stripe answered a hosted Checkout Session without its url');
      return { providerCustomerId: customerId, checkout: { id: session.id, url: session.url, plan: request.plan, expiresAt: new Date(session.expires_at * 1000).toISOString() } };
    });
  }

  /** The plan's prices, flat first; none for a free plan. */
  private pricesOf(plan: string): { id: string; metered: boolean }[] {
    const prices = this.prices.get(plan);
    if (!prices) return [];
    return [...(prices.flat ? [{ id: prices.flat, metered: false }] : []), ...Object.values(prices.metered).map((id) => ({ id, metered: true }))];
  }

  private async changePlan(subscription: StoredSubscription, plan: string, linked: string | undefined): Promise<ProviderLink> {
    const prices = this.pricesOf(plan);
    if (!linked) return prices.length ? this.subscribe(subscription, plan, prices) : { providerSubscriptionId: undefined };
    if (!prices.length) {
      await this.cancel(linked);
      return { providerSubscriptionId: undefined };
    }
    const current = await this.stripe.subscriptions.retrieve(linked);
    const wanted = new Set(prices.map((price) => price.id));
    const held = new Set(current.items.data.map((item) => item.price.id));
    await this.stripe.subscriptions.update(linked, {
      items: [
        ...current.items.data.filter((item) => !wanted.has(item.price.id)).map((item) => ({ id: item.id, deleted: true })),
        ...prices.filter((price) => !held.has(price.id)).map(itemOf),
      ],
      metadata: { orgId: subscription.orgId, plan },
    });
    return { providerSubscriptionId: linked };
  }

  /** A paid plan without a Stripe subscription: made at once when the customer has a default card, else Checkout is the way. */
  private async subscribe(subscription: StoredSubscription, plan: string, prices: { id: string; metered: boolean }[]): Promise<ProviderLink> {
    const customerId = subscription.providerCustomerId;
    const customer = customerId ? await this.stripe.customers.retrieve(customerId) : undefined;
    if (!customerId || !customer || customer.deleted || !customer.invoice_settings.default_payment_method) {
      throw new PaymentMethodRequiredError(
        `The plan ${plan} is paid and the organization has no card on file: start a checkout with POST /v1/chat/subscription/checkout, which collects one.`,
      );
    }
    const created = await this.stripe.subscriptions.create(
      { customer: customerId, items: prices.map(itemOf), metadata: { orgId: subscription.orgId, plan }, payment_behavior: 'error_if_incomplete' },
      // The same request retried (our retries, the client's) makes one subscription; a later change is another key.
      { idempotencyKey: `agent-platform-subscribe-${subscription.orgId}-${subscription.subscriptionId}-${subscription.updatedAt}-${plan}` },
    );
    return { providerCustomerId: customerId, providerSubscriptionId: created.id };
  }

  /**
   * Ends it now: usage billed by use so far is invoiced at once, the unused time of the flat price credited. One
   * Stripe no longer has (deleted in its dashboard, its event lost) has ended already.
   */
  private async cancel(subscriptionId: string): Promise<void> {
    try {
      await this.stripe.subscriptions.cancel(subscriptionId, { invoice_now: true, prorate: true });
    } catch (error) {
      if (!(error instanceof Stripe.errors.StripeInvalidRequestError && error.code === 'resource_missing')) throw error;
      logger.warn('the Stripe subscription to cancel does not exist any more', { subscription: subscriptionId });
    }
  }
}

/** Reports usage to Stripe Billing Meters: `POST /v1/billing/meter_events`, the event's identifier doubling as its idempotency key. */
export class StripeMeterEvents implements MeterEventSink {
  private readonly stripe: Stripe;

  constructor(stripe: Stripe) {
    this.stripe = stripe;
  }

  async send(event: MeterEvent): Promise<void> {
    try {
      // Stripe out of reach is UPSTREAM_UNAVAILABLE where a request waits on it (a plan change reports usage first).
      await withStripeErrors(() =>
        this.stripe.billing.meterEvents.create(
          { event_name: event.eventName, payload: { stripe_customer_id: event.customerId, value: String(event.value) }, identifier: event.identifier, timestamp: event.timestamp },
          { idempotencyKey: event.identifier },
        ),
      );
    } catch (error) {
      // Refused for good (Stripe says not to retry a 4xx): kept in the log and counted, so that it is seen, not retried forever.
      if (!(error instanceof Stripe.errors.StripeInvalidRequestError)) throw error;
      logger.error('stripe refused a meter event; it is not billed', { ...event, reason: error.message });
      emfMetrics.add(billingMetrics.meterEventsRefused, 1);
    }
  }
}
