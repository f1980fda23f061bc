/**
 * The accounting of usage billed by use (shared/billing/metered-billing.ts) on a store that keeps its state in
 * memory, with the DynamoDB store's conditions: what is reported, in which ranges, across a month's end, from when a
 * plan bills by use, and that a report written down is sent as written whatever fails. The DynamoDB store and Stripe
 * (the simulator) are exercised end to end in stripe-billing.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { reportMeteredUsage } from '../../shared/billing/metered-billing.ts';
import { createPlanCatalog } from '../../shared/billing/plans.ts';
import type { BilledUsage, MeteringState, MeterEvent, MeterReport, StoredSubscription, UsageStore } from '../../shared/billing/ports.ts';

const plans = createPlanCatalog({
  PLANS: JSON.stringify({
    pro: { name: 'Pro', quotas: { chat_messages: null, voice_seconds: null, knowledge_chunks: null }, concurrentCalls: 10, requestsPerSecond: 50, burst: 100, meteredMetrics: ['chat_messages'] },
  }),
});

/** The counts by month, the metering item, and the conditions DynamoUsageStore puts on it. */
class MemoryUsage implements Pick<UsageStore, 'periodCounts' | 'meteringState' | 'accountMetering' | 'endMeterReport'> {
  counts = new Map<string, Record<string, number>>();
  state: MeteringState = { version: 0 };
  writes = 0;

  async periodCounts(_orgId: string, month: string) {
    return { ...this.counts.get(month) };
  }
  async meteringState() {
    return structuredClone(this.state);
  }
  async accountMetering(_orgId: string, version: number, billed: BilledUsage, report?: MeterReport) {
    if (this.state.version !== version || this.state.pending) return false;
    this.writes += 1;
    this.state = { version: version + 1, billed: structuredClone(billed), pending: report && structuredClone(report) };
    return true;
  }
  async endMeterReport(_orgId: string, reportId: string) {
    if (this.state.pending?.id === reportId) this.state = { ...this.state, pending: undefined };
  }
}

function setUp(at: string) {
  const usage = new MemoryUsage();
  const sent: MeterEvent[] = [];
  let failing = 0;
  const clock = { now: () => new Date(at) };
  const deps = {
    usage: usage as unknown as UsageStore,
    plans,
    clock,
    meterEvents: {
      send: async (event: MeterEvent) => {
        if (failing > 0) {
          failing -= 1;
          throw new Error('Stripe did not answer');
        }
        sent.push(event);
      },
    },
  };
  return { usage, sent, deps, failNext: (count: number) => (failing = count), moveTo: (when: string) => (clock.now = () => new Date(when)) };
}

const subscription = (plan: string, linked = true): StoredSubscription => ({
  orgId: 'org-1',
  subscriptionId: 'sub_1',
  status: 'active',
  currentPlan: plan,
  provider: linked ? 'stripe' : 'manual',
  providerCustomerId: 'cus_1',
  providerSubscriptionId: linked ? 'sub_stripe_1' : undefined,
  createdAt: '2026-11-01T00:00:00.000Z',
  updatedAt: '2026-11-01T00:00:00.000Z',
});

describe('metered billing', () => {
  it('bills nothing counted before the plan billed by use, then each new unit once, in ranges that follow each other', async () => {
    // Prepare
    const { usage, sent, deps } = setUp('2026-11-10T12:00:00Z');
    usage.counts.set('2026-11', { chat_messages: 10, voice_seconds: 60 });

    // Act
    await reportMeteredUsage(deps, subscription('free', false));
    usage.counts.set('2026-11', { chat_messages: 15, voice_seconds: 90 });
    await reportMeteredUsage(deps, subscription('pro'));
    usage.counts.set('2026-11', { chat_messages: 18, voice_seconds: 95 });
    await reportMeteredUsage(deps, subscription('pro'));

    // Assess
    expect(sent.map((event) => [event.eventName, event.value, event.identifier])).toEqual([
      ['chat_messages', 5, 'cus_1:2026-11:chat_messages:10-15'],
      ['chat_messages', 3, 'cus_1:2026-11:chat_messages:15-18'],
    ]);
    expect(sent.every((event) => event.customerId === 'cus_1' && event.timestamp === Date.parse('2026-11-10T12:00:00Z') / 1000)).toBe(true);
  });

  it('bills what the ended month counted after its last report, then the new month from zero', async () => {
    // Prepare
    const { usage, sent, deps, moveTo } = setUp('2026-10-31T23:59:00Z');
    usage.counts.set('2026-10', { chat_messages: 7 });
    await reportMeteredUsage(deps, subscription('free', false));
    usage.counts.set('2026-10', { chat_messages: 9 });
    usage.counts.set('2026-11', { chat_messages: 3 });
    moveTo('2026-11-01T00:01:00Z');

    // Act
    await reportMeteredUsage(deps, subscription('pro'));

    // Assess
    expect(sent.map((event) => [event.identifier, event.value])).toEqual([
      ['cus_1:2026-10:chat_messages:7-9', 2],
      ['cus_1:2026-11:chat_messages:0-3', 3],
    ]);
    expect(usage.state.billed).toEqual({ month: '2026-11', totals: { chat_messages: 3, voice_seconds: 0 } });
  });

  it('sends a report that failed as it was written, before anything counted since', async () => {
    // Prepare
    const { usage, sent, deps, failNext } = setUp('2026-11-10T12:00:00Z');
    usage.counts.set('2026-11', { chat_messages: 0 });
    await reportMeteredUsage(deps, subscription('free', false));
    usage.counts.set('2026-11', { chat_messages: 4 });
    failNext(1);

    // Act
    const failed = await reportMeteredUsage(deps, subscription('pro')).catch((error: Error) => error.message);
    const pendingAfterFailure = structuredClone(usage.state.pending);
    usage.counts.set('2026-11', { chat_messages: 6 });
    await reportMeteredUsage(deps, subscription('pro'));

    // Assess
    expect(failed).toBe('Stripe did not answer');
    expect(pendingAfterFailure?.events.map((event) => event.identifier)).toEqual(['cus_1:2026-11:chat_messages:0-4']);
    expect(sent.map((event) => event.identifier)).toEqual(['cus_1:2026-11:chat_messages:0-4', 'cus_1:2026-11:chat_messages:4-6']);
    expect(usage.state.pending).toBeUndefined();
  });

  it('leaves to another process what it accounted meanwhile, and writes nothing when nothing was counted', async () => {
    // Prepare
    const { usage, sent, deps } = setUp('2026-11-10T12:00:00Z');
    usage.counts.set('2026-11', { chat_messages: 2 });
    await reportMeteredUsage(deps, subscription('free', false));
    usage.counts.set('2026-11', { chat_messages: 5 });
    const seen = await usage.meteringState();
    await reportMeteredUsage(deps, subscription('pro'));
    const writes = usage.writes;

    // Act
    const late = await reportMeteredUsage(deps, subscription('pro'), seen);
    const again = await reportMeteredUsage(deps, subscription('pro'));

    // Assess
    expect(late).toBe(0);
    expect(again).toBe(0);
    expect(usage.writes).toBe(writes);
    expect(sent.map((event) => event.identifier)).toEqual(['cus_1:2026-11:chat_messages:2-5']);
  });

  it('bills nothing for a canceled subscription or a plan without metered metrics, only accounts it', async () => {
    // Prepare
    const { usage, sent, deps } = setUp('2026-11-10T12:00:00Z');
    usage.counts.set('2026-11', { chat_messages: 1 });
    await reportMeteredUsage(deps, subscription('free', false));
    usage.counts.set('2026-11', { chat_messages: 4 });

    // Act
    await reportMeteredUsage(deps, { ...subscription('pro'), status: 'canceled' });
    usage.counts.set('2026-11', { chat_messages: 6 });
    await reportMeteredUsage(deps, subscription('enterprise'));

    // Assess
    expect(sent).toEqual([]);
    expect(usage.state.billed?.totals.chat_messages).toBe(6);
  });
});
