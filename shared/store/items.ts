/**
 * Attributes that exist only for storage and never reach an API response. `secret`, `previousSecret` and
 * `previousSecretValidUntil` are a webhook endpoint's signing secrets (shown only when created or rotated).
 */
const internalAttributes = ['pk', 'sk', 'gsi1pk', 'gsi1sk', 'gsi2pk', 'gsi2sk', 'entity', 'version', 'expiresAt', 'attachCount', 'keyHash', 'nextSeq', 'activeUntil', 'seq', 'functionSecret', 'secret', 'previousSecret', 'previousSecretValidUntil', 'endedEventId', 'analysisJobId', 'statusRank', 'authToken', 'historyRevision'] as const;

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
