import { scheduledQueueFrom } from '../platform/queue/sqs-scheduled-queue.ts';
import { runtime, type Runtime } from '../runtime.ts';
import { DynamoReplayStore } from './replay-store.ts';
import type { ReplayQueueMessage, ReplayRequestDeps } from './replays.ts';

let processDeps: (Runtime & ReplayRequestDeps) | undefined;

/** The runtime plus the replays' store and queue, for the routes that start and read replays. */
export function replayRequestRuntime(): Runtime & ReplayRequestDeps {
  if (!processDeps) {
    const base = runtime();
    processDeps = {
      ...base,
      replays: new DynamoReplayStore(base.documentClient, base.config.TABLE_NAME),
      replayQueue: scheduledQueueFrom<ReplayQueueMessage>(base.config, 'REPLAY_QUEUE_URL'),
    };
  }
  return processDeps;
}
