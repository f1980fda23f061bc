import { GetCommand, TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { bucketOf, type Granularity, type MeteredRecord, type UsageCounts } from './usage.ts';
import type { DomainEvent } from '../events/events.ts';
import type { BilledUsage, MeteringState, MeterReport, RollupState, StockChange, UsageStore } from './ports.ts';
import { conditionalWrite, transactionCancellationCodes } from '../platform/store/dynamo.ts';
import { countsOfItem, ExactlyOnceCounter } from './exactly-once-counter.ts';
import { queryAll } from '../platform/store/query-all.ts';
import { outboxPut } from '../events/outbox.ts';
import { keys } from '../platform/store/keys.ts';

/**
 * Usage counters (`ORG#<org>#USAGE`, one item per hour, day and month, changed only by `ADD`), counted exactly
 * once through each session's `#METER` marker (shared/billing/exactly-once-counter.ts), the stock item (`STOCK`,
 * written by the stores whose items it counts) with its change records (`STOCKCHANGE#<at>#<id>`), and the roll-up item.
 */
export class DynamoUsageStore implements UsageStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly counter: ExactlyOnceCounter;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.client = client;
    this.tableName = tableName;
    this.counter = new ExactlyOnceCounter(client, tableName, { markerSk: '#METER', counterEntity: 'usageCounter' });
  }

  async record(orgId: string, records: readonly MeteredRecord[]): Promise<boolean> {
    return this.counter.record(
      orgId,
      records.map((record) => ({
        sessionId: record.sessionId,
        seq: record.seq,
        once: record.once,
        increments: (['hour', 'day', 'month'] as const).map((granularity) => ({
          key: keys.usageCounter(orgId, granularity, bucketOf(record.at, granularity)),
          counts: record.counts,
        })),
      })),
    );
  }

  async counters(orgId: string, granularity: Granularity, fromBucket: string, toBucket: string): Promise<Map<string, UsageCounts>> {
    const prefix = `${granularity.toUpperCase()}#`;
    const items = await queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: { ':pk': keys.usagePartition(orgId), ':from': prefix + fromBucket, ':to': prefix + toBucket },
    });
    return new Map(items.map((item) => [String(item.sk).slice(prefix.length), countsOfItem(item)]));
  }

  async stockChangesSince(orgId: string, since: string): Promise<StockChange[]> {
    const items = await queryAll(this.client, {
      TableName: this.tableName,
      // `~` sorts after every character of a time, so the range holds the change records from `since` on.
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: { ':pk': keys.usagePartition(orgId), ':from': keys.usageStockChangePrefix + since, ':to': `${keys.usageStockChangePrefix}~` },
      ConsistentRead: true,
    });
    return items.map((item) => ({ metric: String(item.metric), delta: Number(item.delta), at: String(item.at) }));
  }

  async periodCounts(orgId: string, month: string): Promise<UsageCounts> {
    const read = (key: { pk: string; sk: string }) => this.client.send(new GetCommand({ TableName: this.tableName, Key: key, ConsistentRead: true }));
    const [counter, stock] = await Promise.all([read(keys.usageCounter(orgId, 'month', month)), read(keys.usageStock(orgId))]);
    return { ...(counter.Item ? countsOfItem(counter.Item) : {}), ...(stock.Item ? countsOfItem(stock.Item) : {}) };
  }

  async markRollupDue(orgId: string, due: number, staleBefore: number): Promise<boolean> {
    return conditionalWrite(
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: keys.usageRollup(orgId),
          UpdateExpression: 'SET entity = :entity, pendingUntil = :due',
          ConditionExpression: 'attribute_not_exists(pendingUntil) OR pendingUntil < :stale',
          ExpressionAttributeValues: { ':entity': 'usageRollup', ':due': due, ':stale': staleBefore },
        }),
      ),
    );
  }

  async unmarkRollup(orgId: string, due: number): Promise<void> {
    await conditionalWrite(
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: keys.usageRollup(orgId),
          UpdateExpression: 'REMOVE pendingUntil',
          ConditionExpression: 'pendingUntil = :due',
          ExpressionAttributeValues: { ':due': due },
        }),
      ),
    );
  }

  async rollupState(orgId: string): Promise<RollupState> {
    const result = await this.client.send(new GetCommand({ TableName: this.tableName, Key: keys.usageRollup(orgId), ConsistentRead: true }));
    const item = result.Item ?? {};
    return { pendingUntil: item.pendingUntil as number | undefined, lastSentAt: item.lastSentAt as number | undefined, reported: item.reported as Record<string, unknown> | undefined };
  }

  async completeRollup(orgId: string, due: number, report?: { at: number; metrics: Record<string, unknown>; event: DomainEvent }): Promise<boolean> {
    const condition = { ConditionExpression: 'pendingUntil = :due', Key: keys.usageRollup(orgId), TableName: this.tableName };
    if (!report) {
      return conditionalWrite(this.client.send(new UpdateCommand({ ...condition, UpdateExpression: 'REMOVE pendingUntil', ExpressionAttributeValues: { ':due': due } })));
    }
    try {
      await this.client.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                ...condition,
                UpdateExpression: 'SET lastSentAt = :at, reported = :metrics REMOVE pendingUntil',
                ExpressionAttributeValues: { ':due': due, ':at': report.at, ':metrics': report.metrics },
              },
            },
            outboxPut(this.tableName, keys.usagePartition(orgId), report.event),
          ],
        }),
      );
      return true;
    } catch (error) {
      if (transactionCancellationCodes(error)?.[0] === 'ConditionalCheckFailed') return false;
      throw error;
    }
  }

  async meteringState(orgId: string): Promise<MeteringState> {
    const result = await this.client.send(new GetCommand({ TableName: this.tableName, Key: keys.usageMetering(orgId), ConsistentRead: true }));
    const item = result.Item ?? {};
    return { version: (item.version as number | undefined) ?? 0, billed: item.billed as BilledUsage | undefined, pending: item.pending as MeterReport | undefined };
  }

  async accountMetering(orgId: string, version: number, billed: BilledUsage, report?: MeterReport): Promise<boolean> {
    return conditionalWrite(
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: keys.usageMetering(orgId),
          UpdateExpression: `SET entity = :entity, #version = :next, billed = :billed${report ? ', pending = :report' : ''}`,
          ConditionExpression: `${version === 0 ? 'attribute_not_exists(#version)' : '#version = :version'} AND attribute_not_exists(pending)`,
          ExpressionAttributeNames: { '#version': 'version' },
          ExpressionAttributeValues: {
            ':entity': 'usageMetering',
            ':next': version + 1,
            ':billed': billed,
            ...(version === 0 ? {} : { ':version': version }),
            ...(report ? { ':report': report } : {}),
          },
        }),
      ),
    );
  }

  async endMeterReport(orgId: string, reportId: string): Promise<void> {
    await conditionalWrite(
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: keys.usageMetering(orgId),
          UpdateExpression: 'REMOVE pending',
          ConditionExpression: 'pending.id = :id',
          ExpressionAttributeValues: { ':id': reportId },
        }),
      ),
    );
  }
}
