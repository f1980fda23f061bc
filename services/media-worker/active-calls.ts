import { emfMetrics, flushMetrics } from '../../shared/platform/metrics.ts';
import type { MetricDefinition, MetricsRecorder } from '../../shared/platform/ports.ts';
import type { TaskProtection } from './ecs-task-protection.ts';

/**
 * The calls a worker carries, one point per task every interval: the stack's autoscaling keeps its average per task
 * at `mediaWorker.callsPerTask` (infra/media-worker-service.ts).
 */
export const activeCallsMetric: MetricDefinition = {
  name: 'ActiveCalls',
  unit: 'Count',
  description: 'The calls one media worker task carries, sampled every 10 s; its average is the calls per task autoscaling holds',
};

/** How often each task reports its calls: several points in each of the minute-long periods autoscaling reads. */
export const activeCallsIntervalMs = 10_000;

export interface ActiveCallsReporter {
  /**
   * The calls changed: the task's protection follows at once (a call that starts protects its task without waiting
   * for the next tick); the metric keeps its one point per interval, so that a busy task weighs no more in the average.
   */
  callsChanged(): Promise<void>;
  stop(): void;
}

/**
 * Reports the worker's active calls every interval: the `ActiveCalls` metric (an EMF line, with no API call) and the
 * task's scale-in protection. A task with no call reports 0, so that the average counts it.
 */
export function reportActiveCalls(options: {
  activeCalls: () => number;
  protection: TaskProtection;
  metrics?: MetricsRecorder;
  flush?: () => void;
  intervalMs?: number;
}): ActiveCallsReporter {
  const { activeCalls, protection, metrics = emfMetrics, flush = flushMetrics, intervalMs = activeCallsIntervalMs } = options;
  const tick = () => {
    const count = activeCalls();
    metrics.add(activeCallsMetric, count);
    flush();
    return protection.update(count);
  };
  const timer = setInterval(() => void tick(), intervalMs);
  // The worker ends when its server closes, not when this timer is the last thing left.
  timer.unref();
  void tick();
  return { callsChanged: () => protection.update(activeCalls()), stop: () => clearInterval(timer) };
}
