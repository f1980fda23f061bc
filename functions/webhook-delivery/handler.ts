import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import * as z from 'zod';
import { processDeliveryWork, type DeliveryWork } from '../../shared/webhooks/webhook-delivery.ts';
import { eventSource } from '../../shared/events/bus.ts';
import { logger } from '../../shared/platform/logger.ts';
import { webhookRuntime } from '../../shared/webhooks/webhook-runtime.ts';
import { observedHandler } from '../../shared/platform/invocation.ts';

/** What the event rule puts on the queue: the EventBridge event, whose detail is `{orgId, occurredAt, event}`. */
const publishedEvent = z.object({
  source: z.literal(eventSource),
  'detail-type': z.string().min(1),
  detail: z.object({
    orgId: z.string().min(1),
    occurredAt: z.string().min(1),
    event: z.looseObject({ eventId: z.string().min(1) }),
  }),
});

/** What the delivery function itself schedules: a later attempt of one delivery. */
const scheduledAttempt = z.object({
  kind: z.literal('webhook.attempt'),
  orgId: z.string().min(1),
  endpointId: z.string().min(1),
  deliveryId: z.string().min(1),
  attempt: z.int().min(1),
  step: z.int().min(0),
  notBefore: z.number(),
});

const queueMessage = z.union([publishedEvent, scheduledAttempt]);

function toWork(record: SQSRecord): DeliveryWork | undefined {
  let json: unknown;
  try {
    json = JSON.parse(record.body);
  } catch {
    json = undefined;
  }
  const parsed = queueMessage.safeParse(json);
  if (!parsed.success) return undefined;
  const message = parsed.data;
  if ('kind' in message) return { kind: 'attempt', request: message };
  const { orgId, occurredAt, event } = message.detail;
  return {
    kind: 'event',
    event: { eventId: event.eventId, type: message['detail-type'], orgId, createdAt: occurredAt, payload: event },
    redelivered: Number(record.attributes.ApproximateReceiveCount) > 1,
  };
}

/**
 * The webhook delivery function, fed by the delivery queue: published events are fanned out to the endpoints
 * subscribed to them, scheduled attempts are made. Records that fail (a store or queue error) are reported back
 * so that SQS hands them over again; a message that is not ours is reported too, and ends in the queue's
 * dead-letter queue after its receives.
 */
async function handle(event: SQSEvent): Promise<SQSBatchResponse> {
  const deps = webhookRuntime();
  const work: DeliveryWork[] = [];
  const workRecords: SQSRecord[] = [];
  const failures: string[] = [];
  for (const record of event.Records) {
    const item = toWork(record);
    if (item) {
      work.push(item);
      workRecords.push(record);
    } else {
      logger.error('not a delivery queue message; left for the dead-letter queue', { messageId: record.messageId });
      failures.push(record.messageId);
    }
  }
  const errors = await processDeliveryWork(deps, work);
  errors.forEach((error, index) => {
    if (error === undefined) return;
    const { messageId } = workRecords[index]!;
    logger.error('delivery work failed; the queue hands it over again', { messageId, error: error as Error });
    failures.push(messageId);
  });
  return { batchItemFailures: failures.map((itemIdentifier) => ({ itemIdentifier })) };
}

export const handler = observedHandler('webhook-delivery', handle);
