import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import * as z from 'zod';
import { analysisRuntime } from '../../shared/analysis/analysis-runtime.ts';
import { handleAnalysisMessage } from '../../shared/analysis/analysis.ts';
import { logger } from '../../shared/platform/logger.ts';
import { handleQueueBatch } from '../../shared/platform/queue/queue-message.ts';
import type { AnalysisQueueMessage } from '../../shared/analysis/ports.ts';
import { analysisQueue } from '../consumers.ts';
import { observedHandler } from '../../shared/platform/invocation.ts';

const queueMessage = z.object({
  kind: z.enum(['analysis.run', 'analysis.deadline']),
  job: z.object({
    jobId: z.string().min(1),
    orgId: z.string().min(1),
    sessionId: z.string().min(1),
    purpose: z.enum(['initial', 'rerun']),
    deadlineFrom: z.iso.datetime({ offset: true }),
  }),
  notBefore: z.number(),
});

/** Left of the invocation for storing a result after the model gave up. */
const storeMarginMs = 5_000;

/**
 * The analysis function, fed by the analysis queue: runs each session's analysis (in parallel within a batch)
 * and stores it with `session.ended`, or checks a deadline. Records whose store failed are reported back so the
 * queue hands them over again; on a message's last receive the domain still sends a FAILED `session.ended`.
 */
async function handle(event: SQSEvent, context: Pick<Context, 'getRemainingTimeInMillis'>): Promise<SQSBatchResponse> {
  const deps = analysisRuntime();
  const mustFinishBy = Date.now() + context.getRemainingTimeInMillis() - storeMarginMs;
  const options = { schema: queueMessage, name: 'analysis', logFields: (message: AnalysisQueueMessage) => ({ jobId: message.job.jobId }) };
  return handleQueueBatch(event, options, async (message, record) => {
    const lastAttempt = Number(record.attributes.ApproximateReceiveCount) >= analysisQueue.maxReceiveCount;
    const outcome = await handleAnalysisMessage(deps, message, { lastAttempt, mustFinishBy });
    logger.info('analysis message handled', { kind: message.kind, jobId: message.job.jobId, sessionId: message.job.sessionId, outcome });
  });
}

export const handler = observedHandler('analysis', handle);
