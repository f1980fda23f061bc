import { createHash } from 'node:crypto';
import { ConcurrentModificationError, InvalidSubscriptionTransitionError } from '../platform/errors.ts';
import type { BillingProvider, ProviderChange, StoredSubscription, SubscriptionStore } from './ports.ts';
import type { Subscription, SubscriptionStatus } from './billing-schemas.ts';
import { nextUpdatedAt, type Clock } from '../platform/clock.ts';
import { billingEvents } from './billing-events.ts';
import { initialPlanId, type PlanCatalog } from './plans.ts';
import { bucketBounds } from './usage.ts';

export interface SubscriptionDeps {
  subscriptions: SubscriptionStore;
  plans: PlanCatalog;
  clock: Clock;
  /** Told of the changes the API makes, before they are recorded; absent, nobody is (the manual provider). */
  billing?: BillingProvider | undefined;
}

/**
 * What can happen to a subscription, and from which statuses (docs/usage-and-billing.md#subscriptions). The API
 * drives pause, resume, cancel and plan changes; the billing provider drives payments.
 */
export type SubscriptionChange =
  | { kind: 'changePlan'; plan: string }
  | { kind: 'pause' }
  | { kind: 'resume' }
  | { kind: 'cancel' }
  | { kind: 'paymentFailed' }
  | { kind: 'paymentSucceeded' }
  /** The operator's `keys subscription set` (manual provider): any status and plan. */
  | { kind: 'set'; status: SubscriptionStatus; plan?: string | undefined };

const transitions: Record<'pause' | 'resume' | 'cancel' | 'paymentFailed' | 'paymentSucceeded', { from: SubscriptionStatus[]; to: SubscriptionStatus }> = {
  pause: { from: ['active', 'past_due'], to: 'paused' },
  resume: { from: ['paused'], to: 'active' },
  cancel: { from: ['active', 'past_due', 'paused'], to: 'canceled' },
  paymentFailed: { from: ['active'], to: 'past_due' },
  paymentSucceeded: { from: ['past_due'], to: 'active' },
};

/** The billing period: the calendar month (UTC) that holds `now`, for every plan. */
export function currentPeriod(now: Date): { start: Date; end: Date } {
  return bucketBounds(now, 'month');
}

/** An organization's first subscription id, derived from it, so the implicit subscription has it before any write. */
function initialSubscriptionId(orgId: string): string {
  return `sub_${createHash('sha256').update(orgId).digest('hex').slice(0, 24)}`;
}

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
 * `subscription.updated` event. A change that changes nothing (the current plan again) writes nothing.
 */
export async function changeSubscription(deps: SubscriptionDeps, orgId: string, change: SubscriptionChange): Promise<Subscription> {
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const now = deps.clock.now();
    const stored = await deps.subscriptions.get(orgId);
    const current = stored ?? initialSubscription(orgId, now);
    const next = nextSubscription(deps, current, change, now);
    if (!next) return publicSubscription(current, now);
    if (deps.billing && isProviderChange(change)) await deps.billing.apply(current, change);
    const event = billingEvents.subscriptionUpdated(orgId, next.updatedAt, { subscriptionId: next.subscriptionId, status: next.status, currentPlan: next.currentPlan });
    if (await deps.subscriptions.replace(stored, next, event)) return publicSubscription(next, now);
  }
  throw new ConcurrentModificationError('The subscription changed while this request changed it; retry.');
}

function isProviderChange(change: SubscriptionChange): change is ProviderChange {
  return change.kind === 'changePlan' || change.kind === 'pause' || change.kind === 'resume' || change.kind === 'cancel';
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
      if (current.status === 'canceled') return { ...withStatus('active'), subscriptionId: `sub_${crypto.randomUUID().replaceAll('-', '').slice(0, 24)}`, currentPlan: change.plan, createdAt: now.toISOString() };
      if (change.plan === current.currentPlan) return undefined;
      return { ...current, currentPlan: change.plan, updatedAt };
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
