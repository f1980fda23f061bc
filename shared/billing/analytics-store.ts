import { BatchGetCommand, type BatchGetCommandOutput, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { bucketOf } from './usage.ts';
import type { AnalyticsRecord, EndedSessionFacts } from './analytics.ts';
import type { AnalyticsAggregate, AnalyticsStore } from './ports.ts';
import { countsOfItem, ExactlyOnceCounter } from './exactly-once-counter.ts';
import { queryAll } from '../platform/store/query-all.ts';
import { keys } from '../platform/store/keys.ts';

const maxBatchGetKeys = 100;

/** Analytics aggregates in `ORG#<org>#ANALYTICS`, counted exactly once through each session's `#ANALYTICS` marker. */
export class DynamoAnalyticsStore implements AnalyticsStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly counter: ExactlyOnceCounter;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.client = client;
    this.tableName = tableName;
    this.counter = new ExactlyOnceCounter(client, tableName, { markerSk: '#ANALYTICS', counterEntity: 'analyticsAggregate' });
  }

  async record(orgId: string, records: readonly AnalyticsRecord[]): Promise<void> {
    await this.counter.record(
      orgId,
      records.map((record) => ({
        sessionId: record.sessionId,
        seq: record.seq,
        once: record.once,
        increments: (['hour', 'day'] as const).map((granularity) => ({
          key: keys.analyticsAggregate(orgId, granularity, bucketOf(record.at, granularity), record.agentId),
          counts: record.counts,
        })),
      })),
    );
  }

  async sessionFacts(orgId: string, sessionIds: readonly string[]): Promise<Map<string, { agentId: string } & EndedSessionFacts>> {
    const facts = new Map<string, { agentId: string } & EndedSessionFacts>();
    const unique = [...new Set(sessionIds)];
    for (let start = 0; start < unique.length; start += maxBatchGetKeys) {
      let requested: Record<string, unknown>[] | undefined = unique.slice(start, start + maxBatchGetKeys).map((sessionId) => keys.session(orgId, sessionId));
      while (requested && requested.length > 0) {
        const result: BatchGetCommandOutput = await this.client.send(
          new BatchGetCommand({
            RequestItems: { [this.tableName]: { Keys: requested, ProjectionExpression: 'id, agentId, messageCount, endedReason' } },
          }),
        );
        for (const item of result.Responses?.[this.tableName] ?? []) {
          facts.set(String(item.id), { agentId: String(item.agentId), messageCount: Number(item.messageCount ?? 0), endedReason: item.endedReason as string | undefined });
        }
        requested = result.UnprocessedKeys?.[this.tableName]?.Keys;
      }
    }
    return facts;
  }

  async aggregates(orgId: string, granularity: 'hour' | 'day', fromBucket: string, toBucket: string, agentId?: string): Promise<AnalyticsAggregate[]> {
    const prefix = `${granularity.toUpperCase()}#`;
    const items = await queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: { ':pk': keys.analyticsPartition(orgId), ':from': prefix + fromBucket, ':to': `${prefix}${toBucket}#~` },
    });
    return items.flatMap((item) => {
      const [, bucket = '', , itemAgent = ''] = String(item.sk).split('#');
      return agentId && itemAgent !== agentId ? [] : [{ bucket, agentId: itemAgent, counts: countsOfItem(item) }];
    });
  }
}
