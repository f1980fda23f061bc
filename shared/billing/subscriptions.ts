import { createHash } from 'node:crypto';
import { CheckoutNotNeededError, ConcurrentModificationError, InvalidSubscriptionTransitionError } from '../platform/errors.ts';
import type { BillingProvider, CheckoutRequest, MeterEventSink, ProviderChange, ProviderLink, StoredSubscription, SubscriptionStore, UsageStore } from './ports.ts';
import type { Checkout, Subscription, SubscriptionStatus } from './billing-schemas.ts';
import { nextUpdatedAt, type Clock } from '../platform/clock.ts';
import { logger } from '../platform/logger.ts';
import { billingEvents } from './billing-events.ts';
import { reportMeteredUsage } from './metered-billing.ts';
import { initialPlanId, type PlanCatalog } from './plans.ts';
import { bucketBounds } from './usage.ts';

export interface SubscriptionDeps {
  subscriptions: SubscriptionStore;
  plans: PlanCatalog;
  clock: Clock;
  /** Told of the changes the API makes, before they are recorded; absent, nobody is (the manual provider). */
  billing?: BillingProvider | undefined;
  /**
   * Where usage billed by use is reported (Stripe's meters); absent, nothing is billed by use. A change of what is
   * billed (plan, link, cancel) first reports the usage counted under the subscription as it was.
   */
  metering?: { usage: UsageStore; meterEvents: MeterEventSink } | undefined;
}

/**
 * What can happen to a subscription, and from which statuses (docs/usage-and-billing.md#subscriptions). The API
 * drives pause, resume, cancel and plan changes; the billing provider drives payments, and links the subscription
 * it made when a checkout was paid.
 */
export type SubscriptionChange =
  | { kind: 'changePlan'; plan: string }
  | { kind: 'pause' }
  | { kind: 'resume' }
  | { kind: 'cancel' }
  | { kind: 'paymentFailed' }
  | { kind: 'paymentSucceeded' }
  /** A checkout was paid: the provider's subscription for `plan` is the organization's from now on. */
  | { kind: 'link'; plan: string; providerCustomerId: string; providerSubscriptionId: string }
  /** The operator's `keys subscription set` (manual provider): any status and plan. */
  | { kind: 'set'; status: SubscriptionStatus; plan?: string | undefined };

const transitions: Record<'pause' | 'resume' | 'cancel' | 'paymentFailed' | 'paymentSucceeded', { from: SubscriptionStatus[]; to: SubscriptionStatus }> = {
  pause: { from: ['active', 'past_due'], to: 'paused' },
  resume: { from: ['paused'], to: 'active' },
  cancel: { from: ['active', 'past_due', 'paused'], to: 'canceled' },
  paymentFailed: { from: ['active'], to: 'past_due' },
  paymentSucceeded: { from: ['past_due'], to: 'active' },
};

export function currentPeriod(now: Date): { start: Date; end: Date } {
  return bucketBounds(now, 'month');
}

/** An organization's first subscription id, derived from it, so the implicit subscription has it before any write. */
function initialSubscriptionId(orgId: string): string {
  return `sub_${createHash('sha256').update(orgId).digest('hex').slice(0, 24)}`;
}

/** The id of a subscription that starts anew (after a canceled one). */
const newSubscriptionId = () => `sub_${crypto.randomUUID().replaceAll('-', '').slice(0, 24)}`;

/** What an organization without a stored subscription has: `free`, `active`, since it first asked. */
export function initialSubscription(orgId: string, now: Date): StoredSubscription {
  const at = now.toISOString();
  return { orgId, subscriptionId: initialSubscriptionId(orgId), status: 'active', currentPlan: initialPlanId, provider: 'manual', createdAt: at, updatedAt: at };
}

export function publicSubscription(subscription: StoredSubscription, now: Date): Subscription {
  const period = currentPeriod(now);
  const { orgId: _orgId, providerCustomerId: _customer, providerSubscriptionId: _providerSubscription, ...visible } = subscription;
  return { ...visible, currentPeriodStart: period.start.toISOString(), currentPeriodEnd: period.end.toISOString() };
}

export async function getSubscription(deps: SubscriptionDeps, orgId: string): Promise<Subscription> {
  const now = deps.clock.now();
  return publicSubscription((await deps.subscriptions.get(orgId)) ?? initialSubscription(orgId, now), now);
}

/**
 * Applies a change: the stored subscription (or the initial one) moves to its next state, written with its
 * `subscription.updated` event. A change that changes nothing (the current plan again) writes nothing. The billing
 * provider is told first (and what it links is recorded); a change of what is billed by use first reports the usage
 * counted so far under the subscription as it was.
 */
export async function changeSubscription(
  deps: SubscriptionDeps,
  orgId: string,
  change: SubscriptionChange,
  options: { /** The provider's event is about this subscription: it moves nothing once another, or none, is linked. */ about?: string } = {},
): Promise<Subscription> {
  // What the provider did on the first attempt, and on what: a retry after a concurrent write reuses it, never does it twice.
  let applied: { on: string; link: ProviderLink | undefined } | undefined;
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const now = deps.clock.now();
    const stored = await deps.subscriptions.get(orgId);
    const current = stored ?? initialSubscription(orgId, now);
    // Checked on every read: a move to free may unlink the subscription between the caller's check and this write.
    let next = options.about !== undefined && linkedElsewhere(current, options.about) ? undefined : nextSubscription(deps, current, change, now);
    if (!next) return publicSubscription(current, now);
    if (deps.metering && changesWhatIsBilled(change)) await reportMeteredUsage({ ...deps.metering, plans: deps.plans, clock: deps.clock }, current);
    if (deps.billing && isProviderChange(change)) {
      const on = providerStateOf(current);
      if (applied && applied.on !== on) break;
      applied ??= { on, link: await deps.billing.apply(current, change) };
      if (applied.link) next = withLink(next, applied.link);
    }
    const event = billingEvents.subscriptionUpdated(orgId, next.updatedAt, { subscriptionId: next.subscriptionId, status: next.status, currentPlan: next.currentPlan });
    if (await deps.subscriptions.replace(stored, next, event)) return publicSubscription(next, now);
  }
  if (applied?.link?.providerSubscriptionId) logger.warn('the billing provider made a subscription this change could not record', { orgId, ...applied.link });
  throw new ConcurrentModificationError('The subscription changed while this request changed it; retry.');
}

/**
 * Starts a checkout for a paid plan: the provider's page where the customer enters a card and pays; the plan applies
 * when the provider tells us it was paid (`link`). The provider's customer it made is kept with the subscription.
 */
export async function startCheckout(deps: SubscriptionDeps & { billing: BillingProvider }, orgId: string, request: CheckoutRequest): Promise<Checkout> {
  deps.plans.get(request.plan);
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const now = deps.clock.now();
    const stored = await deps.subscriptions.get(orgId);
    const current = stored ?? initialSubscription(orgId, now);
    if (current.providerSubscriptionId && current.status !== 'canceled') {
      throw new CheckoutNotNeededError('The organization pays through its billing provider already: change the plan with PATCH /v1/chat/subscription.');
    }
    const { checkout, providerCustomerId } = await deps.billing.startCheckout(current, request);
    if (providerCustomerId === current.providerCustomerId) return checkout;
    // Not a change clients see: no event.
    if (await deps.subscriptions.replace(stored, { ...current, providerCustomerId, updatedAt: nextUpdatedAt(deps.clock, current.updatedAt) })) return checkout;
  }
  throw new ConcurrentModificationError('The subscription changed while this request started a checkout; retry.');
}

/**
 * Once the platform keeps the organization's provider customer, only its linked subscription moves it: the events
 * of one it replaced or ended (a move to a free plan cancels it) arrive after.
 */
export const linkedElsewhere = (subscription: StoredSubscription | undefined, providerSubscriptionId: string): boolean =>
  subscription?.providerCustomerId !== undefined && providerSubscriptionId !== subscription.providerSubscriptionId;

function isProviderChange(change: SubscriptionChange): change is ProviderChange {
  return change.kind === 'changePlan' || change.kind === 'pause' || change.kind === 'resume' || change.kind === 'cancel';
}

/** The changes after which other usage, or none, is billed by use. */
const changesWhatIsBilled = (change: SubscriptionChange) => change.kind === 'changePlan' || change.kind === 'cancel' || change.kind === 'link' || change.kind === 'set';

/** What the provider's answer depends on: its subscription and the plan (a status changed meanwhile by a payment does not). */
const providerStateOf = (subscription: StoredSubscription) => `${subscription.providerSubscriptionId ?? ''} ${subscription.currentPlan}`;

/** The provider's subscription a change left the organization with: `stripe` bills while one is linked. */
function withLink(subscription: StoredSubscription, link: ProviderLink): StoredSubscription {
  return {
    ...subscription,
    provider: link.providerSubscriptionId ? 'stripe' : 'manual',
    providerCustomerId: link.providerCustomerId ?? subscription.providerCustomerId,
    providerSubscriptionId: link.providerSubscriptionId,
  };
}

function nextSubscription(deps: SubscriptionDeps, current: StoredSubscription, change: SubscriptionChange, now: Date): StoredSubscription | undefined {
  const updatedAt = nextUpdatedAt(deps.clock, current.updatedAt);
  const withStatus = (status: SubscriptionStatus): StoredSubscription => {
    const { pastDueSince: _pastDueSince, ...rest } = current;
    return { ...rest, status, updatedAt, ...(status === 'past_due' ? { pastDueSince: current.pastDueSince ?? now.toISOString() } : {}) };
  };
  switch (change.kind) {
    case 'changePlan': {
      deps.plans.get(change.plan);
      // A canceled subscription is over; choosing a plan starts a new one.
      if (current.status === 'canceled') return { ...withStatus('active'), subscriptionId: newSubscriptionId(), currentPlan: change.plan, createdAt: now.toISOString() };
      if (change.plan === current.currentPlan) return undefined;
      return { ...current, currentPlan: change.plan, updatedAt };
    }
    case 'link': {
      deps.plans.get(change.plan);
      // The provider tells the same payment again (a redelivered event), even after that subscription ended.
      if (current.providerSubscriptionId === change.providerSubscriptionId) return undefined;
      const renewed = current.status === 'canceled' ? { subscriptionId: newSubscriptionId(), createdAt: now.toISOString() } : {};
      const { kind: _kind, plan, ...link } = change;
      return { ...withLink(withStatus('active'), link), ...renewed, currentPlan: plan };
    }
    case 'set': {
      if (change.plan) deps.plans.get(change.plan);
      return { ...withStatus(change.status), currentPlan: change.plan ?? current.currentPlan };
    }
    default: {
      const transition = transitions[change.kind];
      if (!transition.from.includes(current.status)) {
        throw new InvalidSubscriptionTransitionError(`A ${current.status} subscription cannot ${change.kind === 'paymentFailed' || change.kind === 'paymentSucceeded' ? `take ${change.kind}` : change.kind}; allowed from ${transition.from.join(', ')}.`);
      }
      return withStatus(transition.to);
    }
  }
}
