import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { outboxPut } from '../events/outbox.ts';
import type { DomainEvent } from '../events/events.ts';
import { conditionalWrite, putAll, sendTransaction, transactionCancellationCodes } from '../platform/store/dynamo.ts';
import { toRecord } from '../platform/store/items.ts';
import { keys } from '../platform/store/keys.ts';
import { queryAll } from '../platform/store/query-all.ts';
import type { Replay, SessionReplay } from './replay-schemas.ts';

const replayKey = (orgId: string, agentId: string, replayId: string) => ({ pk: keys.agentPartition(orgId, agentId), sk: `REPLAY#${replayId}` });

/** A session's result is split in parts; `REPLAY#` never prefixes them, so listing replays reads no result. */
const resultPrefix = (replayId: string) => `REPLAYRESULT#${replayId}#`;
const resultPartKey = (replay: Replay, session: number, part: number) => ({
  pk: keys.agentPartition(replay.orgId, replay.agentId),
  sk: `${resultPrefix(replay.id)}${String(session).padStart(4, '0')}#${String(part).padStart(4, '0')}`,
});

/** Under DynamoDB's 400 KB an item, with room for its keys. */
const resultPartBytes = 350_000;

const replayFieldOrder = ['id', 'agentId', 'status', 'candidate', 'liveTools', 'sessionIds', 'progress', 'turnsChanged', 'error', 'createdAt', 'updatedAt', 'completedAt'];

/** A replay as stored: with how many parts hold each session's result, for the sessions done, in order. */
export interface StoredReplay extends Replay {
  resultParts: number[];
  /** The session (its index) during which an invocation stopped without ending, as the message's redelivery found it. */
  stoppedIn?: number;
}

/** A delivery writes only while no other has finished the replay. */
const unfinished = '#status IN (:queued, :running)';
const unfinishedValues = { ':queued': 'QUEUED', ':running': 'RUNNING' };

/**
 * Replays live in their agent's partition, beside its versions and its outbox (docs/agent-versions.md#replay): the
 * replay `REPLAY#<id>`, and each session's result, as JSON cut in parts of at most 350 KB,
 * `REPLAYRESULT#<id>#<session>#<part>`. A session's result counts once the replay records its parts.
 */
export class DynamoReplayStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.client = client;
    this.tableName = tableName;
  }

  async create(replay: Replay): Promise<void> {
    const item = { ...replayKey(replay.orgId, replay.agentId, replay.id), entity: 'replay', ...replay, resultParts: [] };
    await this.client.send(new PutCommand({ TableName: this.tableName, Item: item }));
  }

  async get(orgId: string, agentId: string, replayId: string): Promise<StoredReplay | undefined> {
    const { Item } = await this.client.send(new GetCommand({ TableName: this.tableName, Key: replayKey(orgId, agentId, replayId), ConsistentRead: true }));
    return Item ? { ...toRecord<StoredReplay>(Item, replayFieldOrder), orgId } : undefined;
  }

  /** The agent's replays, without their results. */
  async list(orgId: string, agentId: string): Promise<StoredReplay[]> {
    const items = await this.agentItems(orgId, agentId, 'REPLAY#');
    return items.map((item) => ({ ...toRecord<StoredReplay>(item, replayFieldOrder), orgId }));
  }

  /** The results of the sessions the replay has recorded, in order; all pages of the Query (they can pass 1 MB). */
  async results(replay: StoredReplay): Promise<SessionReplay[]> {
    const items = await this.agentItems(replay.orgId, replay.agentId, resultPrefix(replay.id));
    const parts = replay.resultParts.map((): Uint8Array[] => []);
    for (const item of items) {
      const [session, part] = String(item.sk).slice(resultPrefix(replay.id).length).split('#').map(Number) as [number, number];
      // Parts beyond the recorded count are left from an attempt cut short before it recorded the session.
      if (session < parts.length && part < (replay.resultParts[session] ?? 0)) parts[session]?.push(item.body as Uint8Array);
    }
    return parts.map((session) => JSON.parse(Buffer.concat(session).toString('utf8')) as SessionReplay);
  }

  /** The items of the agent's partition whose sort key starts with `prefix`, every page. */
  private agentItems(orgId: string, agentId: string, prefix: string): Promise<Record<string, unknown>[]> {
    return queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': keys.agentPartition(orgId, agentId), ':prefix': prefix },
      ConsistentRead: true,
    });
  }

  /** QUEUED → RUNNING; false when the replay has finished meanwhile. */
  markRunning(replay: Replay, at: string): Promise<boolean> {
    return this.updateUnfinished(replay, 'SET #status = :running, updatedAt = :at', undefined, { ':at': at });
  }

  /** Notes that an invocation stopped during session number `index`; false when the replay has moved on or finished meanwhile. */
  markStoppedIn(replay: Replay, index: number, at: string): Promise<boolean> {
    return this.updateUnfinished(replay, 'SET stoppedIn = :index, updatedAt = :at', 'progress.sessionsDone = :index', { ':index': index, ':at': at });
  }

  /**
   * Writes the result of the replay's session number `index` (from 0), then records it as done. False when another
   * delivery of the replay recorded that session first, or finished the replay: this one has nothing left to do.
   */
  async recordSession(replay: Replay, index: number, result: SessionReplay, at: string): Promise<boolean> {
    const json = Buffer.from(JSON.stringify(result), 'utf8');
    const parts: Record<string, unknown>[] = [];
    for (let start = 0, part = 0; start < json.length; start += resultPartBytes, part += 1) {
      parts.push({ ...resultPartKey(replay, index, part), entity: 'replayResult', body: json.subarray(start, start + resultPartBytes) });
    }
    await putAll(this.client, this.tableName, parts);
    return this.updateUnfinished(
      replay,
      'SET progress.sessionsDone = :next, resultParts = list_append(resultParts, :parts), updatedAt = :at ADD turnsChanged :changed',
      'progress.sessionsDone = :index',
      { ':index': index, ':next': index + 1, ':parts': [parts.length], ':at': at, ':changed': result.turnsChanged },
    );
  }

  /** Updates the replay while no delivery has finished it and `condition` holds; false otherwise. */
  private updateUnfinished(replay: Replay, update: string, condition: string | undefined, values: Record<string, unknown>): Promise<boolean> {
    return conditionalWrite(
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: replayKey(replay.orgId, replay.agentId, replay.id),
          UpdateExpression: update,
          ConditionExpression: condition === undefined ? unfinished : `${unfinished} AND ${condition}`,
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ...unfinishedValues, ...values },
        }),
      ),
    );
  }

  /** COMPLETED or FAILED, with its `replay.completed` event, together; nothing when another delivery finished it first. */
  async finish(replay: Replay, finished: Pick<Replay, 'status' | 'error' | 'updatedAt'>, event: DomainEvent): Promise<void> {
    try {
      await sendTransaction(this.client, [
        {
          Update: {
            TableName: this.tableName,
            Key: replayKey(replay.orgId, replay.agentId, replay.id),
            UpdateExpression: `SET #status = :finished, updatedAt = :at, completedAt = :at${finished.error === undefined ? '' : ', #error = :error'}`,
            ConditionExpression: unfinished,
            ExpressionAttributeNames: { '#status': 'status', ...(finished.error === undefined ? {} : { '#error': 'error' }) },
            ExpressionAttributeValues: { ...unfinishedValues, ':finished': finished.status, ':at': finished.updatedAt, ...(finished.error === undefined ? {} : { ':error': finished.error }) },
          },
        },
        outboxPut(this.tableName, keys.agentPartition(replay.orgId, replay.agentId), event),
      ]);
    } catch (error) {
      if (!transactionCancellationCodes(error)?.includes('ConditionalCheckFailed')) throw error;
    }
  }
}
