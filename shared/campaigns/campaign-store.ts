import { GetCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DomainEvent } from '../events/events.ts';
import type { IdempotencyCompletion } from '../platform/ports.ts';
import type { AttemptOutcome, Campaign, CampaignAttempt, CampaignCall, CampaignContactState, CampaignProgress, CampaignStatus } from './campaign-schemas.ts';
import { callSlotPut, type CallSlotClaim } from '../voice/call-slot-store.ts';
import { conditionalWrite, putAll, sendTransaction, transactionCancellationCodes } from '../platform/store/dynamo.ts';
import { transactWithCompletion } from '../platform/store/idempotency-store.ts';
import { toRecord } from '../platform/store/items.ts';
import { keys } from '../platform/store/keys.ts';
import { outboxPut } from '../events/outbox.ts';
import { queryAll } from '../platform/store/query-all.ts';

export interface StoredCampaign extends Campaign {
  orgId: string;
}

/** One contact of a started campaign: what the dispatcher claims, dials and settles. */
export interface CampaignContactRow extends Omit<CampaignCall, 'nextAttemptAt'> {
  orgId: string;
  campaignId: string;
  /** The contact's attributes at start: the session variables of its calls (over the campaign's). */
  attributes: Record<string, unknown>;
  /** Epoch ms; set while PENDING. */
  nextAttemptAt?: number | undefined;
  /** Epoch ms of the current attempt's claim; set while IN_PROGRESS. */
  claimedAt?: number | undefined;
}

export type ProgressCounter = keyof CampaignProgress;
const counters: readonly ProgressCounter[] = ['total', 'pending', 'inProgress', 'completed', 'failed', 'skippedDnc', 'exhausted'];

/** Campaigns that the dispatcher's tick visits (SCHEDULED, RUNNING): a sparse index over every organization. */
const activeCampaigns = 'CAMPAIGNS#ACTIVE';
const activeStatuses: ReadonlySet<CampaignStatus> = new Set(['SCHEDULED', 'RUNNING']);

const campaignFieldOrder = ['id', 'name', 'agentId', 'phoneNumberId', 'audience', 'schedule', 'maxConcurrentCalls', 'retry', 'ttl', 'sessionVariables', 'status', 'progress'];
const padded = (epochMs: number) => String(epochMs).padStart(15, '0');

/**
 * Why a claim was refused: the contact was claimed, settled or skipped meanwhile; the campaign refuses dials now
 * (not RUNNING, or its cap reached); the plan's call slot was taken meanwhile; or a concurrent transaction on the
 * campaign item (try again later).
 */
export type ClaimRefusal = 'contact' | 'campaign' | 'slot' | 'conflict';

/**
 * Campaigns (`ORG#<org>` / `CAMPAIGN#<id>`, progress counters as attributes) and their contacts (`ORG#<org>#CAMPAIGN#<id>`
 * / `CONTACT#<contactId>`), with two sparse indexes per campaign: contacts due (gsi1, by next attempt time) and calls
 * in progress (gsi2, by claim time). docs/campaigns.md#storage.
 */
export class DynamoCampaignStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.client = client;
    this.tableName = tableName;
  }

  async create(campaign: StoredCampaign, completion?: IdempotencyCompletion): Promise<void> {
    await transactWithCompletion(
      this.client,
      this.tableName,
      [{ Put: { TableName: this.tableName, Item: campaignItem(campaign), ConditionExpression: 'attribute_not_exists(pk)' } }],
      completion,
    );
  }

  async get(orgId: string, campaignId: string): Promise<StoredCampaign | undefined> {
    const result = await this.client.send(new GetCommand({ TableName: this.tableName, Key: keys.campaign(orgId, campaignId), ConsistentRead: true }));
    return result.Item ? toCampaign(result.Item) : undefined;
  }

  async list(orgId: string): Promise<StoredCampaign[]> {
    const items = await queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': keys.orgPartition(orgId), ':prefix': keys.campaignPrefix },
      ConsistentRead: true,
    });
    return items.map(toCampaign);
  }

  /** The campaigns the tick visits, every organization's: `orgId`, `id` and `status` only. */
  async active(): Promise<{ orgId: string; id: string; status: CampaignStatus }[]> {
    const items = await queryAll(this.client, {
      TableName: this.tableName,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :pk',
      ExpressionAttributeValues: { ':pk': activeCampaigns },
      ProjectionExpression: 'orgId, id, #status',
      ExpressionAttributeNames: { '#status': 'status' },
    });
    return items.map((item) => ({ orgId: item.orgId as string, id: item.id as string, status: item.status as CampaignStatus }));
  }

  /**
   * Moves the campaign from one of `from` to `to` with the event, in one transaction; the progress counters are set
   * when given (at start). False when the campaign was not in one of `from`.
   */
  async transition(
    campaign: StoredCampaign,
    from: readonly CampaignStatus[],
    to: CampaignStatus,
    updatedAt: string,
    event: DomainEvent,
    extra: { startedAt?: string; completedAt?: string; progress?: CampaignProgress } = {},
  ): Promise<boolean> {
    const sets = ['#status = :to', 'updatedAt = :updatedAt'];
    const values: Record<string, unknown> = { ':to': to, ':updatedAt': updatedAt, ...Object.fromEntries(from.map((status, index) => [`:from${index}`, status])) };
    if (extra.startedAt) (sets.push('startedAt = :startedAt'), (values[':startedAt'] = extra.startedAt));
    if (extra.completedAt) (sets.push('completedAt = :completedAt'), (values[':completedAt'] = extra.completedAt));
    const names: Record<string, string> = { '#status': 'status' };
    if (extra.progress) {
      for (const counter of counters) {
        sets.push(`#${counter} = :${counter}`);
        names[`#${counter}`] = counter;
        values[`:${counter}`] = extra.progress[counter];
      }
    }
    let update = `SET ${sets.join(', ')}`;
    if (activeStatuses.has(to)) {
      update += ', gsi1pk = :active, gsi1sk = :activeKey';
      values[':active'] = activeCampaigns;
      values[':activeKey'] = `${campaign.orgId}#${campaign.id}`;
    } else update += ' REMOVE gsi1pk, gsi1sk';
    try {
      await sendTransaction(this.client, [
        {
          Update: {
            TableName: this.tableName,
            Key: keys.campaign(campaign.orgId, campaign.id),
            UpdateExpression: update,
            ConditionExpression: `#status IN (${from.map((_, index) => `:from${index}`).join(', ')})`,
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: values,
          },
        },
        outboxPut(this.tableName, keys.campaignPartition(campaign.orgId, campaign.id), event),
      ]);
      return true;
    } catch (error) {
      if (transactionCancellationCodes(error)?.[0] === 'ConditionalCheckFailed') return false;
      throw error;
    }
  }

  /** Writes the contacts of a campaign being started (25 per request); a row written twice is the same row. */
  async putContacts(rows: readonly CampaignContactRow[]): Promise<void> {
    await putAll(this.client, this.tableName, rows.map(contactItem));
  }

  /** PENDING contacts due by `nowMs`, earliest first (the index is eventually consistent: claims re-check). */
  async dueContacts(orgId: string, campaignId: string, nowMs: number, limit: number): Promise<CampaignContactRow[]> {
    const result = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :pk AND gsi1sk <= :now',
        ExpressionAttributeValues: { ':pk': keys.campaignDue(orgId, campaignId), ':now': `${padded(nowMs)}#~` },
        Limit: limit,
      }),
    );
    return (result.Items ?? []).map(toContactRow);
  }

  /** Contacts IN_PROGRESS claimed before `claimedBeforeMs`: the ones whose end may have been missed. */
  async staleCalls(orgId: string, campaignId: string, claimedBeforeMs: number): Promise<CampaignContactRow[]> {
    const items = await queryAll(this.client, {
      TableName: this.tableName,
      IndexName: 'gsi2',
      KeyConditionExpression: 'gsi2pk = :pk AND gsi2sk < :before',
      ExpressionAttributeValues: { ':pk': keys.campaignLive(orgId, campaignId), ':before': padded(claimedBeforeMs) },
    });
    return items.map(toContactRow);
  }

  async getContact(orgId: string, campaignId: string, contactId: string): Promise<CampaignContactRow | undefined> {
    const result = await this.client.send(new GetCommand({ TableName: this.tableName, Key: keys.campaignContact(orgId, campaignId, contactId), ConsistentRead: true }));
    return result.Item ? toContactRow(result.Item) : undefined;
  }

  /** A page of the campaign's contacts in contact-id order, after `after` (a contact id). */
  async listCalls(orgId: string, campaignId: string, limit: number, after: string | undefined, state: CampaignContactState | undefined) {
    const items: Record<string, unknown>[] = [];
    let startKey: Record<string, unknown> | undefined = after ? keys.campaignContact(orgId, campaignId, after) : undefined;
    // A state filter may leave pages short: read on until the page is full or the contacts end.
    do {
      const result = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
          ExpressionAttributeValues: { ':pk': keys.campaignPartition(orgId, campaignId), ':prefix': keys.campaignContactPrefix, ...(state ? { ':state': state } : {}) },
          ...(state ? { FilterExpression: '#state = :state', ExpressionAttributeNames: { '#state': 'state' } } : {}),
          ExclusiveStartKey: startKey,
          Limit: limit + 1 - items.length,
          ConsistentRead: true,
        }),
      );
      items.push(...(result.Items ?? []));
      startKey = result.LastEvaluatedKey;
    } while (startKey && items.length <= limit);
    const page = items.slice(0, limit).map(toContactRow);
    const more = items.length > limit || startKey !== undefined;
    return { rows: page, after: more && page.length > 0 ? page.at(-1)?.contactId : undefined };
  }

  /**
   * Claims attempt `attempt` of a contact, before the carrier is asked for anything: the contact must still be
   * PENDING at the previous attempt, the campaign RUNNING below its cap, and the plan's call slot (when it caps
   * calls) free, all in one transaction. Two or three item writes; the same claim can succeed once only.
   */
  async claim(row: CampaignContactRow, attempt: CampaignAttempt, maxConcurrentCalls: number, callSlot: CallSlotClaim | undefined): Promise<ClaimRefusal | undefined> {
    const claimedAt = Date.parse(attempt.startedAt);
    try {
      await sendTransaction(this.client, [
        {
          Update: {
            TableName: this.tableName,
            Key: keys.campaignContact(row.orgId, row.campaignId, row.contactId),
            UpdateExpression:
              'SET #state = :live, attempts = :attempt, sessions = list_append(sessions, :session), claimedAt = :claimedAt, gsi2pk = :live_pk, gsi2sk = :live_sk REMOVE nextAttemptAt, gsi1pk, gsi1sk',
            ConditionExpression: '#state = :pending AND attempts = :previous',
            ExpressionAttributeNames: { '#state': 'state' },
            ExpressionAttributeValues: {
              ':live': 'IN_PROGRESS',
              ':pending': 'PENDING',
              ':attempt': attempt.attempt,
              ':previous': attempt.attempt - 1,
              ':session': [attempt],
              ':claimedAt': claimedAt,
              ':live_pk': keys.campaignLive(row.orgId, row.campaignId),
              ':live_sk': `${padded(claimedAt)}#${row.contactId}`,
            },
          },
        },
        {
          Update: {
            TableName: this.tableName,
            Key: keys.campaign(row.orgId, row.campaignId),
            UpdateExpression: 'ADD inProgress :one, pending :minusOne',
            ConditionExpression: '#status = :running AND inProgress < :cap',
            ExpressionAttributeNames: { '#status': 'status' },
            ExpressionAttributeValues: { ':one': 1, ':minusOne': -1, ':running': 'RUNNING', ':cap': maxConcurrentCalls },
          },
        },
        ...(callSlot ? [{ Put: callSlotPut(this.tableName, callSlot) }] : []),
      ]);
      return undefined;
    } catch (error) {
      const codes = transactionCancellationCodes(error);
      if (codes?.[0] === 'ConditionalCheckFailed') return 'contact';
      if (codes?.[1] === 'ConditionalCheckFailed') return 'campaign';
      if (codes?.[2] === 'ConditionalCheckFailed') return 'slot';
      // Another claim or settle wrote the campaign item at the same moment: nothing was claimed; the contact stays due.
      if (codes?.includes('TransactionConflict')) return 'conflict';
      throw error;
    }
  }

  /**
   * Records the outcome of attempt `attempt` once (the contact must still be IN_PROGRESS at that attempt), moves
   * the contact on (`PENDING` again with its next attempt time, or a final state), and frees the call slot: two
   * item writes. False when it was settled already.
   */
  async settle(row: Pick<CampaignContactRow, 'orgId' | 'campaignId' | 'contactId'>, attempt: number, outcome: AttemptOutcome, next: { state: CampaignContactState; nextAttemptAt?: number }): Promise<boolean> {
    const counter = counterOf(next.state);
    const retry = next.nextAttemptAt !== undefined;
    try {
      await sendTransaction(this.client, [
        {
          Update: {
            TableName: this.tableName,
            Key: keys.campaignContact(row.orgId, row.campaignId, row.contactId),
            UpdateExpression: `SET #state = :next, lastOutcome = :outcome, sessions[${attempt - 1}].outcome = :outcome${
              retry ? ', nextAttemptAt = :at, gsi1pk = :due_pk, gsi1sk = :due_sk' : ''
            } REMOVE claimedAt, gsi2pk, gsi2sk`,
            ConditionExpression: '#state = :live AND attempts = :attempt',
            ExpressionAttributeNames: { '#state': 'state' },
            ExpressionAttributeValues: {
              ':next': next.state,
              ':outcome': outcome,
              ':live': 'IN_PROGRESS',
              ':attempt': attempt,
              ...(retry
                ? { ':at': next.nextAttemptAt, ':due_pk': keys.campaignDue(row.orgId, row.campaignId), ':due_sk': `${padded(next.nextAttemptAt as number)}#${row.contactId}` }
                : {}),
            },
          },
        },
        {
          Update: {
            TableName: this.tableName,
            Key: keys.campaign(row.orgId, row.campaignId),
            UpdateExpression: `ADD inProgress :minusOne, ${counter} :one`,
            ExpressionAttributeValues: { ':minusOne': -1, ':one': 1 },
          },
        },
      ]);
      return true;
    } catch (error) {
      if (transactionCancellationCodes(error)?.[0] === 'ConditionalCheckFailed') return false;
      throw error;
    }
  }

  /**
   * Gives back attempt `attempt`'s claim when its dial never happened: the contact is PENDING again at the previous
   * attempt, due at `dueAt`, as if it had not been claimed (the attempt is not spent, whatever the retry policy).
   * In the same transaction, its session (`sessionId`) must still not exist: a dispatcher that dialled meanwhile
   * keeps its claim. Two item writes and a check; false when the claim moved on or the session exists.
   */
  async unclaim(row: Pick<CampaignContactRow, 'orgId' | 'campaignId' | 'contactId'>, attempt: number, sessionId: string, dueAt: number): Promise<boolean> {
    try {
      await sendTransaction(this.client, [
        {
          Update: {
            TableName: this.tableName,
            Key: keys.campaignContact(row.orgId, row.campaignId, row.contactId),
            UpdateExpression: `SET #state = :pending, attempts = :previous, nextAttemptAt = :at, gsi1pk = :due_pk, gsi1sk = :due_sk REMOVE sessions[${attempt - 1}], claimedAt, gsi2pk, gsi2sk`,
            ConditionExpression: '#state = :live AND attempts = :attempt',
            ExpressionAttributeNames: { '#state': 'state' },
            ExpressionAttributeValues: {
              ':pending': 'PENDING',
              ':live': 'IN_PROGRESS',
              ':attempt': attempt,
              ':previous': attempt - 1,
              ':at': dueAt,
              ':due_pk': keys.campaignDue(row.orgId, row.campaignId),
              ':due_sk': `${padded(dueAt)}#${row.contactId}`,
            },
          },
        },
        {
          Update: {
            TableName: this.tableName,
            Key: keys.campaign(row.orgId, row.campaignId),
            UpdateExpression: 'ADD inProgress :minusOne, pending :one',
            ExpressionAttributeValues: { ':minusOne': -1, ':one': 1 },
          },
        },
        { ConditionCheck: { TableName: this.tableName, Key: keys.session(row.orgId, sessionId), ConditionExpression: 'attribute_not_exists(pk)' } },
      ]);
      return true;
    } catch (error) {
      const codes = transactionCancellationCodes(error);
      if (codes?.[0] === 'ConditionalCheckFailed' || codes?.[2] === 'ConditionalCheckFailed') return false;
      throw error;
    }
  }

  /** A PENDING contact leaves without a dial (do-not-call): two item writes. */
  async skip(row: CampaignContactRow, state: 'SKIPPED_DNC'): Promise<boolean> {
    try {
      await sendTransaction(this.client, [
        {
          Update: {
            TableName: this.tableName,
            Key: keys.campaignContact(row.orgId, row.campaignId, row.contactId),
            UpdateExpression: 'SET #state = :skipped REMOVE nextAttemptAt, gsi1pk, gsi1sk',
            ConditionExpression: '#state = :pending AND attempts = :attempts',
            ExpressionAttributeNames: { '#state': 'state' },
            ExpressionAttributeValues: { ':skipped': state, ':pending': 'PENDING', ':attempts': row.attempts },
          },
        },
        {
          Update: {
            TableName: this.tableName,
            Key: keys.campaign(row.orgId, row.campaignId),
            UpdateExpression: `ADD pending :minusOne, ${counterOf(state)} :one`,
            ExpressionAttributeValues: { ':minusOne': -1, ':one': 1 },
          },
        },
      ]);
      return true;
    } catch (error) {
      if (transactionCancellationCodes(error)?.[0] === 'ConditionalCheckFailed') return false;
      throw error;
    }
  }

  /** A due contact outside its window waits for the window's opening: one write. */
  async postpone(row: CampaignContactRow, nextAttemptAt: number): Promise<void> {
    await conditionalWrite(
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: keys.campaignContact(row.orgId, row.campaignId, row.contactId),
          UpdateExpression: 'SET nextAttemptAt = :at, gsi1sk = :due_sk',
          ConditionExpression: '#state = :pending AND attempts = :attempts',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: { ':at': nextAttemptAt, ':due_sk': `${padded(nextAttemptAt)}#${row.contactId}`, ':pending': 'PENDING', ':attempts': row.attempts },
        }),
      ),
    );
  }
}

export const counterOf = (state: CampaignContactState): ProgressCounter =>
  ({ PENDING: 'pending', IN_PROGRESS: 'inProgress', COMPLETED: 'completed', FAILED: 'failed', EXHAUSTED: 'exhausted', SKIPPED_DNC: 'skippedDnc' })[state] as ProgressCounter;

function campaignItem(campaign: StoredCampaign): Record<string, unknown> {
  const { progress, ...rest } = campaign;
  return { ...keys.campaign(campaign.orgId, campaign.id), entity: 'campaign', ...rest, ...progress };
}

function toCampaign(item: Record<string, unknown>): StoredCampaign {
  const progress = Object.fromEntries(counters.map((counter) => [counter, Number(item[counter] ?? 0)])) as CampaignProgress;
  const stripped = { ...item };
  for (const counter of counters) delete stripped[counter];
  const orgId = item.orgId as string;
  return { ...toRecord<Campaign>({ ...stripped, progress }, campaignFieldOrder), orgId };
}

function contactItem(row: CampaignContactRow): Record<string, unknown> {
  return {
    ...keys.campaignContact(row.orgId, row.campaignId, row.contactId),
    entity: 'campaignContact',
    ...row,
    ...(row.state === 'PENDING' && row.nextAttemptAt !== undefined
      ? { gsi1pk: keys.campaignDue(row.orgId, row.campaignId), gsi1sk: `${padded(row.nextAttemptAt)}#${row.contactId}` }
      : {}),
  };
}

function toContactRow(item: Record<string, unknown>): CampaignContactRow {
  return toRecord<CampaignContactRow>(item);
}
