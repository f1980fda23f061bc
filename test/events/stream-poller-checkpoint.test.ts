import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DescribeTableCommand, DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, it, vi } from 'vitest';
import type { TableStreamConsumer } from '../../functions/consumers.ts';
import { prepareTable } from '../../infra/local/environment.ts';
import { startStreamPoller } from '../../infra/local/stream-poller.ts';
import { failing, handed } from '../support/fixtures/recording-stream-consumer.ts';
import { closeServer, listenOnLoopback } from '../support/loopback-server.ts';

const consumers: TableStreamConsumer[] = [
  { name: 'recorder', entry: 'test/support/fixtures/recording-stream-consumer.ts', select: { records: 'inserts', entities: ['outbox'] }, worksOnTable: false },
];
const clientConfig = { region: 'us-east-1', endpoint: inject('dynamodbEndpoint'), credentials: { accessKeyId: 'local', secretAccessKey: 'local' } };
// A table of its own: its stream holds only what this file writes.
const tableName = `stream-checkpoint-${randomUUID()}`;
const client = new DynamoDBClient(clientConfig);
let checkpointDir: string;
const startedPollers: { stop(): Promise<void> }[] = [];

beforeAll(async () => {
  await prepareTable(clientConfig.endpoint, tableName);
  checkpointDir = mkdtempSync(join(tmpdir(), 'stream-checkpoint-'));
});
afterAll(() => {
  client.destroy();
  rmSync(checkpointDir, { recursive: true, force: true });
});
beforeEach(() => {
  handed.length = 0;
  failing.clear();
});
// A test that fails halfway leaves no poller behind to hand records to the next one.
afterEach(async () => {
  await Promise.all(startedPollers.splice(0).map((poller) => poller.stop()));
});

async function put(pk: string): Promise<void> {
  await client.send(new PutItemCommand({ TableName: tableName, Item: { pk: { S: pk }, sk: { S: 'item' }, entity: { S: 'outbox' } } }));
}

async function startPoller(checkpointFile?: string) {
  const poller = startStreamPoller({ endpoint: clientConfig.endpoint, tableName, consumers, idleDelayMs: 10, checkpointFile });
  startedPollers.push(poller);
  await poller.ready;
  return poller;
}

async function handedOver(pk: string): Promise<void> {
  await vi.waitFor(() => expect(handed).toContain(pk), { timeout: 60_000, interval: 10 });
}

describe('the stream poller with a checkpoint file', () => {
  it('hands the next poller what was written while none ran, and nothing it handed before', async () => {
    const checkpointFile = join(checkpointDir, 'resume.json');
    const first = await startPoller(checkpointFile);
    await put('handed-before-stop');
    await handedOver('handed-before-stop');
    await first.stop();

    await put('written-while-stopped-1');
    await put('written-while-stopped-2');
    const second = await startPoller(checkpointFile);
    await put('written-after-restart');
    await handedOver('written-after-restart');
    await second.stop();

    expect(handed).toEqual(['handed-before-stop', 'written-while-stopped-1', 'written-while-stopped-2', 'written-after-restart']);
  });

  it('skips what the stream held before its first start on this data, even across a restart', async () => {
    await put('before-first-start');
    const checkpointFile = join(checkpointDir, 'first-start.json');
    const first = await startPoller(checkpointFile);
    expect(existsSync(checkpointFile)).toBe(true);
    await first.stop();

    const second = await startPoller(checkpointFile);
    await put('after-first-start');
    await handedOver('after-first-start');
    await second.stop();

    expect(handed).toEqual(['after-first-start']);
  });

  it('hands a record again after a restart when it was still failing at the stop', async () => {
    const checkpointFile = join(checkpointDir, 'failing.json');
    failing.add('failing-at-stop');
    const first = await startPoller(checkpointFile);
    await put('failing-at-stop');
    await handedOver('failing-at-stop');
    await first.stop();

    failing.clear();
    handed.length = 0;
    const second = await startPoller(checkpointFile);
    await handedOver('failing-at-stop');
    await second.stop();

    expect(handed).toEqual(['failing-at-stop']);
  });

  it('reads a shard from its oldest record, with one warning, when its checkpoint is not a position of the shard', async () => {
    await put('oldest-records');
    const streams = new DynamoDBStreamsClient(clientConfig);
    const table = await client.send(new DescribeTableCommand({ TableName: tableName }));
    const stream = await streams.send(new DescribeStreamCommand({ StreamArn: table.Table?.LatestStreamArn }));
    streams.destroy();
    const shardId = stream.StreamDescription?.Shards?.[0]?.ShardId as string;
    const checkpointFile = join(checkpointDir, 'unusable.json');
    writeFileSync(checkpointFile, JSON.stringify({ shards: { [shardId]: '000000000000000000000' } }));
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);

    const poller = await startPoller(checkpointFile);
    await handedOver('oldest-records');
    await poller.stop();

    expect(warn).toHaveBeenCalledOnce();
    expect(JSON.parse(warn.mock.calls[0]?.[0] as string)).toMatchObject({ level: 'WARN', shardId, error: 'ValidationException' });
    warn.mockRestore();
  });
});

describe('the stream poller without a checkpoint file', () => {
  it('starts after the records the stream holds: they are not handed over', async () => {
    await put('before-start');
    const poller = await startPoller();
    await put('after-start');
    await handedOver('after-start');
    await poller.stop();

    expect(handed).toEqual(['after-start']);
  });
});

describe('the stream poller when DynamoDB Local calls its iterator trimmed', () => {
  // DynamoDB Local answers TrimmedDataAccessException to a read through a LATEST iterator taken on an empty shard
  // once something is written (aws/aws-sdk-java#2923): a proxy answers the poller's next read so, at will.
  /** How many of the poller's next reads are answered "trimmed". */
  let readsToTrim = 0;
  let proxy: Server;
  let proxyEndpoint: string;
  beforeAll(async () => {
    const upstream = new URL(clientConfig.endpoint);
    proxy = createServer((incoming, outgoing) => {
      const operation = String(incoming.headers['x-amz-target'] ?? '');
      if (readsToTrim > 0 && operation.endsWith('.GetRecords')) {
        readsToTrim -= 1;
        incoming.resume();
        outgoing.writeHead(400, { 'content-type': 'application/x-amz-json-1.0' });
        outgoing.end(JSON.stringify({ __type: 'com.amazonaws.dynamodb.v20120810#TrimmedDataAccessException', message: 'The operation attempted to read past the oldest stream record in a shard.' }));
        return;
      }
      const forwarded = request({ host: upstream.hostname, port: upstream.port, method: incoming.method, path: incoming.url, headers: incoming.headers }, (response) => {
        outgoing.writeHead(response.statusCode ?? 500, response.headers);
        response.pipe(outgoing);
      });
      forwarded.on('error', () => outgoing.destroy());
      incoming.pipe(forwarded);
    });
    proxyEndpoint = `http://127.0.0.1:${await listenOnLoopback(proxy)}`;
  });
  afterAll(() => closeServer(proxy));

  it.each([
    ['without a checkpoint file, before handing anything over', () => undefined, [], 1],
    ['with a checkpoint file, after handing records over', () => join(checkpointDir, `trimmed-${randomUUID()}.json`), ['handed-before'], 1],
    ['when the shard opened again is called trimmed too', () => undefined, ['handed-before'], 3],
  ])('opens the shard again and hands over what comes next, once each, %s', async (_when, checkpointFileOf, before, trimmedReads) => {
    const emptyTable = `stream-trimmed-${randomUUID()}`;
    await prepareTable(clientConfig.endpoint, emptyTable);
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const error = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const poller = startStreamPoller({ endpoint: proxyEndpoint, tableName: emptyTable, consumers, idleDelayMs: 10, checkpointFile: checkpointFileOf() });
    startedPollers.push(poller);
    await poller.ready;
    const putInto = (pk: string) => client.send(new PutItemCommand({ TableName: emptyTable, Item: { pk: { S: pk }, sk: { S: 'item' }, entity: { S: 'outbox' } } }));
    for (const pk of before) await putInto(pk);
    await vi.waitFor(() => expect(handed).toEqual(before), { timeout: 60_000, interval: 10 });

    readsToTrim = trimmedReads;
    await vi.waitFor(() => expect(readsToTrim).toBe(0), { timeout: 60_000, interval: 10 });
    for (const pk of ['first-after', 'second-after']) await putInto(pk);

    await vi.waitFor(() => expect(handed).toEqual([...before, 'first-after', 'second-after']), { timeout: 60_000, interval: 10 });
    expect(JSON.parse(warn.mock.calls.at(-1)?.[0] as string)).toMatchObject({ level: 'WARN', error: 'TrimmedDataAccessException' });
    expect(error.mock.calls.map(([line]) => JSON.parse(line as string).message)).not.toContain('stream poller stopped');
    warn.mockRestore();
    error.mockRestore();
  });
});
