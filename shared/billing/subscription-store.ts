import { GetCommand, TransactWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DomainEvent } from '../events/events.ts';
import type { StoredSubscription, SubscriptionStore } from './ports.ts';
import { transactionCancellationCodes } from '../platform/store/dynamo.ts';
import { keys } from '../platform/store/keys.ts';
import { outboxPut } from '../events/outbox.ts';

/** The organization's subscription: one item in its partition, changed with its event in one transaction. */
export class DynamoSubscriptionStore implements SubscriptionStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.client = client;
    this.tableName = tableName;
  }

  async get(orgId: string): Promise<StoredSubscription | undefined> {
    const result = await this.client.send(new GetCommand({ TableName: this.tableName, Key: keys.subscription(orgId), ConsistentRead: true }));
    return result.Item ? toSubscription(result.Item) : undefined;
  }

  async replace(previous: StoredSubscription | undefined, next: StoredSubscription, event?: DomainEvent): Promise<boolean> {
    try {
      await this.client.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Put: {
                TableName: this.tableName,
                Item: { ...keys.subscription(next.orgId), entity: 'subscription', ...next },
                ...(previous
                  ? { ConditionExpression: 'updatedAt = :previous', ExpressionAttributeValues: { ':previous': previous.updatedAt } }
                  : { ConditionExpression: 'attribute_not_exists(pk)' }),
              },
            },
            ...(event ? [outboxPut(this.tableName, keys.orgPartition(next.orgId), event)] : []),
          ],
        }),
      );
      return true;
    } catch (error) {
      if (transactionCancellationCodes(error)?.[0] === 'ConditionalCheckFailed') return false;
      throw error;
    }
  }
}

export function toSubscription(item: Record<string, unknown>): StoredSubscription {
  const { pk: _pk, sk: _sk, entity: _entity, ...subscription } = item;
  return subscription as unknown as StoredSubscription;
}
