import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import * as z from 'zod';
import { handleRollup } from '../../shared/domain/usage-rollup.ts';
import { logger } from '../../shared/logger.ts';
import type { RollupMessage } from '../../shared/ports.ts';
import { usageRollupRuntime } from '../../shared/usage-rollup-runtime.ts';
import { parseQueueMessage } from '../../shared/queue/queue-message.ts';

const queueMessage = z.object({ orgId: z.string().min(1), notBefore: z.number() });

const parse = (record: SQSRecord): RollupMessage | undefined => parseQueueMessage(queueMessage, record);

/** The usage roll-up, fed by its queue: `usage.updated` for each organization whose roll-up is due (docs/usage-and-billing.md#usageupdated). */
export async function handler(event: SQSEvent): Promise<SQSBatchResponse> {
  const deps = usageRollupRuntime();
  const failed = await Promise.all(
    event.Records.map(async (record) => {
      const message = parse(record);
      if (!message) {
        logger.error('not a usage roll-up message; left for the dead-letter queue', { messageId: record.messageId });
        return record.messageId;
      }
      try {
        const outcome = await handleRollup(deps, message);
        logger.info('usage roll-up handled', { orgId: message.orgId, outcome });
        return undefined;
      } catch (error) {
        logger.error('usage roll-up failed; the queue hands it over again', { orgId: message.orgId, error: error as Error });
        return record.messageId;
      }
    }),
  );
  return { batchItemFailures: failed.filter((id) => id !== undefined).map((itemIdentifier) => ({ itemIdentifier })) };
}
