/**
 * The rate limiter against a slow table, on a simulated clock: whatever the timings of the requests and of the
 * table's answers, a client under its rate is never refused and `remaining` stays within [0, burst]. The table is
 * simulated here because its latency is what varies; test/billing/rate-limits.test.ts runs the same limiter on
 * DynamoDB Local.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RateLimiter, type RateDecision } from '../../shared/billing/rate-limit.ts';
import type { RateLimitStore } from '../../shared/billing/ports.ts';

/** Callbacks due at simulated times, run in time order; after each, every promise it settled runs its course. */
class SimulatedClock {
  now = 1_700_000_000_000;
  private readonly due: { at: number; order: number; run: () => void }[] = [];
  private scheduled = 0;

  at(at: number, run: () => void): void {
    this.due.push({ at, order: (this.scheduled += 1), run });
  }

  async runAll(): Promise<void> {
    for (;;) {
      await new Promise((resolve) => setImmediate(resolve));
      this.due.sort((a, b) => a.at - b.at || a.order - b.order);
      const next = this.due.shift();
      if (!next) return;
      this.now = Math.max(this.now, next.at);
      next.run();
    }
  }
}

/** One bucket's `tat`, written when a write reaches it; each write takes its latency (or fails, as a timeout). */
class SlowTable implements RateLimitStore {
  private readonly clock: SimulatedClock;
  private readonly answers: { latencyMs: number; fails: boolean }[];
  private tat: number | undefined;
  private writes = 0;

  constructor(clock: SimulatedClock, answers: { latencyMs: number; fails: boolean }[]) {
    this.clock = clock;
    this.answers = answers;
  }

  advance(_orgId: string, _bucket: string, expected: number | undefined, next: number) {
    const answer = this.answers[this.writes++ % this.answers.length] as { latencyMs: number; fails: boolean };
    return new Promise<{ advanced: true } | { advanced: false; stored: number | undefined }>((resolve, reject) => {
      this.clock.at(this.clock.now + answer.latencyMs, () => {
        if (answer.fails) return reject(new Error('the table did not answer'));
        if (this.tat !== expected) return resolve({ advanced: false, stored: this.tat });
        this.tat = next;
        resolve({ advanced: true });
      });
    });
  }
}

const underItsRate = fc
  .record({
    requestsPerSecond: fc.integer({ min: 1, max: 1_000 }),
    burst: fc.integer({ min: 1, max: 2_000 }),
    // The client's smallest gap between requests, in multiples of four of the limit's interval: at most a quarter
    // of its rate.
    spacing: fc.integer({ min: 4, max: 40 }),
    gaps: fc.array(fc.double({ min: 1, max: 5, noNaN: true }), { minLength: 1, maxLength: 120 }),
    // Each write's latency, as a share of the longest one (see below), and whether it fails.
    answers: fc.array(fc.record({ share: fc.double({ min: 0, max: 1, noNaN: true }), fails: fc.boolean() }), { minLength: 1, maxLength: 20 }),
  })
  .map(({ requestsPerSecond, burst, spacing, gaps, answers }) => {
    const minGapMs = (spacing * 1000) / requestsPerSecond;
    // Writes as slow as 30 s, as long as the requests piling up during one stay within half the burst: a single
    // process's lease is at most the burst (docs/usage-and-billing.md#rate-limits).
    const longestMs = Math.min(30_000, (burst * minGapMs) / 2);
    return {
      limit: { requestsPerSecond, burst },
      arrivals: gaps.map((gap) => gap * minGapMs),
      answers: answers.map(({ share, fails }) => ({ latencyMs: share * longestMs, fails })),
    };
  });

describe('rate limiter timings', () => {
  it('never refuses a client under its rate however slow (or failing) the table, and remaining stays within [0, burst]', async () => {
    await fc.assert(
      fc.asyncProperty(underItsRate, async ({ limit, arrivals, answers }) => {
        // Prepare
        const clock = new SimulatedClock();
        const limiter = new RateLimiter(new SlowTable(clock, answers), () => clock.now);
        const decisions: RateDecision[] = [];
        let sentAt = clock.now;
        for (const gap of arrivals) {
          sentAt += gap;
          clock.at(sentAt, () => void limiter.admit('org-1', 'org', limit).then((decision) => decisions.push(decision)));
        }

        // Act
        await clock.runAll();

        // Assess
        expect(decisions).toHaveLength(arrivals.length);
        expect(decisions.filter((decision) => !decision.admitted)).toEqual([]);
        for (const decision of decisions) {
          expect(decision.remaining).toBeGreaterThanOrEqual(0);
          expect(decision.remaining).toBeLessThanOrEqual(limit.burst);
        }
      }),
      {
        numRuns: 500,
        // Found by this property: a limit whose interval is no whole number of ms (1000 / 15) counted a full bucket
        // as one token short, and refused the third request of a client at a quarter of its rate.
        examples: [[{ limit: { requestsPerSecond: 15, burst: 2 }, arrivals: [1000 / 3.75, 1000 / 3.75, 1000 / 3.75], answers: [{ latencyMs: 0, fails: false }] }]],
      },
    );
  }, 120_000);

  it('the probe’s case: 500/s with a burst of 1,000, a request every 100 ms, writes taking 3.6 to 31 s', async () => {
    // Prepare
    const clock = new SimulatedClock();
    const answers = [3_600, 31_000, 12_000, 5_000].map((latencyMs) => ({ latencyMs, fails: false }));
    const limiter = new RateLimiter(new SlowTable(clock, answers), () => clock.now);
    const limit = { requestsPerSecond: 500, burst: 1_000 };
    const decisions: RateDecision[] = [];
    for (let index = 0; index < 600; index += 1) {
      clock.at(clock.now + index * 100, () => void limiter.admit('org-1', 'org', limit).then((decision) => decisions.push(decision)));
    }

    // Act
    await clock.runAll();

    // Assess
    expect(decisions).toHaveLength(600);
    expect(decisions.filter((decision) => !decision.admitted)).toHaveLength(0);
    expect(Math.max(...decisions.map((decision) => decision.remaining))).toBeLessThanOrEqual(1_000);
  });
});
