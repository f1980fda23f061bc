import { randomUUID } from 'node:crypto';
import type { Clock } from '../platform/clock.ts';
import { logger } from '../platform/logger.ts';
import { meterableMetrics, type MeterableMetric } from './billing-schemas.ts';
import type { PlanCatalog } from './plans.ts';
import type { BilledUsage, MeteringState, MeterEvent, MeterEventSink, MeterReport, StoredSubscription, SubscriptionStore, UsageStore } from './ports.ts';
import { bucketOf } from './usage.ts';

/**
 * Usage billed by use (docs/usage-and-billing.md#metered-billing): what the usage counters counted is told to the
 * billing provider's meters as it grows, each unit once. What is reported, or left unbilled, is kept as the month's
 * counts it was accounted up to (`billed`); each report is the difference since, written down before it is sent
 * (`pending`) so that a retry sends the very same events, whose identifiers the provider counts once.
 */
export interface MeteringDeps {
  usage: UsageStore;
  plans: PlanCatalog;
  clock: Clock;
  meterEvents: MeterEventSink;
}

/** Who is billed by use for what: the plan's metered metrics, while a provider subscription that is not canceled is linked. */
export function meteringOf(subscription: StoredSubscription, plans: PlanCatalog): { customerId: string; metrics: readonly MeterableMetric[] } | undefined {
  if (!subscription.providerSubscriptionId || !subscription.providerCustomerId || subscription.status === 'canceled') return undefined;
  const plan = plans.list().find((candidate) => candidate.id === subscription.currentPlan);
  if (!plan?.meteredMetrics.length) return undefined;
  return { customerId: subscription.providerCustomerId, metrics: plan.meteredMetrics };
}

/**
 * Accounts the organization's usage up to now under `subscription` as it is: the metrics it meters are reported (the
 * counts since the last account, also those of a month that ended since), the others are only marked accounted, so
 * that a plan billed by use from now on does not bill what came before. Then sends the report. A report left
 * pending by an earlier attempt is sent first. Returns the events sent.
 */
export async function reportMeteredUsage(deps: MeteringDeps, subscription: StoredSubscription, known?: MeteringState): Promise<number> {
  const orgId = subscription.orgId;
  let state = known ?? (await deps.usage.meteringState(orgId));
  let sent = 0;
  if (state.pending) {
    sent += await send(deps, orgId, state.pending);
    state = { ...state, pending: undefined };
  }
  const now = deps.clock.now();
  const month = bucketOf(now.toISOString(), 'month');
  const metering = meteringOf(subscription, deps.plans);
  const counts = await deps.usage.periodCounts(orgId, month);
  const timestamp = Math.floor(now.getTime() / 1000);
  const events: MeterEvent[] = [];
  const report = (period: string, metric: MeterableMetric, from: number, to: number) => {
    if (!metering?.metrics.includes(metric) || to <= from) return;
    events.push({ eventName: metric, customerId: metering.customerId, value: to - from, identifier: `${metering.customerId}:${period}:${metric}:${from}-${to}`, timestamp });
  };
  const { billed } = state;
  if (!billed && metering) logger.warn('metered usage has no account yet: billed from now on', { orgId });
  if (billed && billed.month !== month) {
    // What the ended month counted after its last account.
    const ended = await deps.usage.periodCounts(orgId, billed.month);
    for (const metric of meterableMetrics) report(billed.month, metric, billed.totals[metric] ?? 0, ended[metric] ?? 0);
  }
  const next: BilledUsage = { month, totals: Object.fromEntries(meterableMetrics.map((metric) => [metric, counts[metric] ?? 0])) };
  for (const metric of meterableMetrics) {
    const from = billed?.month === month ? (billed.totals[metric] ?? 0) : billed ? 0 : (next.totals[metric] ?? 0);
    report(month, metric, from, next.totals[metric] ?? 0);
  }
  const unchanged = billed?.month === month && meterableMetrics.every((metric) => (billed.totals[metric] ?? 0) === next.totals[metric]);
  if (unchanged) return sent;
  const pending = events.length ? { id: randomUUID(), events } : undefined;
  // Another process accounted meanwhile: what it wrote down, it sends.
  if (!(await deps.usage.accountMetering(orgId, state.version, next, pending))) return sent;
  return sent + (pending ? await send(deps, orgId, pending) : 0);
}

/**
 * The roll-up's part (shared/billing/usage-rollup.ts): reports the organization's usage if its subscription bills
 * by use, or finishes a report left pending. Organizations billed by nothing cost two reads and no write.
 */
export async function billMeteredUsage(deps: MeteringDeps & { subscriptions: SubscriptionStore }, orgId: string): Promise<number> {
  const [subscription, state] = await Promise.all([deps.subscriptions.get(orgId), deps.usage.meteringState(orgId)]);
  if (!subscription || (!meteringOf(subscription, deps.plans) && !state.pending)) return 0;
  return reportMeteredUsage(deps, subscription, state);
}

/** One meter, one customer: Stripe takes one call at a time for each, so the events go one after another. */
async function send(deps: MeteringDeps, orgId: string, report: MeterReport): Promise<number> {
  for (const event of report.events) await deps.meterEvents.send(event);
  await deps.usage.endMeterReport(orgId, report.id);
  return report.events.length;
}
