/**
 * The asynchronous consumers of the table's stream, declared once: the CDK stack subscribes each to the stream
 * with its filter, and the local runtime hands them the same records (the stream poller and the TTL sweeper).
 */
export interface TableStreamConsumer {
  name: string;
  /** Handler module, relative to the repository root; it exports `handler`. */
  entry: string;
  /** Which records it gets: new items, or TTL deletions (REMOVE records made by the DynamoDB service), of these entities. */
  select: { records: 'inserts' | 'ttl-deletions'; entities: string[] };
  /** Publishes to the event bus (gets its name and the right to put events). */
  publishesEvents?: boolean;
}

export const tableStreamConsumers: readonly TableStreamConsumer[] = [
  { name: 'session-expiry', entry: 'functions/session-expiry/handler.ts', select: { records: 'ttl-deletions', entities: ['sessionExpiry'] } },
  { name: 'event-relay', entry: 'functions/event-relay/handler.ts', select: { records: 'inserts', entities: ['outbox', 'message'] }, publishesEvents: true },
];
