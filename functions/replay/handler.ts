import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import * as z from 'zod';
import { analyseTranscript } from '../../shared/analysis/analysis.ts';
import { analysisRuntime } from '../../shared/analysis/analysis-runtime.ts';
import { conversationRuntime } from '../../shared/conversations/conversation-runtime.ts';
import { DynamoReplayStore } from '../../shared/conversations/replay-store.ts';
import { runReplay, type ReplayQueueMessage, type ReplayWorkerDeps } from '../../shared/conversations/replays.ts';
import { observedHandler } from '../../shared/platform/invocation.ts';
import { handleQueueBatch } from '../../shared/platform/queue/queue-message.ts';
import { scheduledQueueFrom } from '../../shared/platform/queue/sqs-scheduled-queue.ts';

const queueMessage = z.object({ kind: z.literal('replay.run'), orgId: z.string().min(1), agentId: z.uuid(), replayId: z.uuid(), notBefore: z.number() });

/** What a replay runs with: the conversation runtime, the replay store and queue, and the analysis of a replayed transcript. */
export function replayWorkerRuntime(): ReplayWorkerDeps {
  const base = conversationRuntime();
  const analysis = analysisRuntime();
  return {
    ...base,
    replays: new DynamoReplayStore(base.documentClient, base.config.TABLE_NAME),
    replayQueue: scheduledQueueFrom<ReplayQueueMessage>(base.config, 'REPLAY_QUEUE_URL'),
    analyseTranscript: (agent, messages, endedReason) => analyseTranscript(analysis, agent, messages, endedReason),
  };
}

let deps: ReplayWorkerDeps | undefined;

/** Left of the invocation for recording the last session's result and queueing the rest. */
const recordMarginMs = 5_000;

/** The replay function, fed by the replay queue: runs each replay to its end, or as far as its time allows (docs/agent-versions.md#replay). */
async function handle(event: SQSEvent, context: Pick<Context, 'getRemainingTimeInMillis'>): Promise<SQSBatchResponse> {
  const ready = (deps ??= replayWorkerRuntime());
  const run = { mustFinishBy: Date.now() + context.getRemainingTimeInMillis() - recordMarginMs };
  const options = { schema: queueMessage, name: 'replay', logFields: (message: { replayId: string }) => ({ replayId: message.replayId }) };
  return handleQueueBatch(event, options, (message, record) => runReplay(ready, message, { ...run, redelivered: Number(record.attributes.ApproximateReceiveCount) > 1 }));
}

export const handler = observedHandler('replay', handle);
