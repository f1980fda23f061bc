import type { RateLimitStore } from '../ports.ts';

export interface RateLimit {
  requestsPerSecond: number;
  burst: number;
}

export interface RateDecision {
  admitted: boolean;
  /** When refused: seconds until a request would be admitted (at least 1). */
  retryAfterSeconds: number;
  /** About how many requests the bucket would admit now (this process's lease and what it last saw of the bucket). */
  remaining: number;
}

interface BucketState {
  /** The bucket's theoretical arrival time as this process last wrote or read it: a lower bound of the stored one. */
  knownTat?: number | undefined;
  tokens: number;
  leaseValidUntil: number;
  /** Nothing to lease before this time (known from `knownTat`): refused without asking the table. */
  refusedUntil: number;
  refill?: Promise<void> | undefined;
  /** Requests offered to this bucket in this process: in the current second, and in the one before. */
  demand: { second: number; current: number; previous: number };
}

/** A lease is used within this long, or its tokens are dropped (never carried into a later second). */
const leaseLifetimeMs = 1_000;
const maxAdvanceAttempts = 4;
const maxLeaseWaits = 3;
const maxBuckets = 10_000;

/**
 * Tokens taken per write: what this process was asked for in half a second lately, at least 1, at most the burst.
 * A busy process thus writes about twice a second whatever its traffic, and a quiet one leases little to drop.
 */
export function leaseSize(limit: RateLimit, requestsPerSecond: number): number {
  return Math.max(1, Math.min(limit.burst, Math.ceil(requestsPerSecond / 2)));
}

/**
 * A token bucket (GCRA: rate `requestsPerSecond`, up to `burst` at once) kept in one table item per bucket and
 * shared by every process: a process leases a batch of tokens with one conditional write and admits from it
 * locally, refills in the background at half, and refuses without any I/O while its own knowledge shows the
 * bucket empty. Leased tokens count as spent, so every process together admits at most `rate × t + burst` in any
 * interval t; unused leased tokens are dropped after a second (docs/usage-and-billing.md#rate-limits).
 */
export class RateLimiter {
  private readonly store: RateLimitStore;
  private readonly now: () => number;
  private readonly buckets = new Map<string, BucketState>();

  constructor(store: RateLimitStore, now: () => number = Date.now) {
    this.store = store;
    this.now = now;
  }

  async admit(orgId: string, bucket: string, limit: RateLimit): Promise<RateDecision> {
    const state = this.bucketState(`${orgId}/${bucket}`);
    this.recordDemand(state);
    // Requests that waited for a lease another request started may find it taken: they lease again, unless the
    // bucket is known to be empty.
    for (let attempt = 0; !this.hasToken(state); attempt += 1) {
      if (this.now() < state.refusedUntil || attempt >= maxLeaseWaits) return this.refusal(state, limit);
      await this.refill(orgId, bucket, limit, state);
    }
    state.tokens -= 1;
    if (state.tokens <= this.leaseSizeOf(state, limit) / 2 && !state.refill) {
      // Ahead of need: the next requests find tokens without waiting for the write.
      this.refill(orgId, bucket, limit, state).catch(() => undefined);
    }
    return { admitted: true, retryAfterSeconds: 0, remaining: state.tokens + this.bucketTokens(state, limit) };
  }

  private bucketState(id: string): BucketState {
    let state = this.buckets.get(id);
    if (!state) {
      if (this.buckets.size >= maxBuckets) this.buckets.delete(this.buckets.keys().next().value as string);
      state = { tokens: 0, leaseValidUntil: 0, refusedUntil: 0, demand: { second: 0, current: 0, previous: 0 } };
      this.buckets.set(id, state);
    }
    return state;
  }

  private recordDemand(state: BucketState): void {
    const second = Math.floor(this.now() / 1000);
    if (second !== state.demand.second) {
      state.demand = { second, current: 0, previous: second === state.demand.second + 1 ? state.demand.current : 0 };
    }
    state.demand.current += 1;
  }

  private leaseSizeOf(state: BucketState, limit: RateLimit): number {
    return leaseSize(limit, Math.max(state.demand.current, state.demand.previous));
  }

  private hasToken(state: BucketState): boolean {
    if (state.tokens > 0 && state.leaseValidUntil <= this.now()) state.tokens = 0;
    return state.tokens > 0;
  }

  /** What the bucket holds by this process's knowledge, beside its own lease. */
  private bucketTokens(state: BucketState, limit: RateLimit): number {
    const interval = 1000 / limit.requestsPerSecond;
    const now = this.now();
    return Math.max(0, Math.floor((now + limit.burst * interval - Math.max(state.knownTat ?? 0, now)) / interval));
  }

  private refusal(state: BucketState, limit: RateLimit): RateDecision {
    const waitMs = Math.max(state.refusedUntil - this.now(), 1000 / limit.requestsPerSecond);
    return { admitted: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)), remaining: 0 };
  }

  private refill(orgId: string, bucket: string, limit: RateLimit, state: BucketState): Promise<void> {
    state.refill ??= this.lease(orgId, bucket, limit, state).finally(() => {
      state.refill = undefined;
    });
    return state.refill;
  }

  private async lease(orgId: string, bucket: string, limit: RateLimit, state: BucketState): Promise<void> {
    const interval = 1000 / limit.requestsPerSecond;
    const tolerance = limit.burst * interval;
    const wanted = this.leaseSizeOf(state, limit);
    for (let attempt = 0; attempt < maxAdvanceAttempts; attempt += 1) {
      const now = this.now();
      const base = Math.max(state.knownTat ?? 0, now);
      const available = Math.floor((now + tolerance - base) / interval);
      if (available < wanted) {
        // Wait for a whole lease rather than write for a part; the jitter keeps processes from racing for it.
        state.refusedUntil = base - tolerance + wanted * interval + Math.random() * wanted * interval;
        return;
      }
      const granted = wanted;
      const next = Math.ceil(base + granted * interval);
      const result = await this.store.advance(orgId, bucket, state.knownTat, next);
      if (result.advanced) {
        state.knownTat = next;
        state.tokens = (state.leaseValidUntil > this.now() ? state.tokens : 0) + granted;
        state.leaseValidUntil = this.now() + leaseLifetimeMs;
        return;
      }
      state.knownTat = result.stored;
    }
    // Other processes keep winning the bucket: this request is refused, the next one tries again.
    state.refusedUntil = this.now() + interval;
  }
}
