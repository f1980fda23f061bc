import { QuotaExceededError, SubscriptionInactiveError } from '../platform/errors.ts';
import type { StoredSubscription, SubscriptionStore, UsageStore } from './ports.ts';
import type { Plan, QuotaMetric } from './billing-schemas.ts';
import type { Clock } from '../platform/clock.ts';
import type { PlanCatalog } from './plans.ts';
import { currentPeriod, initialSubscription } from './subscriptions.ts';
import { bucketOf, stockMetrics, type UsageCounts } from './usage.ts';

export interface AdmissionDeps {
  subscriptions: SubscriptionStore;
  usage: UsageStore;
  plans: PlanCatalog;
  clock: Clock;
  config: { QUOTA_CACHE_SECONDS: number; PAST_DUE_GRACE_DAYS: number };
}

interface Standing {
  readAt: number;
  month: string;
  subscription: StoredSubscription;
  counts: UsageCounts;
}

/** A hint only: a stock quota frees up when the organization deletes what it stores, not with time. */
const stockRetryAfterSeconds = 3600;

/** What this process last read of each organization's subscription and period usage. */
const standings = new Map<string, Promise<Standing>>();
const maxCachedOrganizations = 10_000;

/**
 * Refuses an operation that consumes `metric` when the subscription is inactive (403 SUBSCRIPTION_INACTIVE:
 * canceled, paused, or past due beyond the grace period) or the period's quota is used up (429 QUOTA_EXCEEDED,
 * Retry-After = seconds to the period's end). Callers run it beside the reads they make anyway, never before
 * them; what it reads is trusted for QUOTA_CACHE_SECONDS (docs/usage-and-billing.md#enforcement). An operation
 * that knows it will consume `amount` (a replay's turns) is refused when that does not fit in what is left.
 */
export async function assertMayConsume(deps: AdmissionDeps, orgId: string, metric: QuotaMetric, amount = 1): Promise<void> {
  const now = deps.clock.now();
  const { subscription, counts } = await standingOf(deps, orgId, now);
  if (subscription.status === 'canceled' || subscription.status === 'paused') {
    throw new SubscriptionInactiveError(`The subscription is ${subscription.status}; resume it (or choose a plan) to continue.`);
  }
  if (subscription.status === 'past_due' && pastGrace(deps, subscription, now)) {
    throw new SubscriptionInactiveError(`The subscription is past due for more than ${deps.config.PAST_DUE_GRACE_DAYS} days; pay the open invoice to continue.`);
  }
  const quota = deps.plans.get(subscription.currentPlan).quotas[metric];
  if (quota !== null && stockMetrics.includes(metric) && (counts[metric] ?? 0) >= quota) {
    // A stock does not renew with the period: room comes back when the organization deletes some, or changes plan.
    throw new QuotaExceededError(
      `The ${subscription.currentPlan} plan's ${metric} quota of ${quota} is used: ${counts[metric]} are stored. Delete some, or move to a larger plan, to add more.`,
      stockRetryAfterSeconds,
    );
  }
  if (quota !== null && (counts[metric] ?? 0) + amount > quota) {
    const retryAfter = Math.max(1, Math.ceil((currentPeriod(now).end.getTime() - now.getTime()) / 1000));
    const used = amount === 1 ? 'is used up' : `has ${Math.max(0, quota - (counts[metric] ?? 0))} left, and this needs ${amount}`;
    throw new QuotaExceededError(`The ${subscription.currentPlan} plan's ${metric} quota of ${quota} for this period ${used}; it renews at the period's end.`, retryAfter);
  }
}

/** The organization's current plan, from the same per-process cache as the quota check. */
export async function currentPlan(deps: AdmissionDeps, orgId: string): Promise<Plan> {
  const { subscription } = await standingOf(deps, orgId, deps.clock.now());
  return deps.plans.get(subscription.currentPlan);
}

function pastGrace(deps: AdmissionDeps, subscription: StoredSubscription, now: Date): boolean {
  const since = subscription.pastDueSince ? Date.parse(subscription.pastDueSince) : now.getTime();
  return now.getTime() - since > deps.config.PAST_DUE_GRACE_DAYS * 24 * 60 * 60 * 1000;
}

async function standingOf(deps: AdmissionDeps, orgId: string, now: Date): Promise<Standing> {
  const month = bucketOf(now.toISOString(), 'month');
  const cached = standings.get(orgId);
  if (cached) {
    const standing = await cached.catch(() => undefined);
    if (standing && standing.month === month && now.getTime() - standing.readAt < deps.config.QUOTA_CACHE_SECONDS * 1000) return standing;
  }
  const reading = Promise.all([deps.subscriptions.get(orgId), deps.usage.periodCounts(orgId, month)]).then(([subscription, counts]) => ({
    readAt: now.getTime(),
    month,
    subscription: subscription ?? initialSubscription(orgId, now),
    counts,
  }));
  if (standings.size >= maxCachedOrganizations) standings.delete(standings.keys().next().value as string);
  standings.set(orgId, reading);
  // A failed read is not remembered: the next request reads again.
  reading.catch(() => standings.delete(orgId));
  return reading;
}

/** Forgets what this process read of an organization's standing: after this process changed its subscription. */
export function forgetStanding(orgId: string): void {
  standings.delete(orgId);
}
