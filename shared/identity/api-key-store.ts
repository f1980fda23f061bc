import {
  GetCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import type { ApiKeyStore, KeyIdentity } from './ports.ts';
import type { IdempotencyCompletion } from '../platform/ports.ts';
import type { ApiKey } from './api-key-schemas.ts';
import { conditionalWrite, transactionCancellationCodes } from '../platform/store/dynamo.ts';
import { transactWithCompletion } from '../platform/store/idempotency-store.ts';
import { toRecord } from '../platform/store/items.ts';
import { keys } from '../platform/store/keys.ts';
import { queryAll } from '../platform/store/query-all.ts';

const apiKeyFieldOrder = ['id', 'orgId', 'name', 'scopes', 'rateLimit', 'prefix', 'createdAt', 'lastUsedAt'];

export class DynamoApiKeyStore implements ApiKeyStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.client = client;
    this.tableName = tableName;
  }

  async create(key: ApiKey, keyHash: string, completion?: IdempotencyCompletion): Promise<boolean> {
    const identity: KeyIdentity = { orgId: key.orgId, keyId: key.id, scopes: key.scopes, keyHash, ...(key.rateLimit ? { rateLimit: key.rateLimit } : {}) };
    try {
      await transactWithCompletion(
        this.client,
        this.tableName,
        [
          {
            Put: {
              TableName: this.tableName,
              Item: { ...keys.apiKey(key.orgId, key.id), entity: 'apiKey', ...key, keyHash },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
          {
            Put: {
              TableName: this.tableName,
              Item: { ...keys.apiKeyHash(keyHash), entity: 'apiKeyHash', ...identity },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
        ],
        completion,
      );
      return true;
    } catch (error) {
      if (transactionCancellationCodes(error)?.[1] === 'ConditionalCheckFailed') return false;
      throw error;
    }
  }

  async list(orgId: string): Promise<ApiKey[]> {
    const items = await queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': keys.orgPartition(orgId), ':prefix': keys.apiKeyPrefix },
      ConsistentRead: true,
    });
    return items.map((item) => toRecord<ApiKey>(item, apiKeyFieldOrder));
  }

  async delete(orgId: string, keyId: string): Promise<boolean> {
    const stored = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: keys.apiKey(orgId, keyId), ConsistentRead: true }),
    );
    const keyHash = stored.Item?.keyHash as string | undefined;
    if (!keyHash) return false;
    try {
      await this.client.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Delete: {
                TableName: this.tableName,
                Key: keys.apiKey(orgId, keyId),
                ConditionExpression: 'attribute_exists(pk)',
              },
            },
            { Delete: { TableName: this.tableName, Key: keys.apiKeyHash(keyHash) } },
          ],
        }),
      );
      return true;
    } catch (error) {
      if (transactionCancellationCodes(error)?.[0] === 'ConditionalCheckFailed') return false;
      throw error;
    }
  }

  async findByHash(keyHash: string): Promise<KeyIdentity | undefined> {
    // Strongly consistent, so that a key deleted a moment ago is refused on the very next request.
    const result = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: keys.apiKeyHash(keyHash), ConsistentRead: true }),
    );
    if (!result.Item) return undefined;
    const { orgId, keyId, scopes, rateLimit } = result.Item as KeyIdentity;
    return { orgId, keyId, scopes, keyHash: result.Item.keyHash as string, ...(rateLimit ? { rateLimit } : {}) };
  }

  async recordUse(orgId: string, keyId: string, at: string): Promise<void> {
    // A key deleted meanwhile is not recreated by its last use.
    await conditionalWrite(
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: keys.apiKey(orgId, keyId),
          UpdateExpression: 'SET lastUsedAt = :at',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':at': at },
        }),
      ),
    );
  }
}
