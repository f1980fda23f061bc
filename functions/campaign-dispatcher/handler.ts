import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import * as z from 'zod';
import { campaignRuntime } from '../../shared/campaigns/campaign-runtime.ts';
import { dispatchCampaign, tick } from '../../shared/campaigns/campaign-dispatcher.ts';
import { logger } from '../../shared/platform/logger.ts';
import { handleQueueBatch } from '../../shared/platform/queue/queue-message.ts';
import { observedHandler } from '../../shared/platform/invocation.ts';

const dispatcherMessage = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('campaign.tick') }),
  z.object({ kind: z.literal('campaign.dispatch'), orgId: z.string().min(1), campaignId: z.uuid() }),
]);

/** The longest dispatch cycle: within the function's timeout, and 80% of a tick so that cycles rarely overlap. */
const maxCycleMs = 50_000;

/**
 * The campaign dispatcher (docs/campaigns.md#dispatcher): a tick (EventBridge Scheduler, every minute) fans out one
 * dispatch message per active campaign; each dispatch message runs one cycle of that campaign.
 */
async function handle(event: SQSEvent): Promise<SQSBatchResponse> {
  const deps = campaignRuntime();
  const cycleMs = Math.min(maxCycleMs, deps.config.CAMPAIGN_TICK_SECONDS * 800);
  return handleQueueBatch(
    event,
    { schema: dispatcherMessage, name: 'campaign dispatch', logFields: (message) => (message.kind === 'campaign.dispatch' ? { campaignId: message.campaignId } : {}) },
    async (message) => {
      if (message.kind === 'campaign.tick') {
        // Every minute on AWS, every 5 s locally: a tick that dispatched nothing is not worth an INFO line.
        const campaigns = await tick(deps);
        if (campaigns > 0) logger.info('campaign tick', { campaigns });
        else logger.debug('campaign tick', { campaigns });
        return;
      }
      const report = await dispatchCampaign(deps, message.orgId, message.campaignId, cycleMs);
      logger.info('campaign dispatch', { campaignId: message.campaignId, ...report });
    },
  );
}

export const handler = observedHandler('campaign-dispatcher', handle);
