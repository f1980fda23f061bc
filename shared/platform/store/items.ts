import { tableDefinition } from './table.ts';

/**
 * Attributes that exist only for storage and never reach an API response. `secret`, `previousSecret` and
 * `previousSecretValidUntil` are a webhook endpoint's signing secrets (shown only when created or rotated).
 */
const internalAttributes: readonly string[] = [
  // Every key of the table and of its indexes, so that a new index's keys cannot leak into a response either.
  tableDefinition.partitionKey,
  tableDefinition.sortKey,
  tableDefinition.timeToLiveAttribute,
  ...tableDefinition.globalSecondaryIndexes.flatMap((index) => [index.partitionKey, index.sortKey]),
  ...['entity', 'version', 'attachCount', 'keyHash', 'nextSeq', 'activeUntil', 'seq', 'functionSecret', 'secret', 'previousSecret', 'previousSecretValidUntil', 'endedEventId', 'analysisJobId', 'statusRank', 'authToken', 'historyRevision', 'sealed', 'relayTokenHash', 'relayConnectionId'],
];

/**
 * An item as the API shows it: storage attributes dropped, and fields in `fieldOrder` first, because DynamoDB
 * returns attributes in no particular order and stable output is kinder to people reading it.
 */
export function toRecord<T>(item: Record<string, unknown>, fieldOrder: readonly string[] = []): T {
  const record: Record<string, unknown> = {};
  for (const field of fieldOrder) if (field in item) record[field] = item[field];
  for (const [field, value] of Object.entries(item)) if (!(field in record)) record[field] = value;
  for (const attribute of internalAttributes) delete record[attribute];
  return record as T;
}
