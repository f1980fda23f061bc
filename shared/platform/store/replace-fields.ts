import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ConcurrentModificationError } from '../errors.ts';
import { isConditionFailure } from './dynamo.ts';

/**
 * Turns a record's stored item into `next`, field by field (set what `next` has, remove what it dropped), if the
 * item still has `previous.updatedAt`. An update rather than a put leaves the item's internal attributes (counts,
 * secrets) alone; `internal` sets some of those too.
 */
export async function replaceFields(
  client: DynamoDBDocumentClient,
  write: { tableName: string; key: Record<string, string>; what: string },
  previous: { updatedAt: string } & object,
  next: object,
  internal: Record<string, unknown> = {},
): Promise<void> {
  // The identity of a record is its key: never rewritten, never removed.
  const identity = new Set(['id', 'orgId']);
  const fields = Object.entries({ ...next, ...internal }).filter(([name, value]) => !identity.has(name) && value !== undefined);
  const kept = new Set(fields.map(([name]) => name));
  const removed = Object.keys(previous).filter((name) => !kept.has(name) && !identity.has(name));
  const names = Object.fromEntries([...kept, ...removed].map((name) => [`#${name}`, name]));
  const values = Object.fromEntries(fields.map(([name, value]) => [`:${name}`, value]));
  const set = fields.map(([name]) => `#${name} = :${name}`).join(', ');
  const remove = removed.length ? ` REMOVE ${removed.map((name) => `#${name}`).join(', ')}` : '';
  try {
    await client.send(
      new UpdateCommand({
        TableName: write.tableName,
        Key: write.key,
        UpdateExpression: `SET ${set}${remove}`,
        ConditionExpression: 'updatedAt = :previousUpdatedAt',
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: { ...values, ':previousUpdatedAt': previous.updatedAt },
      }),
    );
  } catch (error) {
    if (isConditionFailure(error)) throw new ConcurrentModificationError(`The ${write.what} changed while it was being updated; retry.`);
    throw error;
  }
}
