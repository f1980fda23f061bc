import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import * as z from 'zod';
import { analysisRuntime } from '../../shared/analysis-runtime.ts';
import { handleAnalysisMessage } from '../../shared/domain/analysis.ts';
import { logger } from '../../shared/logger.ts';
import type { AnalysisQueueMessage } from '../../shared/ports.ts';
import { analysisQueue } from '../consumers.ts';
import { parseQueueMessage } from '../../shared/queue/queue-message.ts';

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

const parse = (record: SQSRecord): AnalysisQueueMessage | undefined => parseQueueMessage(queueMessage, record);

/**
 * The analysis function, fed by the analysis queue: runs each session's analysis (in parallel within a batch)
 * and stores it with `session.ended`, or checks a deadline. Records whose store failed are reported back so the
 * queue hands them over again; on a message's last receive the domain still sends a FAILED `session.ended`.
 */
export async function handler(event: SQSEvent, context: Pick<Context, 'getRemainingTimeInMillis'>): Promise<SQSBatchResponse> {
  const deps = analysisRuntime();
  const mustFinishBy = Date.now() + context.getRemainingTimeInMillis() - storeMarginMs;
  const results = await Promise.all(
    event.Records.map(async (record) => {
      const message = parse(record);
      if (!message) {
        logger.error('not an analysis queue message; left for the dead-letter queue', { messageId: record.messageId });
        return record.messageId;
      }
      const lastAttempt = Number(record.attributes.ApproximateReceiveCount) >= analysisQueue.maxReceiveCount;
      try {
        const outcome = await handleAnalysisMessage(deps, message, { lastAttempt, mustFinishBy });
        logger.info('analysis message handled', { kind: message.kind, jobId: message.job.jobId, sessionId: message.job.sessionId, outcome });
        return undefined;
      } catch (error) {
        logger.error('analysis failed; the queue hands it over again', { messageId: record.messageId, jobId: message.job.jobId, error: error as Error });
        return record.messageId;
      }
    }),
  );
  return { batchItemFailures: results.filter((id) => id !== undefined).map((itemIdentifier) => ({ itemIdentifier })) };
}
