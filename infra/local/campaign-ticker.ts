import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { campaignQueue } from '../../functions/consumers.ts';
import { logger } from '../../shared/platform/logger.ts';
import { queueMessageBody } from '../../shared/platform/queue/queue-message.ts';
import type { LocalQueues } from './queues.ts';

/**
 * The campaign dispatcher's tick for `npm start`: what the stack's EventBridge Scheduler schedule does every
 * minute (send `{"kind":"campaign.tick"}` to the campaign queue), every CAMPAIGN_TICK_SECONDS here.
 */
export function startCampaignTicker(queues: Pick<LocalQueues, 'clientConfig' | 'urlOf'>, seconds: number): { stop(): void } {
  const client = new SQSClient(queues.clientConfig);
  const queueUrl = queues.urlOf(campaignQueue.name);
  const timer = setInterval(() => {
    client.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: queueMessageBody({ kind: 'campaign.tick' }) })).catch((error: Error) => {
      logger.warn('campaign tick not sent', { error });
    });
  }, seconds * 1000);
  timer.unref();
  return {
    stop: () => {
      clearInterval(timer);
      client.destroy();
    },
  };
}
