import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import * as z from 'zod';
import { analyseTranscript } from '../../shared/analysis/analysis.ts';
import { analysisRuntime } from '../../shared/analysis/analysis-runtime.ts';
import { conversationRuntime } from '../../shared/conversations/conversation-runtime.ts';
import { DynamoReplayStore } from '../../shared/conversations/replay-store.ts';
import { runReplay, type ReplayWorkerDeps } from '../../shared/conversations/replays.ts';
import { observedHandler } from '../../shared/platform/invocation.ts';
import { handleQueueBatch } from '../../shared/platform/queue/queue-message.ts';

const queueMessage = z.object({ kind: z.literal('replay.run'), orgId: z.string().min(1), agentId: z.uuid(), replayId: z.uuid(), notBefore: z.number() });

/** What a replay runs with: the conversation runtime, the replay store, and the analysis of a replayed transcript. */
export function replayWorkerRuntime(): ReplayWorkerDeps {
  const base = conversationRuntime();
  const analysis = analysisRuntime();
  return {
    ...base,
    replays: new DynamoReplayStore(base.documentClient, base.config.TABLE_NAME),
    analyseTranscript: (agent, messages, endedReason) => analyseTranscript(analysis, agent, messages, endedReason),
  };
}

let deps: ReplayWorkerDeps | undefined;

/** The replay function, fed by the replay queue: runs each replay to its end (docs/agent-versions.md#replay). */
async function handle(event: SQSEvent): Promise<SQSBatchResponse> {
  const ready = (deps ??= replayWorkerRuntime());
  return handleQueueBatch(event, { schema: queueMessage, name: 'replay', logFields: (message) => ({ replayId: message.replayId }) }, (message) => runReplay(ready, message));
}

export const handler = observedHandler('replay', handle);
