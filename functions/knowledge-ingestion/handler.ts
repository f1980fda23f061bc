import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import * as z from 'zod';
import { handleIngestionMessage } from '../../shared/knowledge/knowledge-ingestion.ts';
import type { IngestionMessage } from '../../shared/knowledge/knowledge.ts';
import { knowledgeUploadsRuntime } from '../../shared/knowledge/knowledge-uploads-runtime.ts';
import { logger } from '../../shared/platform/logger.ts';
import { handleQueueBatch } from '../../shared/platform/queue/queue-message.ts';
import { observedHandler } from '../../shared/platform/invocation.ts';

const queueMessage = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('document.ingest'),
    orgId: z.string().min(1),
    storeId: z.string().min(1),
    documentId: z.string().min(1),
    version: z.number().int().positive(),
    text: z.string().optional(),
    url: z.string().optional(),
    objectKey: z.string().optional(),
  }),
  z.object({ kind: z.literal('store.delete'), orgId: z.string().min(1), storeId: z.string().min(1), indexName: z.string().min(1) }),
  z.object({ kind: z.literal('store.reindex'), orgId: z.string().min(1), storeId: z.string().min(1), indexName: z.string().min(1) }),
]);

/**
 * The ingestion function, fed by the FIFO ingestion queue (grouped by store). Messages of a batch run one after the
 * other, a store's in their order (documents of one store write the same index); a message that fails for the platform's reasons is handed back to be retried,
 * and a document that never finishes is failed with TIMEOUT by the sweep (docs/knowledge.md#ingestion).
 */
async function handle(event: SQSEvent): Promise<SQSBatchResponse> {
  const deps = knowledgeUploadsRuntime();
  const options = { schema: queueMessage, name: 'ingestion', order: 'fifo' as const, logFields: (message: IngestionMessage) => ({ storeId: message.storeId }) };
  return handleQueueBatch(event, options, async (message) => {
    const outcome = await handleIngestionMessage(deps, message);
    logger.info('ingestion message handled', { kind: message.kind, storeId: message.storeId, outcome });
  });
}

export const handler = observedHandler('knowledge-ingestion', handle);
