import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import * as z from 'zod';
import { meterEventSinkFrom } from '../../shared/billing/providers.ts';
import { handleRollup, type RollupDeps } from '../../shared/billing/usage-rollup.ts';
import { logger } from '../../shared/platform/logger.ts';
import { handleQueueBatch } from '../../shared/platform/queue/queue-message.ts';
import { usageRollupRuntime } from '../../shared/billing/usage-rollup-runtime.ts';
import { observedHandler } from '../../shared/platform/invocation.ts';

const queueMessage = z.object({ orgId: z.string().min(1), notBefore: z.number() });

let deps: RollupDeps | undefined;

/** The roll-up's runtime, with Stripe's meters when Stripe bills (the usage meter, which only queues roll-ups, goes without). */
function rollupDeps(): RollupDeps {
  if (!deps) {
    const base = usageRollupRuntime();
    deps = { ...base, meterEvents: meterEventSinkFrom(base.config) };
  }
  return deps;
}

/**
 * The usage roll-up, fed by its queue: `usage.updated` for each organization whose roll-up is due, and its usage
 * billed by use reported to Stripe's meters (docs/usage-and-billing.md#usageupdated, #metered-billing).
 */
async function handle(event: SQSEvent): Promise<SQSBatchResponse> {
  return handleQueueBatch(event, { schema: queueMessage, name: 'usage roll-up', logFields: (message) => ({ orgId: message.orgId }) }, async (message) => {
    const outcome = await handleRollup(rollupDeps(), message);
    logger.info('usage roll-up handled', { orgId: message.orgId, outcome });
  });
}

export const handler = observedHandler('usage-rollup', handle);
