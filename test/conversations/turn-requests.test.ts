/**
 * What a chat turn costs DynamoDB, counted (issue 26): the requests and write units of its synchronous path, and
 * those of the work it sets off (the table stream's consumers, the bus, the queues and their functions) until the
 * runtime is idle again, through the cost accounting `npm run bench` uses (COST_ACCOUNTING_FILE, which asks DynamoDB
 * for `ConsumedCapacity` and counts a transaction's units as AWS bills them). Counts, never times.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCostRecords } from '../../bench/cost-model.ts';
import { tableStreamConsumers, webhookDeliveryQueue } from '../../functions/consumers.ts';
import { costAccountingVariable, transactionsAccounted, type CostRecord } from '../../shared/platform/cost-accounting.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';

const directory = mkdtempSync(join(tmpdir(), 'turn-requests-'));
const file = join(directory, 'requests.jsonl');
let api: TestApi;

beforeAll(async () => {
  writeFileSync(file, '');
  // The quota check's read, cached per process, is not a turn's: it is made once per QUOTA_CACHE_SECONDS.
  api = await startApi({ [costAccountingVariable]: file, QUOTA_CACHE_SECONDS: '300' }, { streamPoller: true, queues: true });
});
afterAll(async () => {
  await api.close();
  rmSync(directory, { recursive: true, force: true });
});

const records = (): CostRecord[] => readCostRecords(file).records;

const streamConsumers = new Set(tableStreamConsumers.map((consumer) => consumer.name));
/** The last consumer the stream poller hands a batch of messages to: its invocation ends the batch's work. */
const lastMessageConsumer = tableStreamConsumers.filter((consumer) => consumer.select.entities.includes('message')).at(-1)?.name;

/**
 * The records from `from` on, once the work `events` domain events set off has run: the relay put them all on the
 * bus and the last consumer of the stream handled the batch holding the last of them after that; the delivery
 * queue's poller received them all and the delivery function handled each batch it received; and the
 * transactions made meanwhile are sized.
 */
async function settled(from: number, events: number): Promise<CostRecord[]> {
  await eventually(
    () => records().slice(from),
    (found) => {
      let published = 0;
      let streamDone = false;
      for (const record of found) {
        if (record.kind === 'eventbridge') published += record.entryBytes.length;
        if (published >= events && record.kind === 'invocation' && record.function === lastMessageConsumer) streamDone = true;
      }
      const receives = found.filter((record) => record.kind === 'sqs' && record.caller === 'event-source-mapping' && record.operation === 'ReceiveMessage' && record.queue === webhookDeliveryQueue.name);
      const received = receives.reduce((total, record) => total + (record.kind === 'sqs' ? record.entryBytes.length : 0), 0);
      const deliveries = found.filter((record) => record.kind === 'invocation' && record.function === 'webhook-delivery').length;
      return streamDone && received >= events && deliveries >= receives.length;
    },
  );
  await transactionsAccounted();
  return records().slice(from);
}

interface Counted {
  requests: number;
  writeUnits: number;
}

/** The DynamoDB requests among `found` made by the functions `made` names, and the units they wrote. */
function counted(found: readonly CostRecord[], made: (functionName: string) => boolean): Counted {
  const requests = found.filter((record) => record.kind === 'dynamodb' && made(record.function ?? ''));
  return { requests: requests.length, writeUnits: requests.reduce((total, record) => total + (record.kind === 'dynamodb' ? record.writeUnits : 0), 0) };
}

/** The user's message.added and session.message.created, the reply's message.added. */
const perTurnEvents = 3;

/** The records of one turn of the session, once the work it set off has run. */
async function settledTurn(key: string, sessionId: string): Promise<CostRecord[]> {
  const from = records().length;
  const sent = await api.request('POST', `/v1/chat/chat/sessions/${sessionId}/messages`, { key, body: { content: 'Hello there', stream: false } });
  expect(sent.status).toBe(200);
  return settled(from, perTurnEvents);
}

describe('a chat turn', () => {
  it('makes three DynamoDB requests writing 12 units, and its stream consumers one write each per batch', async () => {
    // Prepare: a session, and one turn that fills the caches a session's later turns find (its agent, its history,
    // the session's agent in the analytics consumer, the usage roll-up's mark).
    const { key } = await api.newOrg();
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Counted', description: 'Counted', role: 'Answer briefly.' } });
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
    await settled(0, 1);
    await settledTurn(key, session.body.id);

    // Act
    const turn = await settledTurn(key, session.body.id);

    // Assess: the credential check, the turn's reads in one batch, its messages in one transaction (the session
    // item with its three index entries, 8 units; two messages, 4; the expiry item no longer moves with each turn).
    expect(counted(turn, (name) => name === 'chat-messages')).toEqual({ requests: 3, writeUnits: 12 });
    // Each consumer of the stream writes once for the turn's records: the event log its three entries in one
    // BatchWriteItem; usage and analytics one transaction each (the session's marker and the counters it adds to),
    // with no read (the session's agent is known from its first turn) and no roll-up mark (this process made it).
    const invoked = (name: string) => turn.filter((record) => record.kind === 'invocation' && record.function === name).length;
    for (const name of ['event-log', 'usage-meter', 'analytics-aggregate']) expect(invoked(name), name).toBe(1);
    expect(counted(turn, (name) => name === 'event-log')).toEqual({ requests: 1, writeUnits: 3 });
    expect(counted(turn, (name) => name === 'usage-meter')).toEqual({ requests: 1, writeUnits: 8 });
    expect(counted(turn, (name) => name === 'analytics-aggregate')).toEqual({ requests: 1, writeUnits: 6 });
    expect(counted(turn, (name) => streamConsumers.has(name))).toEqual({ requests: 3, writeUnits: 17 });
    // Webhook delivery (no endpoint subscribed) reads the organization's endpoints once per event type of each batch
    // it is handed: at most once per event.
    const delivery = counted(turn, (name) => name === 'webhook-delivery');
    expect(delivery.writeUnits).toBe(0);
    expect(delivery.requests).toBeLessThanOrEqual(perTurnEvents);
  });

  it('makes the same three requests in a session bound to a version of a MANUAL agent: the version is read in the same batch', async () => {
    // Prepare: a MANUAL agent whose draft (version 2) is not the published version (1) the session binds to
    const { key } = await api.newOrg();
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Bound', description: 'Bound', role: 'Answer briefly.', publishMode: 'MANUAL' } });
    await api.request('PATCH', `/v2/chat/agents/${agent.body.id}`, { key, body: { role: 'Answer at length.' } });
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
    expect(session.body.agentVersion).toBe(1);
    await settledTurn(key, session.body.id);

    // Act
    const turn = await settledTurn(key, session.body.id);

    // Assess
    expect(counted(turn, (name) => name === 'chat-messages')).toEqual({ requests: 3, writeUnits: 12 });
  });
});
