/** The ports of the billing context: the interfaces its use cases depend on, implemented by its adapters (issue 22 split shared/ports.ts by context). */
import type { AnalyticsRecord, EndedSessionFacts } from './analytics.ts';
import type { Checkout, MeterableMetric, SubscriptionStatus } from './billing-schemas.ts';
import type { Granularity, MeteredRecord, UsageCounts } from './usage.ts';
import type { DomainEvent } from '../events/events.ts';

export interface UsageStore {
  /**
   * Counts the records (all of one organization) exactly once: those a session's meter is already past are
   * skipped. True when anything was added. Throws CountingGapError when a message before these was not counted yet.
   */
  record(orgId: string, records: readonly MeteredRecord[]): Promise<boolean>;
  /** The counters of the buckets from `fromBucket` to `toBucket` (inclusive) that have any, by bucket. */
  counters(orgId: string, granularity: Granularity, fromBucket: string, toBucket: string): Promise<Map<string, UsageCounts>>;
  /** The month's counters (`yyyy-mm`) with the stocks as they are now (`knowledge_chunks`), strongly consistent. */
  periodCounts(orgId: string, month: string): Promise<UsageCounts>;
  /** The changes of the stocks made at or after `since` (RFC 3339), strongly consistent. */
  stockChangesSince(orgId: string, since: string): Promise<StockChange[]>;
  /**
   * Marks a roll-up as due at `due` (epoch ms) unless one is pending already (a pending one older than
   * `staleBefore` counts as lost); true when this call marked it, and must then queue it.
   */
  markRollupDue(orgId: string, due: number, staleBefore: number): Promise<boolean>;
  /** Removes the mark `due` (its queue message could not be sent). */
  unmarkRollup(orgId: string, due: number): Promise<void>;
  rollupState(orgId: string): Promise<RollupState>;
  /**
   * Ends the pending roll-up `due`: records what was reported and writes its `usage.updated` event, or, without
   * one, only clears the mark. False when the mark is not `due` any more (a duplicate message).
   */
  completeRollup(orgId: string, due: number, report?: { at: number; metrics: Record<string, unknown>; event: DomainEvent }): Promise<boolean>;
  /** How far the organization's usage was accounted for the billing provider's meters, and the report being sent. */
  meteringState(orgId: string): Promise<MeteringState>;
  /**
   * Moves what was accounted from `version` to `billed`, with the report that tells the provider of it (none when
   * nothing is billed by use); false when another process moved it meanwhile, or a report is still pending.
   */
  accountMetering(orgId: string, version: number, billed: BilledUsage, report?: MeterReport): Promise<boolean>;
  /** The report was sent: it is pending no more. */
  endMeterReport(orgId: string, reportId: string): Promise<void>;
}

/** The month's counts of the meterable metrics up to which usage was accounted (reported, or left unbilled). */
export interface BilledUsage {
  month: string;
  totals: Partial<Record<MeterableMetric, number>>;
}

export interface MeteringState {
  /** 0 before anything was accounted. */
  version: number;
  billed?: BilledUsage | undefined;
  /** Written before it is sent, so that a retry sends the very same events. */
  pending?: MeterReport | undefined;
}

/** Usage billed by use, as told to the provider's meter: one metric's counts from one total to the next. */
export interface MeterEvent {
  /** The meter's event name: the metric's name. */
  eventName: MeterableMetric;
  customerId: string;
  /** A whole number: the units counted since the last report. */
  value: number;
  /** Unique per organization, month, metric and range of counts, so the provider counts it once however often it is sent. */
  identifier: string;
  /** Unix seconds. */
  timestamp: number;
}

export interface MeterReport {
  id: string;
  events: MeterEvent[];
}

/** The billing provider's meters (Stripe Billing Meters). */
export interface MeterEventSink {
  /** Throws when the provider may take it later (unreachable, overloaded); an event it refuses for good is logged and dropped. */
  send(event: MeterEvent): Promise<void>;
}

/** A stock (`knowledge_chunks`) moved by `delta` at `at`. */
export interface StockChange {
  metric: string;
  delta: number;
  at: string;
}

/** What the organization's last `usage.updated` said, and when it was sent; the roll-up pending, if any. */
export interface RollupState {
  pendingUntil?: number | undefined;
  lastSentAt?: number | undefined;
  reported?: Record<string, unknown> | undefined;
}

export interface RollupMessage {
  orgId: string;
  /** The roll-up's mark: when it is due (epoch ms). */
  notBefore: number;
}

/** The subscription as stored: its period is the calendar month, computed, not stored. */
export interface StoredSubscription {
  orgId: string;
  subscriptionId: string;
  status: SubscriptionStatus;
  currentPlan: string;
  provider: 'manual' | 'stripe';
  /** The billing provider's ids (Stripe customer and subscription), when it has them. */
  providerCustomerId?: string | undefined;
  providerSubscriptionId?: string | undefined;
  pastDueSince?: string | undefined;
  createdAt: string;
  updatedAt: string;
}

export interface SubscriptionStore {
  get(orgId: string): Promise<StoredSubscription | undefined>;
  /**
   * Writes `next` with its `subscription.updated` outbox event, if the stored subscription is still `previous`
   * (none stored: still none); false when it changed meanwhile. Without an event for what clients do not see (the
   * provider's customer).
   */
  replace(previous: StoredSubscription | undefined, next: StoredSubscription, event?: DomainEvent): Promise<boolean>;
}

export interface RateLimitStore {
  /**
   * Moves the bucket's theoretical arrival time from `expected` (undefined: the bucket has none yet) to `next`
   * (epoch ms); when it was not `expected`, nothing is written and the stored value is returned.
   */
  advance(orgId: string, bucket: string, expected: number | undefined, next: number): Promise<{ advanced: true } | { advanced: false; stored: number | undefined }>;
}

/** One pre-aggregated analytics item: an agent's counts in one hour or day. */
export interface AnalyticsAggregate {
  bucket: string;
  agentId: string;
  counts: Record<string, number>;
}

export interface AnalyticsStore {
  /** Adds the records exactly once (a session's marker `#ANALYTICS` is past what was counted). */
  record(orgId: string, records: readonly AnalyticsRecord[]): Promise<void>;
  /** The agent and the end facts of sessions, for the records that need them. */
  sessionFacts(orgId: string, sessionIds: readonly string[]): Promise<Map<string, { agentId: string } & EndedSessionFacts>>;
  /** The aggregates of the buckets from `fromBucket` to `toBucket` (inclusive), of one agent or all. */
  aggregates(orgId: string, granularity: 'hour' | 'day', fromBucket: string, toBucket: string, agentId?: string): Promise<AnalyticsAggregate[]>;
}

/** The changes of a subscription the API makes (the provider drives payments itself). */
export type ProviderChange = { kind: 'changePlan'; plan: string } | { kind: 'pause' } | { kind: 'resume' } | { kind: 'cancel' };

/** The provider's subscription a change left the organization with (none: unlinked), and its customer. */
export interface ProviderLink {
  providerCustomerId?: string | undefined;
  providerSubscriptionId: string | undefined;
}

export interface CheckoutRequest {
  plan: string;
  successUrl: string;
  cancelUrl: string;
}

/** Who bills the organization: told of every change the API makes, before it is recorded. */
export interface BillingProvider {
  readonly name: 'manual' | 'stripe';
  /**
   * Throws when the provider refuses; the change is then not recorded. Returns the provider subscription the change
   * made or ended, recorded with it; nothing when the link does not change.
   */
  apply(subscription: StoredSubscription, change: ProviderChange): Promise<ProviderLink | undefined>;
  /**
   * A page where the customer pays for `plan` (Stripe Checkout); the plan applies when the provider tells us it was
   * paid. Returns the provider's customer of the organization (made on the first checkout) with it.
   */
  startCheckout(subscription: StoredSubscription, request: CheckoutRequest): Promise<{ checkout: Checkout; providerCustomerId: string }>;
}
