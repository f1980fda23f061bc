import {
  BatchGetCommand,
  GetCommand,
  PutCommand,
  TransactWriteCommand,
  type BatchGetCommandOutput,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
} from '@aws-sdk/lib-dynamodb';
import type { DomainEvent } from '../domain/events.ts';
import type { AnalysisJob, SecretCipher, SessionFilter, SessionStore, StoredSession, TurnContext } from '../ports.ts';
import type { AnalysisResult } from '../schemas/analysis.ts';
import type { Message, Session } from '../schemas/session.ts';
import { toAgent } from './agent-store.ts';
import { transactionCancellationCodes } from './dynamo.ts';
import { toRecord } from './items.ts';
import { keys } from './keys.ts';
import { outboxPut, outboxRetentionSeconds } from './outbox.ts';
import { queryAll } from './query-all.ts';
import { toExecutableTool } from './tool-store.ts';

type TransactItem = NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']>[number];


const sessionFieldOrder = [
  'id', 'orgId', 'agentId', 'type', 'direction', 'platform', 'state', 'metadata', 'createdAt', 'updatedAt',
  'lastActivityAt', 'endedAt', 'endedReason', 'messageCount', 'analysis',
];
const messageFieldOrder = ['id', 'sessionId', 'role', 'content', 'toolCall', 'metadata', 'createdAt'];

/**
 * Sessions get a partition each (`ORG#<org>#SES#<id>`): the session item, its messages in sequence order, its
 * expiry item and its outbox events. Organization-wide listings go through gsi1 (by creation) and gsi2 (by agent).
 * `cipher` opens the signing secrets of the tools a turn reads.
 */
export class DynamoSessionStore implements SessionStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly cipher: SecretCipher;

  constructor(client: DynamoDBDocumentClient, tableName: string, cipher: SecretCipher) {
    this.client = client;
    this.tableName = tableName;
    this.cipher = cipher;
  }

  async create(session: StoredSession, expiresAt: number, events: DomainEvent[]): Promise<void> {
    await this.client.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName: this.tableName,
              Item: {
                ...keys.session(session.orgId, session.id),
                entity: 'session',
                gsi1pk: keys.sessionsByOrg(session.orgId),
                gsi1sk: `${session.createdAt}#${session.id}`,
                gsi2pk: keys.sessionsByAgent(session.orgId, session.agentId),
                gsi2sk: `${session.createdAt}#${session.id}`,
                ...session,
              },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
          this.expiryPut(session.orgId, session.id, expiresAt),
          ...this.outboxPuts(session.orgId, session.id, events),
        ],
      }),
    );
  }

  async get(orgId: string, sessionId: string): Promise<StoredSession | undefined> {
    const result = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: keys.session(orgId, sessionId), ConsistentRead: true }),
    );
    return result.Item ? this.toStoredSession(result.Item) : undefined;
  }

  private toStoredSession(item: Record<string, unknown>): StoredSession {
    return {
      ...toRecord<Session>(item, sessionFieldOrder),
      nextSeq: item.nextSeq as number,
      activeUntil: item.activeUntil as number | undefined,
      endedEventId: item.endedEventId as string | undefined,
      analysisJobId: item.analysisJobId as string | undefined,
    };
  }

  /** Every session of the organization matching the filter, newest first, with its turn bookkeeping. */
  async list(orgId: string, filter: SessionFilter): Promise<StoredSession[]> {
    const input: QueryCommandInput = filter.agentId
      ? {
          TableName: this.tableName,
          IndexName: 'gsi2',
          KeyConditionExpression: 'gsi2pk = :pk',
          ExpressionAttributeValues: { ':pk': keys.sessionsByAgent(orgId, filter.agentId) },
        }
      : {
          TableName: this.tableName,
          IndexName: 'gsi1',
          KeyConditionExpression: 'gsi1pk = :pk',
          ExpressionAttributeValues: { ':pk': keys.sessionsByOrg(orgId) },
        };
    if (filter.createdAfter) {
      const sortKey = filter.agentId ? 'gsi2sk' : 'gsi1sk';
      input.KeyConditionExpression += ` AND ${sortKey} > :after`;
      // Sort keys hold createdAt as UTC with milliseconds; `~` sorts after every id character, so sessions
      // created exactly at createdAfter are excluded.
      const after = new Date(filter.createdAfter).toISOString();
      input.ExpressionAttributeValues = { ...input.ExpressionAttributeValues, ':after': `${after}#~` };
    }
    const conditions: string[] = [];
    const names: Record<string, string> = {};
    if (filter.state) {
      conditions.push('#state = :state');
      names['#state'] = 'state';
      input.ExpressionAttributeValues = { ...input.ExpressionAttributeValues, ':state': filter.state };
    }
    if (filter.platform) {
      conditions.push('#platform = :platform');
      names['#platform'] = 'platform';
      input.ExpressionAttributeValues = { ...input.ExpressionAttributeValues, ':platform': filter.platform };
    }
    if (conditions.length) {
      input.FilterExpression = conditions.join(' AND ');
      input.ExpressionAttributeNames = names;
    }
    input.ScanIndexForward = false;
    const items = await queryAll(this.client, input);
    return items.map((item) => this.toStoredSession(item));
  }

  async messages(orgId: string, sessionId: string): Promise<Message[]> {
    const items = await queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': keys.sessionPartition(orgId, sessionId), ':prefix': keys.messagePrefix },
      ConsistentRead: true,
    });
    return items.map((item) => toRecord<Message>(item, messageFieldOrder));
  }

  async messageRange(orgId: string, sessionId: string, fromSeq: number, toSeq: number): Promise<Message[]> {
    const items = await queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: {
        ':pk': keys.sessionPartition(orgId, sessionId),
        ':from': keys.message(orgId, sessionId, fromSeq).sk,
        ':to': keys.message(orgId, sessionId, toSeq).sk,
      },
      ConsistentRead: true,
    });
    return items.map((item) => toRecord<Message>(item, messageFieldOrder));
  }

  /**
   * Moves an OPEN session to CLOSED or EXPIRED with its events, exactly once: false when it was no longer OPEN
   * (someone else ended it first), or, with `unlessActiveSince`, when it saw activity after that moment.
   */
  async end(session: StoredSession, ended: Session, events: DomainEvent[], job: AnalysisJob, options: { unlessActiveSince?: string } = {}): Promise<boolean> {
    // Expiry must not win over activity recorded after the session was read.
    const activityCondition = options.unlessActiveSince === undefined ? '' : ' AND lastActivityAt = :seenActivity';
    return this.writeIfFirstHolds([
      {
        Update: {
          TableName: this.tableName,
          Key: keys.session(session.orgId, session.id),
          UpdateExpression: 'SET #state = :state, endedAt = :endedAt, endedReason = :reason, updatedAt = :updatedAt REMOVE activeUntil',
          ConditionExpression: `#state = :open${activityCondition}`,
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: {
            ':state': ended.state,
            ':endedAt': ended.endedAt,
            ':reason': ended.endedReason,
            ':updatedAt': ended.updatedAt,
            ':open': 'OPEN',
            ...(options.unlessActiveSince === undefined ? {} : { ':seenActivity': options.unlessActiveSince }),
          },
        },
      },
      { Delete: { TableName: this.tableName, Key: keys.sessionExpiry(session.orgId, session.id) } },
      ...this.outboxPuts(session.orgId, session.id, events),
      { Put: this.analysisJobPut(job) },
    ]);
  }

  async requestAnalysis(job: AnalysisJob): Promise<void> {
    // One item: a plain Put, at half a transaction's write cost.
    await this.client.send(new PutCommand(this.analysisJobPut(job)));
  }

  async completeAnalysis(session: StoredSession, analysis: AnalysisResult, jobId: string, ended: DomainEvent, updatedAt: string): Promise<boolean> {
    return this.writeIfFirstHolds([
      {
        Update: {
          TableName: this.tableName,
          Key: keys.session(session.orgId, session.id),
          UpdateExpression: 'SET analysis = :analysis, analysisJobId = :job, endedEventId = :event, updatedAt = :updatedAt',
          ConditionExpression: 'attribute_not_exists(endedEventId) AND #state <> :open',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: { ':analysis': analysis, ':job': jobId, ':event': ended.eventId, ':updatedAt': updatedAt, ':open': 'OPEN' },
        },
      },
      ...this.outboxPuts(session.orgId, session.id, [ended]),
    ]);
  }

  async replaceAnalysis(session: StoredSession, analysis: AnalysisResult, jobId: string, updated: DomainEvent, updatedAt: string): Promise<boolean> {
    return this.writeIfFirstHolds([
      {
        Update: {
          TableName: this.tableName,
          Key: keys.session(session.orgId, session.id),
          UpdateExpression: 'SET analysis = :analysis, analysisJobId = :job, updatedAt = :updatedAt',
          ConditionExpression: 'attribute_exists(endedEventId) AND analysisJobId <> :job',
          ExpressionAttributeValues: { ':analysis': analysis, ':job': jobId, ':updatedAt': updatedAt },
        },
      },
      ...this.outboxPuts(session.orgId, session.id, [updated]),
    ]);
  }

  /**
   * Everything a turn reads, in one strongly consistent round trip: the session, its agent and the agent's tools
   * (ids as last known; the caller fetches any the agent turns out to have besides).
   */
  async readTurnContext(orgId: string, sessionId: string, agentId: string, toolIds: readonly string[]): Promise<TurnContext> {
    const wanted = [keys.session(orgId, sessionId), keys.agent(orgId, agentId), ...toolIds.map((toolId) => keys.tool(orgId, toolId))];
    const items: Record<string, unknown>[] = [];
    let request: Record<string, { Keys: Record<string, unknown>[]; ConsistentRead: boolean }> | undefined = {
      [this.tableName]: { Keys: wanted, ConsistentRead: true },
    };
    while (request && Object.keys(request).length > 0) {
      const result: BatchGetCommandOutput = await this.client.send(new BatchGetCommand({ RequestItems: request }));
      items.push(...(result.Responses?.[this.tableName] ?? []));
      request = result.UnprocessedKeys as typeof request;
    }
    const byKey = new Map(items.map((item) => [`${item.pk}|${item.sk}`, item]));
    const find = (key: { pk: string; sk: string }) => byKey.get(`${key.pk}|${key.sk}`);
    const session = find(keys.session(orgId, sessionId));
    const agent = find(keys.agent(orgId, agentId));
    return {
      session: session ? this.toStoredSession(session) : undefined,
      agent: agent ? toAgent(agent) : undefined,
      tools: await Promise.all(
        toolIds
          .map((toolId) => find(keys.tool(orgId, toolId)))
          .filter((item) => item !== undefined)
          .map((item) => toExecutableTool(this.cipher, item)),
      ),
    };
  }

  /**
   * Marks the session active for the length of a turn, so it cannot expire meanwhile: only needed when the
   * inactivity window could run out before the turn does. False when the session is no longer OPEN.
   */
  async holdForTurn(session: StoredSession, at: { nowIso: string; activeUntil: number; expiresAt: number }): Promise<boolean> {
    return this.writeIfFirstHolds([
      {
        Update: {
          TableName: this.tableName,
          Key: keys.session(session.orgId, session.id),
          UpdateExpression: 'SET lastActivityAt = :now, activeUntil = :activeUntil',
          ConditionExpression: '#state = :open',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: { ':now': at.nowIso, ':activeUntil': at.activeUntil, ':open': 'OPEN' },
        },
      },
      this.expiryPut(session.orgId, session.id, at.expiresAt),
    ]);
  }

  /**
   * Appends a turn's messages after the sequence number last seen, with the session's bookkeeping, in one
   * transaction; 'conflict' when another turn appended first (read again and retry after it). Each message item
   * is also the record of its `message.added` event.
   */
  async commitTurn(session: StoredSession, messages: readonly Message[], at: { nowIso: string; expiresAt: number }): Promise<'committed' | 'conflict'> {
    const committed = await this.writeIfFirstHolds([
      {
        Update: {
          TableName: this.tableName,
          Key: keys.session(session.orgId, session.id),
          UpdateExpression:
            'SET nextSeq = :next, lastActivityAt = :now, updatedAt = :now, messageCount = messageCount + :added REMOVE activeUntil',
          // A session closed meanwhile takes no more messages: none may follow its endedAt or change its messageCount.
          ConditionExpression: 'nextSeq = :seen AND #state = :open',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: {
            ':open': 'OPEN',
            ':next': session.nextSeq + messages.length,
            ':seen': session.nextSeq,
            ':now': at.nowIso,
            ':added': messages.length,
          },
        },
      },
      ...messages.map((message, index) => this.messagePut(session.orgId, session.nextSeq + index, message)),
      this.expiryPut(session.orgId, session.id, at.expiresAt),
    ]);
    return committed ? 'committed' : 'conflict';
  }

  /** Writes the items in one transaction; false when the first item's condition failed, so nothing was written. */
  private async writeIfFirstHolds(items: TransactItem[]): Promise<boolean> {
    try {
      await this.client.send(new TransactWriteCommand({ TransactItems: items }));
      return true;
    } catch (error) {
      if (transactionCancellationCodes(error)?.[0] === 'ConditionalCheckFailed') return false;
      throw error;
    }
  }

  private messagePut(orgId: string, seq: number, message: Message): TransactItem {
    return {
      Put: {
        TableName: this.tableName,
        Item: { ...keys.message(orgId, message.sessionId, seq), entity: 'message', seq, ...message },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    };
  }

  private expiryPut(orgId: string, sessionId: string, expiresAt: number): TransactItem {
    return {
      Put: {
        TableName: this.tableName,
        Item: { ...keys.sessionExpiry(orgId, sessionId), entity: 'sessionExpiry', orgId, sessionId, expiresAt },
      },
    };
  }

  private analysisJobPut(job: AnalysisJob): { TableName: string; Item: Record<string, unknown> } {
    return {
      TableName: this.tableName,
      Item: {
        ...keys.analysisJob(job.orgId, job.sessionId, job.jobId),
        entity: 'analysisJob',
        ...job,
        expiresAt: Math.floor(Date.parse(job.deadlineFrom) / 1000) + outboxRetentionSeconds,
      },
    };
  }

  private outboxPuts(orgId: string, sessionId: string, events: DomainEvent[]): TransactItem[] {
    return events.map((event) => outboxPut(this.tableName, keys.sessionPartition(orgId, sessionId), event));
  }
}
