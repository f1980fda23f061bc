import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TransactWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { addCounts } from './usage.ts';
import { keys } from '../platform/store/keys.ts';

type TransactItem = NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']>[number];

/** Numbers to add, by attribute name. */
export type Counts = Record<string, number>;

/**
 * One stream record to count: a message of a session (by its sequence number) or a once-per-session fact (a
 * named flag), and what it adds to which counter items.
 */
export interface CountedRecord {
  sessionId: string;
  seq?: number | undefined;
  /** A fact counted once per session (e.g. `voice`, `created`, `ended`). */
  once?: string | undefined;
  increments: { key: { pk: string; sk: string }; counts: Counts }[];
}

/** A session's records of one batch that are still to be counted. */
interface SessionBatch {
  sessionId: string;
  messages: CountedRecord[];
  facts: CountedRecord[];
}

const keyAttributes = new Set(['pk', 'sk', 'entity']);

/** The counts a counter item holds: its numeric attributes. */
export function countsOfItem(item: Record<string, unknown>): Counts {
  return Object.fromEntries(Object.entries(item).filter(([name, value]) => !keyAttributes.has(name) && typeof value === 'number')) as Counts;
}

/** A message before the ones handed over is not counted yet: they are counted once it arrives. */
export class CountingGapError extends Error {}

const maxTransactionItems = 100;
const maxAttempts = 6;

/**
 * Counts stream records exactly once: each session has a marker item (`markerSk` in its partition) holding the
 * last message sequence number counted and the once-per-session facts counted. An organization's records of a
 * batch are counted in one transaction (per 100 items) that moves the markers forward, conditioned on where they
 * were, and ADDs to the counter items; a replayed record finds its marker already past it and adds nothing.
 * Messages must arrive in sequence order per session (as a stream delivers them): a hole is refused.
 */
export class ExactlyOnceCounter {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly markerSk: string;
  private readonly counterEntity: string;

  constructor(client: DynamoDBDocumentClient, tableName: string, options: { markerSk: string; counterEntity: string }) {
    this.client = client;
    this.tableName = tableName;
    this.markerSk = options.markerSk;
    this.counterEntity = options.counterEntity;
  }

  /** True when anything was added (false when every record had been counted before). */
  async record(orgId: string, records: readonly CountedRecord[]): Promise<boolean> {
    let sessions = batchesBySession(records);
    let counted = false;
    while (sessions.length > 0) {
      const chunk = this.chunkForTransaction(sessions);
      sessions = sessions.slice(chunk.length);
      counted = (await this.recordChunk(orgId, chunk)) || counted;
    }
    return counted;
  }

  private async recordChunk(orgId: string, chunk: SessionBatch[]): Promise<boolean> {
    let pending = chunk;
    for (let attempt = 1; ; attempt += 1) {
      pending = pending.filter((batch) => batch.messages.length > 0 || batch.facts.length > 0);
      if (pending.length === 0) return false;
      try {
        await this.client.send(new TransactWriteCommand({ TransactItems: this.transaction(orgId, pending) }));
        return true;
      } catch (error) {
        if (!(error instanceof TransactionCanceledException) || attempt >= maxAttempts) throw error;
        const reasons = error.CancellationReasons ?? [];
        // Markers already past some records (a replay): drop those and count the rest.
        pending = pending.map((batch, index) => {
          const reason = reasons[index];
          if (reason?.Code !== 'ConditionalCheckFailed') return batch;
          return uncounted(batch, reason.Item ? unmarshall(reason.Item as Record<string, AttributeValue>) : {});
        });
        // Another consumer counting the same organization at the same moment: try again shortly.
        if (reasons.some((reason) => reason.Code === 'TransactionConflict')) await new Promise((resolve) => setTimeout(resolve, 20 * attempt + Math.random() * 30));
      }
    }
  }

  private transaction(orgId: string, batches: SessionBatch[]): TransactItem[] {
    const markers = batches.map((batch) => this.markerUpdate(orgId, batch));
    const totals = new Map<string, { key: { pk: string; sk: string }; counts: Counts }>();
    for (const record of batches.flatMap((batch) => [...batch.messages, ...batch.facts])) {
      for (const increment of record.increments) {
        const id = `${increment.key.pk}\n${increment.key.sk}`;
        const total = totals.get(id) ?? { key: increment.key, counts: {} };
        addCounts(total.counts, increment.counts);
        totals.set(id, total);
      }
    }
    const counters = [...totals.values()]
      .filter(({ counts }) => Object.keys(counts).length > 0)
      .map(({ key, counts }) => {
        const entries = Object.entries(counts);
        return {
          Update: {
            TableName: this.tableName,
            Key: key,
            UpdateExpression: `SET entity = :entity ADD ${entries.map((_, index) => `#c${index} :c${index}`).join(', ')}`,
            ExpressionAttributeNames: Object.fromEntries(entries.map(([name], index) => [`#c${index}`, name])),
            ExpressionAttributeValues: { ':entity': this.counterEntity, ...Object.fromEntries(entries.map(([, value], index) => [`:c${index}`, value])) },
          },
        };
      });
    return [...markers, ...counters];
  }

  private markerUpdate(orgId: string, batch: SessionBatch): TransactItem {
    const sets = ['entity = :entity'];
    const conditions: string[] = [];
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = { ':entity': 'countMarker' };
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
    batch.facts.forEach((fact, index) => {
      names[`#f${index}`] = `once:${fact.once}`;
      sets.push(`#f${index} = :counted`);
      conditions.push(`attribute_not_exists(#f${index})`);
      values[':counted'] = true;
    });
    return {
      Update: {
        TableName: this.tableName,
        Key: { pk: keys.sessionPartition(orgId, batch.sessionId), sk: this.markerSk },
        UpdateExpression: `SET ${sets.join(', ')}`,
        ConditionExpression: conditions.join(' AND '),
        ...(Object.keys(names).length > 0 ? { ExpressionAttributeNames: names } : {}),
        ExpressionAttributeValues: values,
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    };
  }

  /** As many sessions as fit in one transaction beside the counter items they add to. */
  private chunkForTransaction(sessions: SessionBatch[]): SessionBatch[] {
    const counters = new Set<string>();
    let taken = 0;
    for (const batch of sessions) {
      const own = new Set(batch.messages.concat(batch.facts).flatMap((record) => record.increments.map((increment) => `${increment.key.pk}\n${increment.key.sk}`)));
      const added = [...own].filter((id) => !counters.has(id));
      if (taken > 0 && taken + 1 + counters.size + added.length > maxTransactionItems) break;
      for (const id of added) counters.add(id);
      taken += 1;
    }
    return sessions.slice(0, taken);
  }
}

function batchesBySession(records: readonly CountedRecord[]): SessionBatch[] {
  const bySession = new Map<string, SessionBatch>();
  for (const record of records) {
    const batch = bySession.get(record.sessionId) ?? { sessionId: record.sessionId, messages: [], facts: [] };
    if (record.seq !== undefined) {
      if (!batch.messages.some((message) => message.seq === record.seq)) batch.messages.push(record);
    } else if (record.once && !batch.facts.some((fact) => fact.once === record.once)) batch.facts.push(record);
    bySession.set(record.sessionId, batch);
  }
  const batches = [...bySession.values()];
  for (const batch of batches) {
    batch.messages.sort((a, b) => (a.seq as number) - (b.seq as number));
    if (batch.messages.some((message, index) => index > 0 && message.seq !== (batch.messages[index - 1]?.seq as number) + 1)) {
      throw new CountingGapError(`session ${batch.sessionId}: the batch's messages are not consecutive`);
    }
  }
  return batches;
}

/** The part of a batch its marker has not counted yet; a hole before it means a record has not arrived yet. */
function uncounted(batch: SessionBatch, marker: Record<string, unknown>): SessionBatch {
  const lastSeq = typeof marker.lastSeq === 'number' ? marker.lastSeq : 0;
  const messages = batch.messages.filter((message) => (message.seq as number) > lastSeq);
  const first = messages[0]?.seq;
  if (first !== undefined && first !== lastSeq + 1) {
    throw new CountingGapError(`session ${batch.sessionId}: message ${lastSeq + 1} is not counted yet, ${first} arrived`);
  }
  return { sessionId: batch.sessionId, messages, facts: batch.facts.filter((fact) => marker[`once:${fact.once}`] !== true) };
}
