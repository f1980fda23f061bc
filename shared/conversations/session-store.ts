import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
  type BatchGetCommandOutput,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
} from '@aws-sdk/lib-dynamodb';
import type { DomainEvent } from '../events/events.ts';
import type { AnalysisJob, SessionFilter, SessionPageRequest, SessionStore, StoredSession, TurnContext } from './ports.ts';
import type { IdempotencyCompletion, SecretCipher } from '../platform/ports.ts';
import type { AnalysisResult } from './analysis-result-schemas.ts';
import type { Message, Session } from './session-schemas.ts';
import { toAgent, toAgentVersion } from '../agents/agent-store.ts';
import { agentAtVersion } from '../agents/agent-versions.ts';
import type { AgentBinding } from './routing-tools.ts';
import { transactionCancellationCodes, type TransactItem } from '../platform/store/dynamo.ts';
import { transactWithCompletion } from '../platform/store/idempotency-store.ts';
import { toRecord } from '../platform/store/items.ts';
import { keys } from '../platform/store/keys.ts';
import { outboxPut, outboxRetentionSeconds } from '../events/outbox.ts';
import { queryAll } from '../platform/store/query-all.ts';
import { tableDefinition, type IndexName } from '../platform/store/table.ts';
import { toExecutableTool } from '../agents/tool-store.ts';


const sessionFieldOrder = [
  'id', 'orgId', 'agentId', 'agentVersion', 'type', 'direction', 'platform', 'state', 'metadata', 'createdAt', 'updatedAt',
  'lastActivityAt', 'endedAt', 'endedReason', 'messageCount', 'analysis',
];
const messageFieldOrder = ['id', 'sessionId', 'role', 'content', 'toolCall', 'metadata', 'createdAt'];

function indexNamed(name: IndexName): (typeof tableDefinition.globalSecondaryIndexes)[number] {
  const index = tableDefinition.globalSecondaryIndexes.find((candidate) => candidate.indexName === name);
  if (!index) throw new Error(`no index ${name} in the table definition`);
  return index;
}

const sessionIndexes = { byOrg: indexNamed('gsi1'), byAgent: indexNamed('gsi2'), open: indexNamed('gsi3') };

/**
 * Session counters are spread over shards, chosen by session id, so that sessions opened at once by one
 * organization seldom update the same counter item (concurrent transactions on one item conflict).
 */
const counterShards = 8;
const counterShard = (sessionId: string): number => Number.parseInt(sessionId.slice(-2), 16) % counterShards;
const counterCellSeparator = '_';
const counterCell = (state: string, platform: string): string => `${state}${counterCellSeparator}${platform}`;

/** An OPEN session shown EXPIRED: no activity since the cut-off, and no running turn holding it. */
const idleOpen = '(#state = :open AND lastActivityAt < :idleBefore AND (attribute_not_exists(activeUntil) OR activeUntil <= :now))';
const notIdle = '(#state = :open AND (lastActivityAt >= :idleBefore OR activeUntil > :now))';
const idleValues = (filter: SessionFilter) => ({ ':open': 'OPEN', ':idleBefore': filter.idle.lastActivityBefore, ':now': filter.idle.nowMs });

/** A FilterExpression of conditions joined by AND, with the names and values they use. */
class Conditions {
  private readonly parts: string[] = [];
  private readonly values: Record<string, unknown>;

  constructor(values: Record<string, unknown>) {
    this.values = { ...values };
  }

  value(name: string, value: unknown): void {
    this.values[name] = value;
  }

  add(condition: string, values: Record<string, unknown> = {}): void {
    this.parts.push(condition);
    Object.assign(this.values, values);
  }

  expression(): Pick<QueryCommandInput, 'FilterExpression' | 'ExpressionAttributeNames' | 'ExpressionAttributeValues'> {
    const filter = this.parts.join(' AND ');
    const names = Object.fromEntries(['state', 'platform'].filter((name) => filter.includes(`#${name}`)).map((name) => [`#${name}`, name]));
    return {
      ...(filter ? { FilterExpression: filter } : {}),
      ...(Object.keys(names).length > 0 ? { ExpressionAttributeNames: names } : {}),
      ExpressionAttributeValues: this.values,
    };
  }
}

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

  async create(session: StoredSession, expiresAt: number, events: DomainEvent[], completion?: IdempotencyCompletion): Promise<void> {
    await transactWithCompletion(this.client, this.tableName, sessionCreationWrites(this.tableName, session, expiresAt, events), completion);
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
      historyRevision: item.historyRevision as number | undefined,
    };
  }

  async list(orgId: string, filter: SessionFilter, page: SessionPageRequest): Promise<{ sessions: StoredSession[]; hasMore: boolean }> {
    const { input, index } = this.sessionQuery(orgId, filter, page.order);
    if (page.after) {
      const sessionId = page.after.slice(page.after.lastIndexOf('#') + 1);
      input.ExclusiveStartKey = { ...keys.session(orgId, sessionId), [index.partitionKey]: input.ExpressionAttributeValues?.[':pk'], [index.sortKey]: page.after };
    }
    // One more than the page, to know whether more follow.
    const wanted = page.skip + page.limit + 1;
    const matches: Record<string, unknown>[] = [];
    // A filter can discard what a read returns: each further read asks for twice as many, up to a full read.
    let batch = wanted;
    do {
      const result = await this.client.send(new QueryCommand({ ...input, Limit: Math.min(batch, 1_000) }));
      matches.push(...(result.Items ?? []));
      input.ExclusiveStartKey = result.LastEvaluatedKey;
      batch *= 2;
    } while (input.ExclusiveStartKey && matches.length < wanted);
    return {
      sessions: matches.slice(page.skip, page.skip + page.limit).map((item) => this.toStoredSession(item)),
      hasMore: matches.length > page.skip + page.limit,
    };
  }

  async count(orgId: string, filter: SessionFilter): Promise<number> {
    // Counters cannot say when a session was created: a `createdAfter` listing counts its range instead.
    if (filter.createdAfter) return this.countMatches(this.sessionQuery(orgId, filter, 'desc').input);
    const scope = filter.agentId ? (`AGENT#${filter.agentId}` as const) : 'ORG';
    const shards = this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :scope)',
        ExpressionAttributeValues: { ':pk': keys.sessionCounters(orgId), ':scope': `${scope}#` },
        ConsistentRead: true,
      }),
    );
    // The counters know stored states; sessions idle but not yet marked EXPIRED are counted among the open ones.
    const idleOpen = filter.state === 'OPEN' || filter.state === 'EXPIRED' ? this.countMatches(this.idleOpenQuery(orgId, filter)) : Promise.resolve(0);
    const storedState = filter.state;
    let counted = 0;
    for (const shard of (await shards).Items ?? []) {
      for (const [cell, value] of Object.entries(shard)) {
        const [state, platform] = cell.split(counterCellSeparator);
        if (platform === undefined || typeof value !== 'number') continue;
        if ((storedState === undefined || state === storedState) && (filter.platform === undefined || platform === filter.platform)) counted += value;
      }
    }
    if (filter.state === 'OPEN') return counted - (await idleOpen);
    if (filter.state === 'EXPIRED') return counted + (await idleOpen);
    return counted;
  }

  /**
   * The Query that reads the filter's sessions in order: OPEN ones from the sparse index of open sessions (however
   * long the history), an agent's from gsi2, all others from gsi1; `createdAfter` narrows the key range and the
   * remaining filters are a FilterExpression, idleness included (an idle OPEN session is shown EXPIRED).
   */
  private sessionQuery(orgId: string, filter: SessionFilter, order: 'asc' | 'desc'): { input: QueryCommandInput; index: (typeof tableDefinition.globalSecondaryIndexes)[number] } {
    const openOnly = filter.state === 'OPEN';
    const [index, partition] = openOnly
      ? [sessionIndexes.open, keys.openSessions(orgId)]
      : filter.agentId
        ? [sessionIndexes.byAgent, keys.sessionsByAgent(orgId, filter.agentId)]
        : [sessionIndexes.byOrg, keys.sessionsByOrg(orgId)];
    const conditions = new Conditions({ ':pk': partition });
    let keyCondition = `${index.partitionKey} = :pk`;
    if (filter.createdAfter) {
      // Sort keys hold createdAt as UTC with milliseconds; `~` sorts after every id character, so sessions
      // created exactly at createdAfter are excluded.
      keyCondition += ` AND ${index.sortKey} > :createdAfter`;
      conditions.value(':createdAfter', `${new Date(filter.createdAfter).toISOString()}#~`);
    }
    if (openOnly && filter.agentId) conditions.add('agentId = :agentId', { ':agentId': filter.agentId });
    if (filter.state === 'OPEN') conditions.add(notIdle, idleValues(filter));
    if (filter.state === 'EXPIRED') conditions.add(`(#state = :expired OR ${idleOpen})`, { ':expired': 'EXPIRED', ...idleValues(filter) });
    if (filter.state === 'CLOSED') conditions.add('#state = :closed', { ':closed': 'CLOSED' });
    if (filter.platform) conditions.add('#platform = :platform', { ':platform': filter.platform });
    return {
      input: { TableName: this.tableName, IndexName: index.indexName, KeyConditionExpression: keyCondition, ScanIndexForward: order === 'asc', ...conditions.expression() },
      index,
    };
  }

  /** OPEN sessions that are idle (shown EXPIRED), from the sparse index: as many reads as the organization has open sessions. */
  private idleOpenQuery(orgId: string, filter: SessionFilter): QueryCommandInput {
    const conditions = new Conditions({ ':pk': keys.openSessions(orgId) });
    conditions.add(idleOpen, idleValues(filter));
    if (filter.agentId) conditions.add('agentId = :agentId', { ':agentId': filter.agentId });
    if (filter.platform) conditions.add('#platform = :platform', { ':platform': filter.platform });
    return { TableName: this.tableName, IndexName: sessionIndexes.open.indexName, KeyConditionExpression: `${sessionIndexes.open.partitionKey} = :pk`, ...conditions.expression() };
  }

  private async countMatches(input: QueryCommandInput): Promise<number> {
    let count = 0;
    let startKey: Record<string, unknown> | undefined;
    do {
      const result = await this.client.send(new QueryCommand({ ...input, Select: 'COUNT', ExclusiveStartKey: startKey }));
      count += result.Count ?? 0;
      startKey = result.LastEvaluatedKey;
    } while (startKey);
    return count;
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
          UpdateExpression:
            'SET #state = :state, endedAt = :endedAt, endedReason = :reason, updatedAt = :updatedAt REMOVE activeUntil, gsi3pk, gsi3sk',
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
      ...counterUpdates(this.tableName, session, { [counterCell('OPEN', session.platform)]: -1, [counterCell(ended.state, session.platform)]: 1 }),
      { Delete: { TableName: this.tableName, Key: keys.sessionExpiry(session.orgId, session.id) } },
      ...this.outboxPuts(session.orgId, session.id, events),
      { Put: this.analysisJobPut(job) },
    ]);
  }

  async requestAnalysis(job: AnalysisJob, completion?: IdempotencyCompletion): Promise<void> {
    // Alone, one plain Put: a transaction costs twice the write units.
    if (completion) await transactWithCompletion(this.client, this.tableName, [{ Put: this.analysisJobPut(job) }], completion);
    else await this.client.send(new PutCommand(this.analysisJobPut(job)));
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
   * Everything a turn reads, in one strongly consistent round trip: the session, its agent (whose item says whether it
   * still exists), the version the session is bound to, and the agent's tools (ids as last known; the caller fetches
   * any the agent turns out to have besides).
   */
  async readTurnContext(orgId: string, sessionId: string, binding: AgentBinding, toolIds: readonly string[]): Promise<TurnContext> {
    const { agentId, version: number } = binding;
    const versionKey = number === undefined ? undefined : keys.agentVersion(orgId, agentId, number);
    const wanted = [keys.session(orgId, sessionId), keys.agent(orgId, agentId), ...(versionKey ? [versionKey] : []), ...toolIds.map((toolId) => keys.tool(orgId, toolId))];
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
    const agentItem = find(keys.agent(orgId, agentId));
    const versionItem = versionKey && find(versionKey);
    const version = versionItem ? toAgentVersion(versionItem) : undefined;
    const agent = agentItem ? toAgent(agentItem) : undefined;
    return {
      session: session ? this.toStoredSession(session) : undefined,
      agent: agent && version ? agentAtVersion(agent, version) : agent,
      version,
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
   * inactivity window could run out before the turn does. The expiry item stays: when it lapses during the turn,
   * the session-expiry consumer sees the hold and looks again a window later. False when the session is no longer OPEN.
   */
  async holdForTurn(session: StoredSession, at: { nowIso: string; activeUntil: number }): Promise<boolean> {
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: keys.session(session.orgId, session.id),
          UpdateExpression: 'SET lastActivityAt = :now, activeUntil = :activeUntil',
          ConditionExpression: '#state = :open',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: { ':now': at.nowIso, ':activeUntil': at.activeUntil, ':open': 'OPEN' },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  /**
   * Appends a turn's messages after the sequence number last seen, with the session's bookkeeping, in one
   * transaction; 'conflict' when another turn appended first (read again and retry after it). Each message item
   * is also the record of its `message.added` event. The expiry item is left where it is: when it lapses, the
   * session-expiry consumer finds the activity and sets it again (`armExpiry`), once per idle window, not per turn.
   */
  async commitTurn(
    session: StoredSession,
    messages: readonly Message[],
    at: { nowIso: string },
    completion?: IdempotencyCompletion,
    metadata?: Session['metadata'],
  ): Promise<'committed' | 'conflict'> {
    const committed = await this.writeIfFirstHolds([
      {
        Update: {
          TableName: this.tableName,
          Key: keys.session(session.orgId, session.id),
          UpdateExpression: `SET nextSeq = :next, lastActivityAt = :now, updatedAt = :now, messageCount = messageCount + :added${metadata ? ', metadata = :metadata' : ''} REMOVE activeUntil`,
          // A session closed meanwhile takes no more messages: none may follow its endedAt or change its messageCount.
          ConditionExpression: 'nextSeq = :seen AND #state = :open',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: {
            ':open': 'OPEN',
            ':next': session.nextSeq + messages.length,
            ':seen': session.nextSeq,
            ':now': at.nowIso,
            ':added': messages.length,
            ...(metadata ? { ':metadata': metadata } : {}),
          },
        },
      },
      ...messages.map((message, index) => this.messagePut(session.orgId, session.nextSeq + index, message)),
    ], completion);
    return committed ? 'committed' : 'conflict';
  }

  async armExpiry(orgId: string, sessionId: string, expiresAt: number): Promise<void> {
    await this.client.send(new PutCommand({ TableName: this.tableName, Item: expiryItem(orgId, sessionId, expiresAt) }));
  }

  async truncateReply(orgId: string, sessionId: string, seq: number, spoken: string, interruption: Record<string, unknown>): Promise<boolean> {
    return this.writeIfFirstHolds([
      {
        Update: {
          TableName: this.tableName,
          Key: keys.message(orgId, sessionId, seq),
          UpdateExpression: 'SET content = :spoken, metadata.interruption = :interruption',
          ConditionExpression: '#role = :assistant',
          ExpressionAttributeNames: { '#role': 'role' },
          ExpressionAttributeValues: { ':spoken': spoken, ':interruption': interruption, ':assistant': 'ASSISTANT' },
        },
      },
      // Histories cached in other processes compare this and read the history again.
      { Update: { TableName: this.tableName, Key: keys.session(orgId, sessionId), UpdateExpression: 'ADD historyRevision :one', ExpressionAttributeValues: { ':one': 1 } } },
    ]);
  }

  /**
   * Writes the items (and the idempotent request's completion, if any) in one transaction; false when the first
   * item's condition failed, so nothing was written.
   */
  private async writeIfFirstHolds(items: TransactItem[], completion?: IdempotencyCompletion): Promise<boolean> {
    try {
      await transactWithCompletion(this.client, this.tableName, items, completion);
      return true;
    } catch (error) {
      if (transactionCancellationCodes(error)?.[0] === 'ConditionalCheckFailed') return false;
      throw error;
    }
  }

  private messagePut(orgId: string, seq: number, message: Message): TransactItem {
    return messagePut(this.tableName, orgId, seq, message);
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

/**
 * Everything that creates a session, for one transaction (with whatever else the caller creates beside it): its
 * item, its counters, its expiry item, its events, and the messages it starts with (numbered from 1: the session's
 * `messageCount` and `nextSeq` count them).
 */
export function sessionCreationWrites(tableName: string, session: StoredSession, expiresAt: number, events: DomainEvent[], messages: readonly Message[] = []): TransactItem[] {
  return [
    { Put: { TableName: tableName, Item: sessionItem(session), ConditionExpression: 'attribute_not_exists(pk)' } },
    ...counterUpdates(tableName, session, { [counterCell(session.state, session.platform)]: 1 }),
    { Put: { TableName: tableName, Item: expiryItem(session.orgId, session.id, expiresAt) } },
    ...events.map((event) => outboxPut(tableName, keys.sessionPartition(session.orgId, session.id), event)),
    ...messages.map((message, index) => messagePut(tableName, session.orgId, index + 1, message)),
  ];
}

/** A message of a session, number `seq`; each message item is also the record of its `message.added` event. */
function messagePut(tableName: string, orgId: string, seq: number, message: Message): TransactItem {
  return {
    Put: {
      TableName: tableName,
      Item: { ...keys.message(orgId, message.sessionId, seq), entity: 'message', seq, ...message },
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  };
}

/** Adds `changes` (counter cell → delta) to the session's counter shard of its organization and of its agent. */
function counterUpdates(tableName: string, session: Session, changes: Record<string, number>): TransactItem[] {
  const cells = Object.entries(changes);
  const shard = counterShard(session.id);
  return (['ORG', `AGENT#${session.agentId}`] as const).map((scope) => ({
    Update: {
      TableName: tableName,
      Key: keys.sessionCounter(session.orgId, scope, shard),
      UpdateExpression: `ADD ${cells.map((_, index) => `#cell${index} :delta${index}`).join(', ')}`,
      ExpressionAttributeNames: Object.fromEntries(cells.map(([cell], index) => [`#cell${index}`, cell])),
      ExpressionAttributeValues: Object.fromEntries(cells.map(([, delta], index) => [`:delta${index}`, delta])),
    },
  }));
}

/** A session's item, with the index keys of its organization's and its agent's listings, and of the open ones while OPEN. */
function sessionItem(session: StoredSession): Record<string, unknown> {
  return {
    ...keys.session(session.orgId, session.id),
    entity: 'session',
    gsi1pk: keys.sessionsByOrg(session.orgId),
    gsi1sk: `${session.createdAt}#${session.id}`,
    gsi2pk: keys.sessionsByAgent(session.orgId, session.agentId),
    gsi2sk: `${session.createdAt}#${session.id}`,
    ...(session.state === 'OPEN' ? { gsi3pk: keys.openSessions(session.orgId), gsi3sk: `${session.createdAt}#${session.id}` } : {}),
    ...session,
  };
}

/** The item whose TTL deletion tells the `session-expiry` consumer that the session may have gone idle. */
function expiryItem(orgId: string, sessionId: string, expiresAt: number): Record<string, unknown> {
  return { ...keys.sessionExpiry(orgId, sessionId), entity: 'sessionExpiry', orgId, sessionId, expiresAt };
}
