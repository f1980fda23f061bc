import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { GetCommand, QueryCommand, TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { addCounts, bucketOf, type Granularity, type MeteredRecord, type UsageCounts } from '../domain/usage.ts';
import type { DomainEvent } from '../domain/events.ts';
import type { RollupState, UsageStore } from '../ports.ts';
import { conditionalWrite, transactionCancellationCodes } from './dynamo.ts';
import { outboxPut } from './outbox.ts';
import { keys } from './keys.ts';

type TransactItem = NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']>[number];

/** DynamoDB's bound on the items of one transaction. */
const maxTransactionItems = 100;
const maxAttempts = 6;
const counterFields = new Set(['pk', 'sk', 'entity']);

/** A session's records of one batch that are still to be counted: messages by sequence number, and a voice end. */
interface SessionBatch {
  sessionId: string;
  messages: MeteredRecord[];
  voice?: MeteredRecord | undefined;
}

/** What the meter item of a session says was already counted. */
interface MeterState {
  lastSeq: number;
  voiceCounted: boolean;
}

/** The meter found a message missing before the ones it was handed: they are counted once it arrives. */
export class MeterGapError extends Error {}

/**
 * Usage counters (`ORG#<org>#USAGE`, changed only by `ADD`) and each session's meter item (`#METER`: the last
 * message sequence number counted, and whether its voice seconds were). A batch's records of one organization are
 * counted in one transaction that moves the meters forward and adds to the counters, so a record is counted
 * exactly when its meter moves past it: a replayed record finds its meter already past and adds nothing.
 */
export class DynamoUsageStore implements UsageStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.client = client;
    this.tableName = tableName;
  }

  async record(orgId: string, records: readonly MeteredRecord[]): Promise<boolean> {
    let sessions = batchesBySession(records);
    let counted = false;
    // Sessions go in chunks small enough for one transaction with their counters.
    while (sessions.length > 0) {
      const chunk = chunkForTransaction(sessions);
      sessions = sessions.slice(chunk.length);
      counted = (await this.recordChunk(orgId, chunk)) || counted;
    }
    return counted;
  }

  private async recordChunk(orgId: string, chunk: SessionBatch[]): Promise<boolean> {
    let pending = chunk;
    for (let attempt = 1; ; attempt += 1) {
      pending = pending.filter((batch) => batch.messages.length > 0 || batch.voice);
      if (pending.length === 0) return false;
      try {
        await this.client.send(new TransactWriteCommand({ TransactItems: this.transaction(orgId, pending) }));
        return true;
      } catch (error) {
        if (!(error instanceof TransactionCanceledException) || attempt >= maxAttempts) throw error;
        const reasons = error.CancellationReasons ?? [];
        // Meters already past some records (a replay): drop those and count the rest.
        pending = pending.map((batch, index) => {
          const reason = reasons[index];
          if (reason?.Code !== 'ConditionalCheckFailed') return batch;
          return uncounted(batch, meterState(reason.Item as Record<string, AttributeValue> | undefined));
        });
        // Another meter counting the same organization at the same moment: try again shortly.
        if (reasons.some((reason) => reason.Code === 'TransactionConflict')) await new Promise((resolve) => setTimeout(resolve, 20 * attempt + Math.random() * 30));
      }
    }
  }

  private transaction(orgId: string, batches: SessionBatch[]): TransactItem[] {
    const meters = batches.map((batch) => this.meterUpdate(orgId, batch));
    const totals = new Map<string, { granularity: Granularity; bucket: string; counts: UsageCounts }>();
    for (const record of batches.flatMap((batch) => [...batch.messages, ...(batch.voice ? [batch.voice] : [])])) {
      for (const granularity of ['hour', 'day', 'month'] as const) {
        const bucket = bucketOf(record.at, granularity);
        const id = `${granularity}#${bucket}`;
        const total = totals.get(id) ?? { granularity, bucket, counts: {} };
        addCounts(total.counts, record.counts);
        totals.set(id, total);
      }
    }
    const counters = [...totals.values()].map(({ granularity, bucket, counts }) => {
      const metrics = Object.entries(counts);
      return {
        Update: {
          TableName: this.tableName,
          Key: keys.usageCounter(orgId, granularity, bucket),
          UpdateExpression: `SET entity = :entity ADD ${metrics.map((_, index) => `#m${index} :m${index}`).join(', ')}`,
          ExpressionAttributeNames: Object.fromEntries(metrics.map(([metric], index) => [`#m${index}`, metric])),
          ExpressionAttributeValues: { ':entity': 'usageCounter', ...Object.fromEntries(metrics.map(([, value], index) => [`:m${index}`, value])) },
        },
      };
    });
    return [...meters, ...counters];
  }

  private meterUpdate(orgId: string, batch: SessionBatch): TransactItem {
    const sets = ['entity = :entity'];
    const conditions: string[] = [];
    const values: Record<string, unknown> = { ':entity': 'usageMeter' };
    const first = batch.messages[0]?.seq;
    const last = batch.messages.at(-1)?.seq;
    if (first !== undefined && last !== undefined) {
      sets.push('lastSeq = :last');
      values[':last'] = last;
      if (first === 1) conditions.push('attribute_not_exists(lastSeq)');
      else {
        conditions.push('lastSeq = :previous');
        values[':previous'] = first - 1;
      }
    }
    if (batch.voice) {
      sets.push('voiceCounted = :counted');
      conditions.push('attribute_not_exists(voiceCounted)');
      values[':counted'] = true;
    }
    return {
      Update: {
        TableName: this.tableName,
        Key: keys.usageMeter(orgId, batch.sessionId),
        UpdateExpression: `SET ${sets.join(', ')}`,
        ConditionExpression: conditions.join(' AND '),
        ExpressionAttributeValues: values,
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    };
  }

  async counters(orgId: string, granularity: Granularity, fromBucket: string, toBucket: string): Promise<Map<string, UsageCounts>> {
    const prefix = `${granularity.toUpperCase()}#`;
    const found = new Map<string, UsageCounts>();
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
          ExpressionAttributeValues: { ':pk': keys.usagePartition(orgId), ':from': prefix + fromBucket, ':to': prefix + toBucket },
          ExclusiveStartKey: startKey,
        }),
      );
      for (const item of page.Items ?? []) found.set(String(item.sk).slice(prefix.length), countsOf(item));
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return found;
  }

  async periodCounts(orgId: string, month: string): Promise<UsageCounts> {
    const result = await this.client.send(new GetCommand({ TableName: this.tableName, Key: keys.usageCounter(orgId, 'month', month), ConsistentRead: true }));
    return result.Item ? countsOf(result.Item) : {};
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
}

function countsOf(item: Record<string, unknown>): UsageCounts {
  return Object.fromEntries(Object.entries(item).filter(([field, value]) => !counterFields.has(field) && typeof value === 'number')) as UsageCounts;
}

function batchesBySession(records: readonly MeteredRecord[]): SessionBatch[] {
  const bySession = new Map<string, SessionBatch>();
  for (const record of records) {
    const batch = bySession.get(record.sessionId) ?? { sessionId: record.sessionId, messages: [] };
    if (record.seq === undefined) batch.voice = record;
    else if (!batch.messages.some((message) => message.seq === record.seq)) batch.messages.push(record);
    bySession.set(record.sessionId, batch);
  }
  const batches = [...bySession.values()];
  for (const batch of batches) {
    batch.messages.sort((a, b) => (a.seq as number) - (b.seq as number));
    if (batch.messages.some((message, index) => index > 0 && message.seq !== (batch.messages[index - 1]?.seq as number) + 1)) {
      throw new MeterGapError(`session ${batch.sessionId}: the batch's messages are not consecutive`);
    }
  }
  return batches;
}

/** As many sessions as fit in one transaction beside their counter items (3 per distinct hour). */
function chunkForTransaction(sessions: SessionBatch[]): SessionBatch[] {
  const hours = new Set<string>();
  let taken = 0;
  for (const batch of sessions) {
    const newHours = [...batch.messages, ...(batch.voice ? [batch.voice] : [])].map((record) => bucketOf(record.at, 'hour')).filter((hour) => !hours.has(hour));
    if (taken > 0 && taken + 1 + (hours.size + new Set(newHours).size) * 3 > maxTransactionItems) break;
    for (const hour of newHours) hours.add(hour);
    taken += 1;
  }
  return sessions.slice(0, taken);
}

function meterState(item: Record<string, AttributeValue> | undefined): MeterState {
  const meter = item ? unmarshall(item) : {};
  return { lastSeq: typeof meter.lastSeq === 'number' ? meter.lastSeq : 0, voiceCounted: meter.voiceCounted === true };
}

/** The part of a batch its meter has not counted yet; a hole before it means a record has not arrived yet. */
function uncounted(batch: SessionBatch, meter: MeterState): SessionBatch {
  const messages = batch.messages.filter((message) => (message.seq as number) > meter.lastSeq);
  const first = messages[0]?.seq;
  if (first !== undefined && first !== meter.lastSeq + 1) {
    throw new MeterGapError(`session ${batch.sessionId}: message ${meter.lastSeq + 1} is not counted yet, ${first} arrived`);
  }
  return { sessionId: batch.sessionId, messages, voice: meter.voiceCounted ? undefined : batch.voice };
}
