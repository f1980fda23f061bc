import { ValidationError } from '../platform/errors.ts';
import type { StockChange, UsageStore } from './ports.ts';
import type { UsageQuery, UsageResponse } from './usage-schemas.ts';
import { currentPeriod, getSubscription, type SubscriptionDeps } from './subscriptions.ts';
import { bucketBounds, bucketOf, shownUsage, stockMetrics, type UsageCounts } from './usage.ts';

export interface UsageReportDeps extends SubscriptionDeps {
  usage: UsageStore;
}

/** A series longer than this is refused: ask for a coarser granularity or a shorter range. */
export const maxSeriesBuckets = 1_000;

/**
 * The organization's usage from `from` (default: the start of the current period) to `to` (default: now), one
 * entry per bucket (empty ones included, as zeros), and the current period's totals beside the plan's quotas. A
 * bucket's flows are what was done in it; its stocks (`knowledge_chunks`) what was held at its end (now, for the
 * bucket that holds now): the stock now less the changes made since.
 */
export async function getUsage(deps: UsageReportDeps, orgId: string, query: UsageQuery): Promise<UsageResponse> {
  const now = deps.clock.now();
  const period = currentPeriod(now);
  const from = query.from ? new Date(query.from) : period.start;
  const to = query.to ? new Date(query.to) : now;
  assertOrdered(from, to);
  const buckets = bucketsBetween(from, to, query.granularity);
  const month = bucketOf(now.toISOString(), 'month');
  const [counters, periodCounts, stockChanges, subscription] = await Promise.all([
    deps.usage.counters(orgId, query.granularity, bucketOf(from.toISOString(), query.granularity), bucketOf(to.toISOString(), query.granularity)),
    deps.usage.periodCounts(orgId, month),
    deps.usage.stockChangesSince(orgId, (buckets[0]?.end ?? now).toISOString()),
    getSubscription(deps, orgId),
  ]);
  const stocks = stocksAtEnds(periodCounts, stockChanges, buckets.map((bucket) => bucket.end));
  const plan = deps.plans.get(subscription.currentPlan);
  return {
    granularity: query.granularity,
    from: from.toISOString(),
    to: to.toISOString(),
    series: buckets.map(({ start, end }, index) => ({
      start: start.toISOString(),
      end: end.toISOString(),
      ...shownUsage({ ...counters.get(bucketOf(start.toISOString(), query.granularity)), ...stocks[index] }),
    })),
    currentPeriod: { start: period.start.toISOString(), end: period.end.toISOString(), plan: plan.id, ...shownUsage(periodCounts), quotas: plan.quotas },
  };
}

/**
 * The stocks held at each of `ends` (ascending): the stocks now, less the changes made at or after that end. Walks
 * the ends from the last and the changes from the newest, once each.
 */
function stocksAtEnds(now: UsageCounts, changes: readonly StockChange[], ends: readonly Date[]): UsageCounts[] {
  const newestFirst = [...changes].sort((a, b) => Date.parse(b.at) - Date.parse(a.at));
  const held = Object.fromEntries(stockMetrics.map((metric) => [metric, now[metric] ?? 0]));
  const result: UsageCounts[] = new Array(ends.length);
  let next = 0;
  for (let index = ends.length - 1; index >= 0; index -= 1) {
    const end = (ends[index] as Date).getTime();
    for (; next < newestFirst.length && Date.parse((newestFirst[next] as StockChange).at) >= end; next += 1) {
      const change = newestFirst[next] as StockChange;
      if (change.metric in held) held[change.metric] = (held[change.metric] ?? 0) - change.delta;
    }
    // A change made between the reads of the stock and of its changes shows in one only: never below nothing.
    result[index] = Object.fromEntries(Object.entries(held).map(([metric, value]) => [metric, Math.max(0, value)]));
  }
  return result;
}

export function assertOrdered(from: Date, to: Date): void {
  if (from.getTime() > to.getTime()) throw new ValidationError('from must not be after to.', { details: [{ field: 'from', message: 'must not be after to' }] });
}

/** The buckets from the one holding `from` to the one holding `to`; refused (400) beyond maxSeriesBuckets. */
export function bucketsBetween(from: Date, to: Date, granularity: UsageQuery['granularity']): { start: Date; end: Date }[] {
  const buckets: { start: Date; end: Date }[] = [];
  for (let bucket = bucketBounds(from, granularity); bucket.start.getTime() <= to.getTime(); bucket = bucketBounds(bucket.end, granularity)) {
    buckets.push(bucket);
    if (buckets.length > maxSeriesBuckets) {
      throw new ValidationError(`The range holds more than ${maxSeriesBuckets} ${granularity}s: use a coarser granularity or a shorter range.`, {
        details: [{ field: 'granularity', message: `gives more than ${maxSeriesBuckets} buckets for this range` }],
      });
    }
  }
  return buckets;
}
