import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { RateLimitStore } from './ports.ts';
import { keys } from '../platform/store/keys.ts';

/** A bucket's item outlives its last lease by this long (TTL), then DynamoDB removes it. */
const idleRetentionSeconds = 3_600;

/** Rate-limit buckets: one item each, `tat` moved forward only by a write conditioned on its previous value. */
export class DynamoRateLimitStore implements RateLimitStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.client = client;
    this.tableName = tableName;
  }

  async advance(orgId: string, bucket: string, expected: number | undefined, next: number): Promise<{ advanced: true } | { advanced: false; stored: number | undefined }> {
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: keys.rateLimit(orgId, bucket),
          UpdateExpression: 'SET entity = :entity, tat = :next, expiresAt = :expiresAt',
          ConditionExpression: expected === undefined ? 'attribute_not_exists(tat)' : 'tat = :expected',
          ExpressionAttributeValues: {
            ':entity': 'rateLimit',
            ':next': next,
            ':expiresAt': Math.ceil(next / 1000) + idleRetentionSeconds,
            ...(expected === undefined ? {} : { ':expected': expected }),
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { advanced: true };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const stored = error.Item?.tat?.N;
      return { advanced: false, stored: stored === undefined ? undefined : Number(stored) };
    }
  }
}
