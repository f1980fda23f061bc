import type { RollupDeps } from './usage-rollup.ts';
import type { RollupMessage } from './ports.ts';
import { scheduledQueueFrom } from '../platform/queue/sqs-scheduled-queue.ts';
import { runtime, type Runtime } from '../runtime.ts';

export type UsageRollupRuntime = Runtime & RollupDeps;

let processRuntime: UsageRollupRuntime | undefined;

/** The runtime plus the roll-up queue: for the usage meter (which queues roll-ups) and the roll-up itself (which may queue another). */
export function usageRollupRuntime(): UsageRollupRuntime {
  if (!processRuntime) {
    const base = runtime();
    processRuntime = { ...base, rollups: scheduledQueueFrom<RollupMessage>(base.config, 'USAGE_ROLLUP_QUEUE_URL') };
  }
  return processRuntime;
}
