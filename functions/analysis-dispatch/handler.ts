import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { parseConfig } from '../../shared/platform/config.ts';
import { dispatchAnalysisJobs } from '../../shared/analysis/analysis.ts';
import { logger } from '../../shared/platform/logger.ts';
import type { AnalysisQueueMessage } from '../../shared/analysis/ports.ts';
import type { AnalysisJob } from '../../shared/conversations/ports.ts';
import { scheduledQueueFrom } from '../../shared/platform/queue/sqs-scheduled-queue.ts';
import { observedHandler } from '../../shared/platform/invocation.ts';

let deps: Parameters<typeof dispatchAnalysisJobs>[0] | undefined;

/**
 * From the table's stream to the analysis queue: each new analysis job item (written with a session's end, or by
 * a re-run) becomes its queue messages. A failure stops the batch at that record, which is retried, so no job is
 * skipped; a job sent twice is harmless (the analysis stores its result once).
 */
async function handle(event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> {
  if (!deps) {
    const config = parseConfig();
    deps = { config, queue: scheduledQueueFrom<AnalysisQueueMessage>(config, 'ANALYSIS_QUEUE_URL') };
  }
  for (const record of event.Records) {
    const image = record.dynamodb?.NewImage;
    if (record.eventName !== 'INSERT' || image?.entity?.S !== 'analysisJob') continue;
    const { jobId, orgId, sessionId, purpose, deadlineFrom } = unmarshall(image as Record<string, AttributeValue>) as AnalysisJob;
    try {
      await dispatchAnalysisJobs(deps, [{ jobId, orgId, sessionId, purpose, deadlineFrom }]);
    } catch (error) {
      logger.error('could not queue an analysis job; retrying from this record', { error: error as Error, jobId, sessionId });
      return { batchItemFailures: [{ itemIdentifier: record.dynamodb?.SequenceNumber ?? '' }] };
    }
  }
  return { batchItemFailures: [] };
}

export const handler = observedHandler('analysis-dispatch', handle);
