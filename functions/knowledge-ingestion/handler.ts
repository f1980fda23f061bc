import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import * as z from 'zod';
import { handleIngestionMessage } from '../../shared/domain/knowledge-ingestion.ts';
import type { IngestionMessage } from '../../shared/domain/knowledge.ts';
import { knowledgeRuntime } from '../../shared/knowledge-runtime.ts';
import { logger } from '../../shared/logger.ts';
import { parseQueueMessage } from '../../shared/queue/queue-message.ts';

const queueMessage = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('document.ingest'),
    orgId: z.string().min(1),
    storeId: z.string().min(1),
    documentId: z.string().min(1),
    version: z.number().int().positive(),
    text: z.string().optional(),
    url: z.string().optional(),
  }),
  z.object({ kind: z.literal('store.delete'), orgId: z.string().min(1), storeId: z.string().min(1), indexName: z.string().min(1) }),
]);

const parse = (record: SQSRecord): IngestionMessage | undefined => parseQueueMessage(queueMessage, record);

/**
 * The ingestion function, fed by the ingestion queue. Messages of a batch run one after the other (documents of
 * one store write the same index); a message that fails for the platform's reasons is handed back to be retried,
 * and a document that never finishes is failed with TIMEOUT by the sweep (docs/knowledge.md#ingestion).
 */
export async function handler(event: SQSEvent): Promise<SQSBatchResponse> {
  const deps = knowledgeRuntime();
  const failures: string[] = [];
  for (const record of event.Records) {
    const message = parse(record);
    if (!message) {
      logger.error('not an ingestion queue message; left for the dead-letter queue', { messageId: record.messageId });
      failures.push(record.messageId);
      continue;
    }
    try {
      const outcome = await handleIngestionMessage(deps, message);
      logger.info('ingestion message handled', { kind: message.kind, storeId: message.storeId, outcome });
    } catch (error) {
      logger.error('ingestion failed; the queue hands it over again', { messageId: record.messageId, storeId: message.storeId, error: error as Error });
      failures.push(record.messageId);
    }
  }
  return { batchItemFailures: failures.map((itemIdentifier) => ({ itemIdentifier })) };
}
