import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import * as z from 'zod';
import { parseUploadKey } from '../../shared/knowledge/document-uploads.ts';
import { knowledgeRuntime } from '../../shared/knowledge/knowledge-runtime.ts';
import { logger } from '../../shared/platform/logger.ts';
import { handleQueueBatch } from '../../shared/platform/queue/queue-message.ts';
import { observedHandler } from '../../shared/platform/invocation.ts';

/** S3's Object Created event as EventBridge delivers it (the fields used here). */
const objectCreated = z.object({
  source: z.literal('aws.s3'),
  'detail-type': z.literal('Object Created'),
  detail: z.object({ bucket: z.object({ name: z.string() }), object: z.object({ key: z.string(), size: z.number().int().nonnegative() }) }),
});

/**
 * Routes each uploaded document file to the FIFO ingestion queue, in its store's message group (the store is part
 * of the object key, which no EventBridge target setting can extract). An object under no document's key is
 * logged and dropped: nobody was given a POST for it.
 */
async function handle(event: SQSEvent): Promise<SQSBatchResponse> {
  const deps = knowledgeRuntime();
  return handleQueueBatch(event, { schema: objectCreated, name: 'upload routing' }, async ({ detail }) => {
    const upload = parseUploadKey(detail.object.key);
    if (!upload) {
      logger.warn('an object that is no document upload; ignored', { bucket: detail.bucket.name, key: detail.object.key });
      return;
    }
    await deps.sendIngestion({ kind: 'document.ingest', ...upload, objectKey: detail.object.key });
    logger.info('document upload queued for ingestion', { ...upload, bytes: detail.object.size });
  });
}

export const handler = observedHandler('knowledge-upload-router', handle);
