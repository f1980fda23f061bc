import type { DeliveryQueue, WebhookDeliveryStore } from './ports.ts';
import { scheduledQueueFrom } from '../platform/queue/sqs-scheduled-queue.ts';
import { runtime, type Runtime } from '../runtime.ts';
import { DynamoWebhookDeliveryStore } from './webhook-delivery-store.ts';

/**
 * The runtime plus webhook delivery: delivery records and the delivery queue. Only the webhooks routes and the
 * delivery function import this, so the others do not load the SQS client.
 */
export interface WebhookRuntime extends Runtime {
  deliveries: WebhookDeliveryStore;
  queue: DeliveryQueue;
}

let processRuntime: WebhookRuntime | undefined;

export function webhookRuntime(): WebhookRuntime {
  if (!processRuntime) {
    const base = runtime();
    processRuntime = {
      ...base,
      deliveries: new DynamoWebhookDeliveryStore(base.documentClient, base.config.TABLE_NAME),
      queue: scheduledQueueFrom(base.config, 'WEBHOOK_QUEUE_URL'),
    };
  }
  return processRuntime;
}
