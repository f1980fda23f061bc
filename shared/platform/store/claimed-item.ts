import { TransactWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { transactionCancellationCodes } from './dynamo.ts';

type Key = { pk: string; sk: string };
type Item = Record<string, unknown>;

/**
 * Writes an organization's item together with its worldwide claim (a phone number, a WhatsApp number id): both or
 * neither. False when the claim is held already, by any organization.
 */
export async function putClaimed(client: DynamoDBDocumentClient, tableName: string, claim: Item, item: Item): Promise<boolean> {
  try {
    await client.send(
      new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName: tableName, Item: claim, ConditionExpression: 'attribute_not_exists(pk)' } },
          { Put: { TableName: tableName, Item: item, ConditionExpression: 'attribute_not_exists(pk)' } },
        ],
      }),
    );
    return true;
  } catch (error) {
    if (transactionCancellationCodes(error)?.[0] === 'ConditionalCheckFailed') return false;
    throw error;
  }
}

/** Deletes an organization's item and frees its claim, both or neither; false when the item is gone or the claim is another's. */
export async function deleteClaimed(client: DynamoDBDocumentClient, tableName: string, orgId: string, claim: Key, item: Key): Promise<boolean> {
  try {
    await client.send(
      new TransactWriteCommand({
        TransactItems: [
          { Delete: { TableName: tableName, Key: item, ConditionExpression: 'attribute_exists(pk)' } },
          { Delete: { TableName: tableName, Key: claim, ConditionExpression: 'orgId = :org', ExpressionAttributeValues: { ':org': orgId } } },
        ],
      }),
    );
    return true;
  } catch (error) {
    if (transactionCancellationCodes(error)?.[0] === 'ConditionalCheckFailed') return false;
    throw error;
  }
}
