import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import * as z from 'zod';
import { handleRollup } from '../../shared/billing/usage-rollup.ts';
import { logger } from '../../shared/platform/logger.ts';
import { handleQueueBatch } from '../../shared/platform/queue/queue-message.ts';
import { usageRollupRuntime } from '../../shared/billing/usage-rollup-runtime.ts';
import { observedHandler } from '../../shared/platform/invocation.ts';

const queueMessage = z.object({ orgId: z.string().min(1), notBefore: z.number() });

/** The usage roll-up, fed by its queue: `usage.updated` for each organization whose roll-up is due (docs/usage-and-billing.md#usageupdated). */
async function handle(event: SQSEvent): Promise<SQSBatchResponse> {
  const deps = usageRollupRuntime();
  return handleQueueBatch(event, { schema: queueMessage, name: 'usage roll-up', logFields: (message) => ({ orgId: message.orgId }) }, async (message) => {
    const outcome = await handleRollup(deps, message);
    logger.info('usage roll-up handled', { orgId: message.orgId, outcome });
  });
}

export const handler = observedHandler('usage-rollup', handle);
