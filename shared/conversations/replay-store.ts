import { GetCommand, PutCommand, TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { outboxPut } from '../events/outbox.ts';
import type { DomainEvent } from '../events/events.ts';
import { toRecord } from '../platform/store/items.ts';
import { keys } from '../platform/store/keys.ts';
import type { Replay } from './replay-schemas.ts';

const replayKey = (orgId: string, agentId: string, replayId: string) => ({ pk: keys.agentPartition(orgId, agentId), sk: `REPLAY#${replayId}` });

const replayFieldOrder = ['id', 'agentId', 'status', 'candidate', 'liveTools', 'sessionIds', 'progress', 'results', 'error', 'createdAt', 'updatedAt', 'completedAt'];

/** Replays live in their agent's partition, beside its versions and its outbox (docs/agent-versions.md#replay). */
export class DynamoReplayStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.client = client;
    this.tableName = tableName;
  }

  async create(replay: Replay): Promise<void> {
    await this.client.send(new PutCommand({ TableName: this.tableName, Item: { ...replayKey(replay.orgId, replay.agentId, replay.id), entity: 'replay', ...replay } }));
  }

  async get(orgId: string, agentId: string, replayId: string): Promise<Replay | undefined> {
    const { Item } = await this.client.send(new GetCommand({ TableName: this.tableName, Key: replayKey(orgId, agentId, replayId) }));
    return Item ? { ...toRecord<Replay>(Item, replayFieldOrder), orgId } : undefined;
  }

  async progress(replay: Replay, sessionsDone: number, at: string): Promise<void> {
    await this.client.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: replayKey(replay.orgId, replay.agentId, replay.id),
        UpdateExpression: 'SET #status = :running, progress.sessionsDone = :done, updatedAt = :at',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':running': 'RUNNING', ':done': sessionsDone, ':at': at },
      }),
    );
  }

  /** The finished replay with its `replay.completed` event, together. */
  async finish(replay: Replay, event: DomainEvent): Promise<void> {
    const { orgId, ...item } = replay;
    await this.client.send(
      new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName: this.tableName, Item: { ...replayKey(orgId, replay.agentId, replay.id), entity: 'replay', orgId, ...item } } },
          outboxPut(this.tableName, keys.agentPartition(orgId, replay.agentId), event),
        ],
      }),
    );
  }
}
