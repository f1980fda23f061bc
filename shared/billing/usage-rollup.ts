import type { MeterEventSink, RollupMessage, SubscriptionStore, UsageStore } from './ports.ts';
import type { ScheduledQueue } from '../platform/ports.ts';
import { quotaMetrics, type QuotaMetric } from './billing-schemas.ts';
import type { Clock } from '../platform/clock.ts';
import { billingEvents } from './billing-events.ts';
import { billMeteredUsage } from './metered-billing.ts';
import type { PlanCatalog } from './plans.ts';
import { currentPeriod } from './subscriptions.ts';
import { bucketOf } from './usage.ts';

export interface RollupDeps {
  usage: UsageStore;
  rollups: ScheduledQueue<RollupMessage>;
  clock: Clock;
  config: { USAGE_ROLLUP_SECONDS: number };
  subscriptions: SubscriptionStore;
  plans: PlanCatalog;
  /** Where usage billed by use is reported (Stripe's meters), when the provider bills by use. */
  meterEvents?: MeterEventSink | undefined;
}

/** A roll-up marked but not handled this long after it was due is taken for lost (its message never came). */
const lostAfterMs = 5 * 60 * 1000;

/**
 * The roll-ups this process marked, by organization, with the time each is due: until shortly before then, the
 * mark is still there (a roll-up is handled only once due), so marking again could only find it and is skipped.
 */
const markedByThisProcess = new Map<string, number>();
const maxRemembered = 10_000;
/** Clocks of the meter and of the roll-up that differ by less than this never make a needed mark skipped. */
const clockMarginMs = 5_000;

/**
 * After usage of the organization was counted: unless a roll-up is pending, one is marked and queued for
 * USAGE_ROLLUP_SECONDS from now. Since a roll-up is marked only once the previous one is done, `usage.updated`
 * leaves at most once per USAGE_ROLLUP_SECONDS per organization, and a change waits at most that long. A mark this
 * process made, not yet nearly due, is known to be there without a write.
 */
export async function scheduleRollup(deps: RollupDeps, orgId: string): Promise<void> {
  const now = deps.clock.now().getTime();
  if ((markedByThisProcess.get(orgId) ?? 0) - clockMarginMs > now) return;
  const due = now + deps.config.USAGE_ROLLUP_SECONDS * 1000;
  if (!(await deps.usage.markRollupDue(orgId, due, now - deps.config.USAGE_ROLLUP_SECONDS * 1000 - lostAfterMs))) return;
  try {
    await deps.rollups.schedule([{ orgId, notBefore: due }]);
  } catch (error) {
    // Unmarked, the retried batch marks and queues it again.
    await deps.usage.unmarkRollup(orgId, due);
    throw error;
  }
  markedByThisProcess.delete(orgId);
  if (markedByThisProcess.size >= maxRemembered) markedByThisProcess.delete(markedByThisProcess.keys().next().value as string);
  markedByThisProcess.set(orgId, due);
}

/**
 * A due roll-up: `usage.updated` with the period's totals if they differ from the last one sent (and nothing
 * otherwise), written with the end of the mark so a duplicate message sends nothing. Usage counted meanwhile,
 * whose own scheduling found this mark still set, gets a roll-up of its own. Then usage billed by use is reported
 * (docs/usage-and-billing.md#metered-billing); a report that fails fails the message, whose retry (a duplicate for
 * `usage.updated`) sends the same report again.
 */
export async function handleRollup(deps: RollupDeps, message: RollupMessage): Promise<'sent' | 'unchanged' | 'duplicate' | 'early'> {
  const outcome = await rollUp(deps, message);
  if (outcome !== 'early' && deps.meterEvents) await billMeteredUsage({ ...deps, meterEvents: deps.meterEvents }, message.orgId);
  return outcome;
}

async function rollUp(deps: RollupDeps, message: RollupMessage): Promise<'sent' | 'unchanged' | 'duplicate' | 'early'> {
  const now = deps.clock.now();
  if (now.getTime() < message.notBefore) {
    await deps.rollups.schedule([message]);
    return 'early';
  }
  const month = bucketOf(now.toISOString(), 'month');
  const [state, counts] = await Promise.all([deps.usage.rollupState(message.orgId), deps.usage.periodCounts(message.orgId, month)]);
  if (state.pendingUntil !== message.notBefore) return 'duplicate';
  const metrics = Object.fromEntries(quotaMetrics.map((metric) => [metric, counts[metric] ?? 0])) as Record<QuotaMetric, number>;
  const reported = { month, ...metrics };
  const unchanged = state.reported !== undefined && Object.entries(reported).every(([field, value]) => state.reported?.[field] === value);
  let outcome: 'sent' | 'unchanged' | 'duplicate';
  if (unchanged) {
    outcome = (await deps.usage.completeRollup(message.orgId, message.notBefore)) ? 'unchanged' : 'duplicate';
  } else {
    const period = currentPeriod(now);
    const event = billingEvents.usageUpdated(message.orgId, now.toISOString(), { period: { start: period.start.toISOString(), end: period.end.toISOString() }, metrics });
    const sent = await deps.usage.completeRollup(message.orgId, message.notBefore, { at: now.getTime(), metrics: reported, event });
    outcome = sent ? 'sent' : 'duplicate';
  }
  if (outcome === 'duplicate') return outcome;
  const after = await deps.usage.periodCounts(message.orgId, month);
  if (quotaMetrics.some((metric) => (after[metric] ?? 0) !== metrics[metric])) await scheduleRollup(deps, message.orgId);
  return outcome;
}
