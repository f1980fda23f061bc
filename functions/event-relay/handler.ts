import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { parseConfig } from '../../shared/platform/config.ts';
import { eventBusFrom, type EventBus } from '../../shared/events/bus.ts';
import { eventsOfItem } from '../../shared/webhooks/table-stream-events.ts';
import { logger } from '../../shared/platform/logger.ts';
import { observedHandler } from '../../shared/platform/invocation.ts';

let bus: EventBus | undefined;

/**
 * The relay from the table's stream to the event bus: each new outbox or message item becomes its domain events,
 * published in stream order. A failure stops the batch at that record, which is retried (so events are published
 * at least once, and never skipped).
 */
async function handle(event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> {
  bus ??= eventBusFrom(parseConfig());
  for (const record of event.Records) {
    const image = record.dynamodb?.NewImage;
    if (record.eventName !== 'INSERT' || !image) continue;
    const events = eventsOfItem(unmarshall(image as Record<string, AttributeValue>));
    if (events.length === 0) continue;
    try {
      await bus.publish(events);
    } catch (error) {
      logger.error('could not publish events; retrying from this record', { error: error as Error, eventIds: events.map((domainEvent) => domainEvent.eventId) });
      return { batchItemFailures: [{ itemIdentifier: record.dynamodb?.SequenceNumber ?? '' }] };
    }
  }
  return { batchItemFailures: [] };
}

export const handler = observedHandler('event-relay', handle);
