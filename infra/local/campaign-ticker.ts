import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { campaignQueue } from '../../functions/consumers.ts';
import { logger } from '../../shared/platform/logger.ts';
import { queueMessageBody } from '../../shared/platform/queue/queue-message.ts';
import type { LocalQueues } from './queues.ts';

/**
 * The campaign dispatcher's tick for `npm start`: what the stack's EventBridge Scheduler schedule does every
 * minute (send `{"kind":"campaign.tick"}` to the campaign queue), every CAMPAIGN_TICK_SECONDS here. With `due`,
 * a tick is sent only when `due` says there is a campaign to dispatch: an idle runtime then neither wakes the
 * dispatcher nor loads it every few seconds to find nothing to do.
 */
export function startCampaignTicker(
  queues: Pick<LocalQueues, 'clientConfig' | 'urlOf'>,
  seconds: number,
  options: { due?: () => Promise<boolean> } = {},
): { stop(): void } {
  const client = new SQSClient(queues.clientConfig);
  const queueUrl = queues.urlOf(campaignQueue.name);
  const tick = async () => {
    // A failed look sends the tick anyway: the dispatcher finds out for itself.
    if (options.due && !(await options.due().catch(() => true))) return;
    await client.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: queueMessageBody({ kind: 'campaign.tick' }) }));
  };
  const timer = setInterval(() => {
    tick().catch((error: Error) => logger.warn('campaign tick not sent', { error }));
  }, seconds * 1000);
  timer.unref();
  return {
    stop: () => {
      clearInterval(timer);
      client.destroy();
    },
  };
}
