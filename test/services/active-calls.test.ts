import { afterEach, describe, expect, it, vi } from 'vitest';
import { activeCallsMetric, reportActiveCalls, type ActiveCallsReporter } from '../../services/media-worker/active-calls.ts';
import type { TaskProtection } from '../../services/media-worker/ecs-task-protection.ts';

describe('reportActiveCalls', () => {
  let reporter: ActiveCallsReporter | undefined;
  afterEach(() => {
    reporter?.stop();
    vi.useRealTimers();
  });

  function start(calls: { count: number }) {
    const points: number[] = [];
    const protections: number[] = [];
    let flushes = 0;
    const protection: TaskProtection = { update: (count) => Promise.resolve(void protections.push(count)) };
    reporter = reportActiveCalls({
      activeCalls: () => calls.count,
      protection,
      metrics: { add: (metric, value) => void (metric === activeCallsMetric && points.push(value)) },
      flush: () => void (flushes += 1),
      intervalMs: 10_000,
    });
    return { points, protections, flushes: () => flushes };
  }

  it('sends one ActiveCalls point at once and one every interval, zero included, each flushed and followed by the protection', () => {
    vi.useFakeTimers();
    const calls = { count: 0 };
    const { points, protections, flushes } = start(calls);

    calls.count = 3;
    vi.advanceTimersByTime(10_000);
    calls.count = 0;
    vi.advanceTimersByTime(10_000);

    expect(points).toEqual([0, 3, 0]);
    expect(flushes()).toBe(3);
    expect(protections).toEqual([0, 3, 0]);
  });

  it('updates the protection at once when the calls change, without a metric point between intervals', async () => {
    vi.useFakeTimers();
    const calls = { count: 0 };
    const { points, protections } = start(calls);

    calls.count = 1;
    await reporter?.callsChanged();

    expect(protections).toEqual([0, 1]);
    expect(points).toEqual([0]);
  });

  it('stops reporting when stopped', () => {
    vi.useFakeTimers();
    const { points } = start({ count: 2 });

    reporter?.stop();
    vi.advanceTimersByTime(60_000);

    expect(points).toEqual([2]);
  });
});
