/**
 * The asynchronous consumers of the table's stream, declared once: the CDK stack subscribes each to the stream
 * with its filter, and the local runtime's TTL sweeper hands them the same records.
 */
export interface TableStreamConsumer {
  name: string;
  /** Handler module, relative to the repository root; it exports `handler`. */
  entry: string;
  /** Only TTL deletions (REMOVE records made by the DynamoDB service) of items of these entities. */
  ttlDeletionsOf: string[];
}

export const tableStreamConsumers: readonly TableStreamConsumer[] = [
  { name: 'session-expiry', entry: 'functions/session-expiry/handler.ts', ttlDeletionsOf: ['sessionExpiry'] },
];
