/**
 * The bench's cost accounting (docs/deploy.md#cost): with COST_ACCOUNTING_FILE set, the requests the platform's
 * clients make are written down with what AWS bills them by, DynamoDB's units as AWS counts them (DynamoDB Local's
 * own figure for transactions is too low), and bench/cost-model.ts turns the records into units and dollars.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BatchWriteCommand, GetCommand, PutCommand, QueryCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { atLeastZero, costPer, dollarsOf, listPrices, readCostRecords, usageDifference, usageOf } from '../../bench/cost-model.ts';
import { accountInvocation, costAccountingVariable, type CostRecord } from '../../shared/platform/cost-accounting.ts';
import { createDocumentClient } from '../../shared/platform/store/dynamo.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { Receiver } from '../support/webhook-receiver.ts';
import { testTableName } from '../support/database.ts';

const directory = mkdtempSync(join(tmpdir(), 'cost-accounting-'));
const file = join(directory, 'requests.jsonl');
const tableName = testTableName();
let api: TestApi;
const receiver = new Receiver();
let receiverUrl: string;

beforeAll(async () => {
  writeFileSync(file, '');
  receiverUrl = await receiver.start();
  api = await startApi({ [costAccountingVariable]: file }, { streamPoller: true, queues: true });
});
afterAll(async () => {
  await api.close();
  await receiver.close();
  rmSync(directory, { recursive: true, force: true });
});

const records = (): CostRecord[] => readCostRecords(file).records;

/** The records written while `work` runs (and the transactions it left to size), made in an invocation of `name`. */
async function recordedBy(name: string, work: () => Promise<unknown>, expected: number): Promise<CostRecord[]> {
  const before = records().length;
  await accountInvocation(name, 'queue', async () => void (await work()));
  const mine = () => records().slice(before).filter((record) => record.function === name && record.kind === 'dynamodb');
  return eventually(mine, (found) => found.length >= expected);
}

describe('DynamoDB requests', () => {
  const client = () => createDocumentClient({ AWS_REGION: 'us-east-1', DYNAMODB_ENDPOINT: inject('dynamodbEndpoint') });
  const pk = `COST#${crypto.randomUUID()}`;

  it('are asked for their consumed capacity, and record it under the function that made them', async () => {
    // Act
    const found = await recordedBy(
      'units-test',
      async () => {
        const documents = client();
        await documents.send(new PutCommand({ TableName: tableName, Item: { pk, sk: 'big', text: 'x'.repeat(1500) } }));
        await documents.send(new GetCommand({ TableName: tableName, Key: { pk, sk: 'big' } }));
        await documents.send(new GetCommand({ TableName: tableName, Key: { pk, sk: 'big' }, ConsistentRead: true }));
        await documents.send(new QueryCommand({ TableName: tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk } }));
        await documents.send(new QueryCommand({ TableName: tableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': `${pk}-none` }, ConsistentRead: true }));
        await documents.send(new BatchWriteCommand({ RequestItems: { [tableName]: [1, 2].map((index) => ({ PutRequest: { Item: { pk, sk: `batch${index}` } } })) } }));
        await documents.send(new PutCommand({ TableName: tableName, Item: { pk, sk: 'big' }, ConditionExpression: 'attribute_not_exists(pk)' })).catch(() => undefined);
      },
      7,
    );

    // Assess: 1.5 KB written is 2 units; read eventually, a half unit; strongly, one; a query finding nothing, the least read.
    expect(found.map((record) => record.kind === 'dynamodb' && [record.operation, record.readUnits, record.writeUnits])).toEqual([
      ['PutItem', 0, 2],
      ['GetItem', 0.5, 0],
      ['GetItem', 1, 0],
      ['Query', 0.5, 0],
      ['Query', 1, 0],
      ['BatchWriteItem', 0, 2],
      // Refused by its condition: AWS bills the write, DynamoDB reports nothing.
      ['PutItem', 0, 1],
    ]);
  });

  it('count a transaction as AWS bills it: 2 units per KB of each item and of each index entry, not DynamoDB Local\'s 4', async () => {
    // Prepare: a 2.5 KB item to update.
    const documents = client();
    await documents.send(new PutCommand({ TableName: tableName, Item: { pk, sk: 'session', text: 'x'.repeat(2500) } }));

    // Act
    const found = await recordedBy(
      'transactions-test',
      async () => {
        await documents.send(new TransactWriteCommand({ TransactItems: [1, 2, 3, 4, 5].map((index) => ({ Put: { TableName: tableName, Item: { pk, sk: `message${index}` } } })) }));
        await documents.send(
          new TransactWriteCommand({
            TransactItems: [
              { Update: { TableName: tableName, Key: { pk, sk: 'session' }, UpdateExpression: 'SET seen = :seen', ExpressionAttributeValues: { ':seen': 1 } } },
              { Put: { TableName: tableName, Item: { pk, sk: 'indexed', gsi1pk: 'COST', gsi1sk: pk } } },
            ],
          }),
        );
      },
      2,
    );

    // Assess: five small items, 10 units (DynamoDB Local says 4); a 2.5 KB update (6) and a put with one index entry (4).
    expect(found.map((record) => record.kind === 'dynamodb' && [record.operation, record.writeUnits])).toEqual([
      ['TransactWriteItems', 10],
      ['TransactWriteItems', 10],
    ]);
  });
});

describe('a chat turn', () => {
  it('is counted from the requests it sets off: the turn, the stream consumers, the bus, the queue and the delivery', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const hook = await api.request('POST', '/v1/chat/webhooks', { key, body: { url: `${receiverUrl}/ok-cost`, events: ['message.added'] } });
    receiver.secrets.set('/ok-cost', [hook.body.secret]);
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Cost', description: 'Cost', role: 'Cost' } });
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
    const before = records().length;

    // Act
    const turn = await api.request('POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, { key, body: { content: 'Hello there' } });

    // Assess
    expect(turn.status).toBe(200);
    const delivered = await eventually(
      () => receiver.receipts.filter((receipt) => receipt.path === '/ok-cost'),
      (receipts) => receipts.length === 2,
    );
    expect(delivered).toHaveLength(2);
    const of = (predicate: (record: CostRecord) => boolean) => records().slice(before).filter(predicate);
    const deliveries = await eventually(
      () => of((record) => record.kind === 'invocation' && record.function === 'webhook-delivery'),
      (found) => found.length >= 1,
    );
    expect(deliveries.length).toBeGreaterThanOrEqual(1);
    const turnRecords = records().slice(before);
    const invoked = new Set(turnRecords.flatMap((record) => (record.kind === 'invocation' ? [`${record.function} ${record.trigger}`] : [])));
    expect([...invoked]).toEqual(expect.arrayContaining(['chat-messages rest-api', 'event-relay table-stream', 'event-log table-stream', 'webhook-delivery queue']));
    const turnWrites = turnRecords.filter((record) => record.kind === 'dynamodb' && record.function === 'chat-messages' && record.writeUnits > 0);
    expect(turnWrites.length).toBeGreaterThan(0);
    // Two message.added and the user's session.message.created, put on the bus by the relay.
    const published = turnRecords.flatMap((record) => (record.kind === 'eventbridge' && record.function === 'event-relay' ? record.entryBytes : []));
    expect(published.length).toBeGreaterThanOrEqual(3);
    const ruleSends = turnRecords.filter((record) => record.kind === 'sqs' && record.caller === 'event-rule');
    expect(ruleSends.flatMap((record) => (record.kind === 'sqs' ? record.entryBytes : []))).toHaveLength(published.length);
    const usage = usageOf(turnRecords, () => 1024);
    expect(usage.lambda.byFunction['chat-messages']?.invocations).toBe(1);
    expect(usage.apiGateway.restApiRequests).toBe(1);
    expect(usage.eventBridge.events).toBe(published.length);
    expect(dollarsOf(usage).total).toBeGreaterThan(0);
  });
});

describe('bench/cost-model.ts', () => {
  it('bills SQS per 64 KB of a request, and a rule\'s SQS target per event', () => {
    // Act
    const usage = usageOf(
      [
        { kind: 'sqs', operation: 'SendMessageBatch', queue: 'q', caller: 'function', entryBytes: [40_000, 40_000] },
        { kind: 'sqs', operation: 'SendMessageBatch', queue: 'q', caller: 'event-rule', entryBytes: [100, 100, 100] },
        { kind: 'sqs', operation: 'DeleteMessageBatch', queue: 'q.fifo', caller: 'event-source-mapping', entryBytes: [] },
      ],
      () => 1024,
    );

    // Assess
    expect(usage.sqs).toEqual({ requests: 2 + 3, fifoRequests: 1, byQueue: { q: 5, 'q.fifo': 1 } });
  });

  it('bills Lambda by the millisecond rounded up at each function\'s memory, and counts the front door of each HTTP invocation', () => {
    // Prepare
    const memoryMb: Record<string, number> = { 'chat-messages': 1024, agents: 512, 'event-relay': 256 };

    // Act
    const usage = usageOf(
      [
        { kind: 'invocation', function: 'chat-messages', trigger: 'rest-api', durationMs: 99.2 },
        { kind: 'invocation', function: 'agents', trigger: 'http-api', durationMs: 10 },
        { kind: 'invocation', function: 'event-relay', trigger: 'table-stream', durationMs: 5 },
        { kind: 'eventbridge', function: 'event-relay', entryBytes: [100, 70_000] },
        { kind: 'websocket-message', direction: 'in', bytes: 40_000 },
        { kind: 'websocket-connection', durationMs: 61_000 },
      ],
      (name) => memoryMb[name] as number,
    );

    // Assess
    expect(usage.lambda.invocations).toBe(3);
    expect(usage.lambda.gbSeconds).toBeCloseTo(0.1 + 0.01 / 2 + 0.005 / 4, 10);
    expect(usage.apiGateway).toEqual({ httpApiRequests: 1, restApiRequests: 1, websocketMessages: 2, websocketConnectionMinutes: 2 });
    expect(usage.cloudFront.requests).toBe(2);
    expect(usage.eventBridge.events).toBe(1 + 2);
  });

  it('prices the units at the list prices, per unit of work, leaving out what no invocation made', () => {
    // Act
    const figure = costPer(
      [
        { kind: 'dynamodb', function: 'chat-messages', operation: 'PutItem', readUnits: 0, writeUnits: 4 },
        { kind: 'dynamodb', function: 'chat-messages', operation: 'GetItem', readUnits: 2, writeUnits: 0 },
        // The bench's own set-up: made outside any invocation.
        { kind: 'dynamodb', operation: 'PutItem', readUnits: 0, writeUnits: 100 },
      ],
      2,
      () => 1024,
    );

    // Assess
    expect(figure.dynamodb).toMatchObject({ requests: 1, readUnits: 1, writeUnits: 2 });
    expect(figure.dollars.dynamodb).toBeCloseTo(1 * listPrices.dynamodbReadUnit + 2 * listPrices.dynamodbWriteUnit, 15);
    expect(figure.dollars.total).toBeCloseTo(figure.dollars.dynamodb, 15);
  });

  it('tells what a variant adds, per field', () => {
    // Prepare
    const base = usageOf([{ kind: 'dynamodb', function: 'f', operation: 'GetItem', readUnits: 1, writeUnits: 0 }], () => 1024);
    const more = usageOf(
      [
        { kind: 'dynamodb', function: 'f', operation: 'GetItem', readUnits: 1, writeUnits: 0 },
        { kind: 'dynamodb', function: 'f', operation: 'PutItem', readUnits: 0, writeUnits: 3 },
      ],
      () => 1024,
    );

    // Act
    const added = usageDifference(more, base);

    // Assess
    expect(added.dynamodb).toEqual({
      requests: 1,
      readUnits: 0,
      writeUnits: 3,
      byOperation: { GetItem: { requests: 0, readUnits: 0, writeUnits: 0 }, PutItem: { requests: 1, readUnits: 0, writeUnits: 3 } },
      byFunction: { f: { requests: 1, readUnits: 0, writeUnits: 3 } },
    });
    // A run that batched one request more than the other does not make the variant a saving.
    expect(atLeastZero(usageDifference(base, more)).dynamodb).toMatchObject({ requests: 0, readUnits: 0, writeUnits: 0 });
  });
});
