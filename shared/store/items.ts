/** Attributes that exist only for storage and never reach an API response. */
const internalAttributes = ['pk', 'sk', 'gsi1pk', 'gsi1sk', 'gsi2pk', 'gsi2sk', 'entity', 'version', 'expiresAt', 'attachCount', 'keyHash'] as const;

export function toRecord<T>(item: Record<string, unknown>): T {
  const record: Record<string, unknown> = { ...item };
  for (const attribute of internalAttributes) delete record[attribute];
  return record as T;
}
