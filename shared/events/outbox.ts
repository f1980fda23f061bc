import type { DomainEvent } from './events.ts';
import { keys } from '../platform/store/keys.ts';

/** Outbox events live a week in the partition of what they describe; the stream hands them on when written. */
export const outboxRetentionSeconds = 7 * 24 * 60 * 60;

/** The Put of an outbox item recording `event`, for the transaction that makes the change it reports. */
export function outboxPut(tableName: string, partition: string, event: DomainEvent) {
  return {
    Put: {
      TableName: tableName,
      Item: {
        ...keys.outbox(partition, event.eventId),
        entity: 'outbox',
        ...event,
        expiresAt: Math.floor(Date.parse(event.createdAt) / 1000) + outboxRetentionSeconds,
      },
    },
  };
}

/** The event an outbox item records, read back from the table (its stream), without the item's own fields. */
export function recordedEvent(item: Record<string, unknown>): DomainEvent {
  const { eventId, type, orgId, createdAt, payload } = item as unknown as DomainEvent;
  return { eventId, type, orgId, createdAt, payload };
}
