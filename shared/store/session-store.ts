import {
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
} from '@aws-sdk/lib-dynamodb';
import type { DomainEvent } from '../domain/events.ts';
import type { Message, Session, SessionState } from '../schemas/session.ts';
import { transactionCancellationCodes } from './dynamo.ts';
import { toRecord } from './items.ts';
import { keys } from './keys.ts';
import { queryAll } from './query-all.ts';

type TransactItem = NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']>[number];

/** A session as stored: the record plus the turn bookkeeping that never leaves the store and the domain. */
export interface StoredSession extends Session {
  /** Sequence number the next message gets. */
  nextSeq: number;
  /** Epoch ms until which a turn holds the session; a held session counts as active. */
  turnLeaseUntil?: number | undefined;
}

export interface SessionFilter {
  agentId?: string | undefined;
  state?: SessionState | undefined;
  platform?: string | undefined;
  createdAfter?: string | undefined;
}

/** Outbox events live a week in the partition of what they describe; the stream relays them when written. */
const outboxRetentionSeconds = 7 * 24 * 60 * 60;

const sessionFieldOrder = [
  'id', 'orgId', 'agentId', 'type', 'direction', 'platform', 'state', 'metadata', 'createdAt', 'updatedAt',
  'lastActivityAt', 'endedAt', 'endedReason', 'messageCount',
];
const messageFieldOrder = ['id', 'sessionId', 'role', 'content', 'toolCall', 'metadata', 'createdAt'];

/**
 * Sessions get a partition each (`ORG#<org>#SES#<id>`): the session item, its messages in sequence order, its
 * expiry item and its outbox events. Organization-wide listings go through gsi1 (by creation) and gsi2 (by agent).
 */
export class DynamoSessionStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.client = client;
    this.tableName = tableName;
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
      turnLeaseUntil: item.turnLeaseUntil as number | undefined,
    };
  }

  /** Every session of the organization matching the filter, newest first, with its turn lease. */
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

  /**
   * Moves an OPEN session to CLOSED or EXPIRED with its events, exactly once: false when it was no longer OPEN
   * (someone else ended it first), or when a turn holds it and `unlessTurnActive` is set.
   */
  async end(session: StoredSession, ended: Session, events: DomainEvent[], options: { unlessTurnActiveAt?: number } = {}): Promise<boolean> {
    const leaseCondition = options.unlessTurnActiveAt === undefined ? '' : ' AND (attribute_not_exists(turnLeaseUntil) OR turnLeaseUntil < :now)';
    try {
      await this.client.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: this.tableName,
                Key: keys.session(session.orgId, session.id),
                UpdateExpression: 'SET #state = :state, endedAt = :endedAt, endedReason = :reason, updatedAt = :updatedAt REMOVE turnLeaseUntil',
                ConditionExpression: `#state = :open${leaseCondition}`,
                ExpressionAttributeNames: { '#state': 'state' },
                ExpressionAttributeValues: {
                  ':state': ended.state,
                  ':endedAt': ended.endedAt,
                  ':reason': ended.endedReason,
                  ':updatedAt': ended.updatedAt,
                  ':open': 'OPEN',
                  ...(options.unlessTurnActiveAt === undefined ? {} : { ':now': options.unlessTurnActiveAt }),
                },
              },
            },
            { Delete: { TableName: this.tableName, Key: keys.sessionExpiry(session.orgId, session.id) } },
            ...this.outboxPuts(session.orgId, session.id, events),
          ],
        }),
      );
      return true;
    } catch (error) {
      if (transactionCancellationCodes(error)?.[0] === 'ConditionalCheckFailed') return false;
      throw error;
    }
  }

  /**
   * Starts a turn: appends the user's message at the sequence number last seen and takes the turn lease, if the
   * session is still OPEN, unchanged since it was read, and not held by another turn. 'busy' otherwise.
   */
  async beginTurn(
    session: StoredSession,
    userMessage: Message,
    at: { now: number; nowIso: string; leaseUntil: number; expiresAt: number },
    events: DomainEvent[],
  ): Promise<'started' | 'busy'> {
    try {
      await this.client.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: this.tableName,
                Key: keys.session(session.orgId, session.id),
                UpdateExpression:
                  'SET nextSeq = :next, turnLeaseUntil = :lease, lastActivityAt = :nowIso, updatedAt = :nowIso, messageCount = messageCount + :one',
                ConditionExpression:
                  '#state = :open AND nextSeq = :seen AND (attribute_not_exists(turnLeaseUntil) OR turnLeaseUntil < :now)',
                ExpressionAttributeNames: { '#state': 'state' },
                ExpressionAttributeValues: {
                  ':next': session.nextSeq + 1,
                  ':seen': session.nextSeq,
                  ':lease': at.leaseUntil,
                  ':now': at.now,
                  ':nowIso': at.nowIso,
                  ':open': 'OPEN',
                  ':one': 1,
                },
              },
            },
            this.messagePut(session.orgId, session.nextSeq, userMessage),
            this.expiryPut(session.orgId, session.id, at.expiresAt),
            ...this.outboxPuts(session.orgId, session.id, events),
          ],
        }),
      );
      return 'started';
    } catch (error) {
      if (transactionCancellationCodes(error)?.[0] === 'ConditionalCheckFailed') return 'busy';
      throw error;
    }
  }

  /** Appends a message inside a turn this process holds; the lease makes it the only writer of the sequence. */
  async appendInTurn(orgId: string, seq: number, message: Message, events: DomainEvent[]): Promise<void> {
    await this.client.send(
      new TransactWriteCommand({
        TransactItems: [this.messagePut(orgId, seq, message), ...this.outboxPuts(orgId, message.sessionId, events)],
      }),
    );
  }

  /** Ends a turn: its last message, the sequence and activity bookkeeping, and the lease released, together. */
  async endTurn(
    session: StoredSession,
    final: { seq: number; message: Message } | undefined,
    at: { nowIso: string; expiresAt: number },
    bookkeeping: { nextSeq: number; messagesAdded: number },
    events: DomainEvent[],
  ): Promise<void> {
    await this.client.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Update: {
              TableName: this.tableName,
              Key: keys.session(session.orgId, session.id),
              UpdateExpression:
                'SET nextSeq = :next, lastActivityAt = :nowIso, updatedAt = :nowIso, messageCount = messageCount + :added REMOVE turnLeaseUntil',
              ExpressionAttributeValues: { ':next': bookkeeping.nextSeq, ':nowIso': at.nowIso, ':added': bookkeeping.messagesAdded },
            },
          },
          ...(final ? [this.messagePut(session.orgId, final.seq, final.message)] : []),
          this.expiryPut(session.orgId, session.id, at.expiresAt),
          ...this.outboxPuts(session.orgId, session.id, events),
        ],
      }),
    );
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

  private outboxPuts(orgId: string, sessionId: string, events: DomainEvent[]): TransactItem[] {
    return events.map((event) => ({
      Put: {
        TableName: this.tableName,
        Item: {
          ...keys.outbox(keys.sessionPartition(orgId, sessionId), event.eventId),
          entity: 'outbox',
          ...event,
          expiresAt: Math.floor(Date.parse(event.createdAt) / 1000) + outboxRetentionSeconds,
        },
      },
    }));
  }
}
