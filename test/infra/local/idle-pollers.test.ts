/**
 * An idle `npm start` idles: the stream poller backs off while its shards are empty and a nudge wakes it at once;
 * the queue pollers long-poll for SQS's longest wait and still stop at once; the campaign ticker sends nothing while
 * no campaign is due; an execution environment left idle ends. Counted, never timed: the waits the stream poller asks for, and the requests a stand-in SQS
 * receives.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import type { QueueConsumer, TableStreamConsumer } from '../../../functions/consumers.ts';
import { startCampaignTicker } from '../../../infra/local/campaign-ticker.ts';
import { prepareTable } from '../../../infra/local/environment.ts';
import { createLocalFunction } from '../../../infra/local/lambda-worker.ts';
import { startQueuePollers } from '../../../infra/local/queue-poller.ts';
import { idleDelay, startStreamPoller } from '../../../infra/local/stream-poller.ts';
import { handed } from '../../support/fixtures/recording-stream-consumer.ts';
import { closeServer, listenOnLoopback } from '../../support/loopback-server.ts';

const consumers: TableStreamConsumer[] = [
  { name: 'recorder', entry: 'test/support/fixtures/recording-stream-consumer.ts', select: { records: 'inserts', entities: ['outbox'] }, worksOnTable: false },
];
const clientConfig = { region: 'us-east-1', endpoint: inject('dynamodbEndpoint'), credentials: { accessKeyId: 'local', secretAccessKey: 'local' } };
// A table of its own: its stream holds only what this file writes.
const tableName = `idle-pollers-${randomUUID()}`;
const client = new DynamoDBClient(clientConfig);
const stops: (() => Promise<void>)[] = [];

beforeAll(() => prepareTable(clientConfig.endpoint, tableName));
afterAll(() => client.destroy());
afterEach(async () => {
  await Promise.all(stops.splice(0).map((stop) => stop()));
});

async function put(pk: string): Promise<void> {
  await client.send(new PutItemCommand({ TableName: tableName, Item: { pk: { S: pk }, sk: { S: 'item' }, entity: { S: 'outbox' } } }));
}

describe('the stream poller, idle', () => {
  it('waits twice as long after each empty round, up to its longest wait', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7, 100].map((rounds) => idleDelay(rounds, 25, 1_000))).toEqual([25, 50, 100, 200, 400, 800, 1_000, 1_000, 1_000]);
    expect([0, 5].map((rounds) => idleDelay(rounds, 10, 10))).toEqual([10, 10]);
  });

  /** A poller on this file's table whose waits are `wait`'s, each recorded in `waits`; resolves once it is ready. */
  async function startPoller(idleDelayMs: number, maxIdleDelayMs: number, wait: (ms: number) => Promise<void>) {
    const waits: number[] = [];
    const poller = startStreamPoller({
      ...{ endpoint: clientConfig.endpoint, tableName, consumers, idleDelayMs, maxIdleDelayMs },
      wait: (ms) => {
        waits.push(ms);
        return wait(ms);
      },
    });
    stops.push(poller.stop);
    await poller.ready;
    return { poller, waits };
  }

  it('backs off while the shards are empty and waits the shortest again once records come', async () => {
    // Waits nothing, so that the rounds come at once; the waits asked for are the schedule.
    const { waits } = await startPoller(25, 1_000, () => new Promise((resolve) => setImmediate(resolve)));
    await vi.waitFor(() => expect(waits.length).toBeGreaterThanOrEqual(8), { timeout: 30_000, interval: 10 });
    expect(waits.slice(0, 8)).toEqual([25, 50, 100, 200, 400, 800, 1_000, 1_000]);

    const pk = randomUUID();
    await put(pk);
    await vi.waitFor(() => expect(handed).toContain(pk), { timeout: 30_000, interval: 10 });
    await vi.waitFor(() => expect(waits.slice(waits.indexOf(1_000))).toContain(25), { timeout: 30_000, interval: 10 });
  });

  it('hands a write over when nudged, however long it meant to wait', async () => {
    // Past the first round, a wait never ends by itself: only a nudge can bring the next round.
    const { poller, waits } = await startPoller(10, 600_000, (ms) => (ms <= 10 ? new Promise((resolve) => setTimeout(resolve, ms)) : new Promise(() => undefined)));
    await vi.waitFor(() => expect(waits).toContain(20), { timeout: 30_000, interval: 10 });

    const pk = randomUUID();
    await put(pk);
    poller.nudge();
    await vi.waitFor(() => expect(handed).toContain(pk), { timeout: 30_000, interval: 10 });
  });
});

describe('the queue pollers, idle', () => {
  let sqs: Server;
  let endpoint: string;
  const receives: Record<string, unknown>[] = [];
  let sends = 0;

  beforeAll(async () => {
    // An SQS that never has a message: it holds every ReceiveMessage open, as a long poll of an empty queue.
    sqs = createServer(async (request, response) => {
      let body = '';
      for await (const chunk of request) body += chunk;
      const target = String(request.headers['x-amz-target']);
      if (target.endsWith('.ReceiveMessage')) receives.push(JSON.parse(body) as Record<string, unknown>);
      if (target.endsWith('.SendMessage')) {
        sends += 1;
        response.setHeader('content-type', 'application/x-amz-json-1.0');
        response.end(JSON.stringify({ MessageId: randomUUID(), MD5OfMessageBody: createHash('md5').update(JSON.parse(body).MessageBody).digest('hex') }));
      }
    });
    endpoint = `http://127.0.0.1:${await listenOnLoopback(sqs)}`;
  });
  afterAll(async () => {
    sqs.closeAllConnections();
    await closeServer(sqs);
  });

  const queues = () => ({
    clientConfig: { region: 'us-east-1', endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } },
    urlOf: (name: string) => `${endpoint}/000000000000/${name}`,
    arnOf: (name: string) => `arn:aws:sqs:us-east-1:000000000000:${name}`,
    region: 'us-east-1',
  });

  it("long-poll for SQS's longest wait, and stop without waiting it out", async () => {
    const consumer: QueueConsumer = {
      name: 'fixture',
      entry: 'test/support/fixtures/recording-consumer.ts',
      queue: { name: 'fixture-idle', visibilityTimeoutSeconds: 30, maxReceiveCount: 2 },
      batchSize: 10,
      timeoutSeconds: 30,
    };
    const pollers = startQueuePollers({ queues: queues(), consumers: [consumer], concurrency: 2, environments: 'on-first-message' });

    await vi.waitFor(() => expect(receives).toHaveLength(2), { timeout: 30_000, interval: 10 });
    expect(receives.map((receive) => receive.WaitTimeSeconds)).toEqual([20, 20]);
    // The stand-in never answers: stop() returns only because it ends the long polls under way.
    await pollers.stop();
    expect(receives).toHaveLength(2);
  });

  it('send no campaign tick while no campaign is due, and tick again once one is', async () => {
    let looks = 0;
    let due = false;
    const ticker = startCampaignTicker(queues(), 0.01, {
      due: async () => {
        looks += 1;
        return due;
      },
    });
    stops.push(async () => ticker.stop());
    await vi.waitFor(() => expect(looks).toBeGreaterThanOrEqual(5), { timeout: 30_000, interval: 10 });
    expect(sends).toBe(0);

    due = true;
    await vi.waitFor(() => expect(sends).toBeGreaterThanOrEqual(1), { timeout: 30_000, interval: 10 });
  });
});

describe('execution environments, idle', () => {
  it('end after idleEndMs without an invocation; the next invocation starts a new one', async () => {
    const thread = createLocalFunction({ name: 'thread', entry: 'test/support/fixtures/thread-consumer.ts', timeoutSeconds: 30 }, { idleEndMs: 50 });
    stops.push(thread.stop);
    const first = (await thread.invoke({})) as { threadId: number };

    // Each probe comes long after idleEndMs, so an environment left idle has ended by the next one.
    await vi.waitFor(async () => expect(await thread.invoke({})).not.toEqual(first), { timeout: 60_000, interval: 500 });
  });
});
