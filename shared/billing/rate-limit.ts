import { logger } from '../platform/logger.ts';
import type { RateLimitStore } from './ports.ts';

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
  refill?: Promise<LeaseOutcome> | undefined;
  /** Requests of this process waiting for a token now: the next lease is at least this big. */
  waiting: number;
  /** Requests offered to this bucket in this process: in the current second, and in the one before. */
  demand: { second: number; current: number; previous: number };
}

/** `unavailable`: the table could not be written (an error, not a refusal). */
type LeaseOutcome = 'done' | 'unavailable';

/** A lease is used within this long, or its tokens are dropped (never carried into a later second). */
const leaseLifetimeMs = 1_000;
const maxAdvanceAttempts = 4;
const maxLeaseWaits = 3;
const maxBuckets = 10_000;

/**
 * The tokens a bucket whose theoretical arrival time is `base` (not before `now`) holds at `now`: the burst less
 * what `base` is ahead. Counted from the burst so that `base = now` gives exactly the burst, whatever the float
 * rounding of the interval (1000 / 15 ms).
 */
function tokensAt(limit: RateLimit, now: number, base: number): number {
  return limit.burst + Math.floor(((now - base) * limit.requestsPerSecond) / 1000);
}

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
    if (!this.hasToken(state)) {
      state.waiting += 1;
      try {
        // A lease another request started may not cover this one (the table was slow, requests piled up): the next
        // lease does, since it counts every request waiting. Refused only when the bucket is known to be empty.
        for (let attempt = 0; !this.hasToken(state); attempt += 1) {
          if (this.now() < state.refusedUntil || attempt >= maxLeaseWaits) return this.refusal(state, limit);
          if ((await this.refill(orgId, bucket, limit, state)) === 'unavailable') {
            // The table's trouble is not the client's: admitted, with no token spent.
            return { admitted: true, retryAfterSeconds: 0, remaining: this.remaining(state, limit) };
          }
        }
      } finally {
        state.waiting -= 1;
      }
    }
    state.tokens -= 1;
    if (state.tokens <= this.leaseSizeOf(state, limit) / 2 && !state.refill) {
      // Ahead of need: the next requests find tokens without waiting for the write.
      void this.refill(orgId, bucket, limit, state);
    }
    return { admitted: true, retryAfterSeconds: 0, remaining: this.remaining(state, limit) };
  }

  /** The lease and what the bucket holds beside it, never more than the burst (the bucket's size). */
  private remaining(state: BucketState, limit: RateLimit): number {
    return Math.min(limit.burst, state.tokens + this.bucketTokens(state, limit));
  }

  private bucketState(id: string): BucketState {
    let state = this.buckets.get(id);
    if (!state) {
      if (this.buckets.size >= maxBuckets) this.buckets.delete(this.buckets.keys().next().value as string);
      state = { tokens: 0, leaseValidUntil: 0, refusedUntil: 0, waiting: 0, demand: { second: 0, current: 0, previous: 0 } };
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

  /** Half a second of recent demand, and at least every request waiting now (never more than the burst). */
  private leaseSizeOf(state: BucketState, limit: RateLimit): number {
    return Math.min(limit.burst, Math.max(state.waiting, leaseSize(limit, Math.max(state.demand.current, state.demand.previous))));
  }

  private hasToken(state: BucketState): boolean {
    if (state.tokens > 0 && state.leaseValidUntil <= this.now()) state.tokens = 0;
    return state.tokens > 0;
  }

  /** What the bucket holds by this process's knowledge, beside its own lease. */
  private bucketTokens(state: BucketState, limit: RateLimit): number {
    const now = this.now();
    return Math.max(0, tokensAt(limit, now, Math.max(state.knownTat ?? 0, now)));
  }

  private refusal(state: BucketState, limit: RateLimit): RateDecision {
    const waitMs = Math.max(state.refusedUntil - this.now(), 1000 / limit.requestsPerSecond);
    return { admitted: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)), remaining: 0 };
  }

  private refill(orgId: string, bucket: string, limit: RateLimit, state: BucketState): Promise<LeaseOutcome> {
    state.refill ??= this.lease(orgId, bucket, limit, state)
      .then((): LeaseOutcome => 'done')
      .catch((error: unknown): LeaseOutcome => {
        logger.warn('rate limit table unavailable; admitting', { bucket, error: error as Error });
        return 'unavailable';
      })
      .finally(() => {
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
      const available = tokensAt(limit, now, base);
      // Ahead of need (no request waiting), wait for a whole lease rather than write for a part; requests waiting
      // take what there is. The jitter keeps processes from racing for the next lease.
      const granted = state.waiting > 0 ? Math.min(wanted, available) : wanted;
      if (granted < 1 || available < granted) {
        state.refusedUntil = base - tolerance + wanted * interval + Math.random() * wanted * interval;
        return;
      }
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
