/**
 * The local runtime's SQS side: the event router (EventBridge rules with SQS targets), fauxqs, and the queue
 * pollers that invoke a consumer in its own execution environment, as Lambda's event source mapping does. The
 * consumer is a fixture that reports each invocation to a recorder this test runs.
 */
import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { ReceiveMessageCommand, SQSClient, type Message } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventRule, QueueConsumer } from '../../../functions/consumers.ts';
import { eventSource, localEventBus } from '../../../shared/events/bus.ts';
import type { QueueDefinition } from '../../../shared/platform/queue/queue-definition.ts';
import { startApi, type TestApi, type TestQueues } from '../../support/api.ts';
import type { RecordedInvocation } from '../../support/fixtures/recording-consumer.ts';
import { closeServer, listenOnLoopback } from '../../support/loopback-server.ts';

const visibilityTimeoutSeconds = 1;
const eventsQueue: QueueDefinition = { name: 'fixture-events', visibilityTimeoutSeconds: 360, maxReceiveCount: 2 };
const closedQueue: QueueDefinition = { name: 'fixture-closed-sessions', visibilityTimeoutSeconds: 360, maxReceiveCount: 2 };
const fixtureEntry = 'test/support/fixtures/recording-consumer.ts';
const consumers: QueueConsumer[] = [
  { name: 'fixture', entry: fixtureEntry, queue: eventsQueue, batchSize: 10, timeoutSeconds: 30, queueUrlVariable: 'FIXTURE_QUEUE_URL' },
  { name: 'fixture-closed', entry: fixtureEntry, queue: closedQueue, batchSize: 10, timeoutSeconds: 30 },
];
const rules: EventRule[] = [
  { name: 'every-event', description: 'All events', pattern: { source: [eventSource] }, target: eventsQueue },
  { name: 'closed-sessions', description: 'Closed sessions', pattern: { source: [eventSource], 'detail-type': ['session.closed'] }, target: closedQueue },
  { name: 'other-source', description: 'Never matches', pattern: { source: ['someone-else'] }, target: closedQueue },
];

let api: TestApi;
let queues: TestQueues;
let recorder: Server;
const invocations: RecordedInvocation[] = [];

beforeAll(async () => {
  recorder = createServer(async (request, response) => {
    let body = '';
    for await (const chunk of request) body += chunk;
    invocations.push(JSON.parse(body) as RecordedInvocation);
    response.end();
  });
  const recorderUrl = `http://127.0.0.1:${await listenOnLoopback(recorder)}`;
  api = await startApi({ RECORDER_URL: recorderUrl }, { streamPoller: true, queues: { visibilityTimeoutSeconds, consumers, rules } });
  queues = api.queues as TestQueues;
});
afterAll(async () => {
  await api.close();
  await closeServer(recorder);
});

interface Delivery {
  record: SQSRecord;
  threadId: number;
  queue: string;
}

/** Every time the consumers got this event, in order. */
function deliveriesOf(eventId: string): Delivery[] {
  return invocations.flatMap((invocation) =>
    invocation.records
      .filter((record) => JSON.parse(record.body).detail.event.eventId === eventId)
      .map((record) => ({ record, threadId: invocation.threadId, queue: record.eventSourceARN.split(':').at(-1) as string })),
  );
}

async function waitFor<T>(what: string, probe: () => T | undefined, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Long-polls a dead-letter queue until the event's message is there. */
async function receiveDeadLetter(queueName: string, eventId: string): Promise<Message> {
  const sqs = new SQSClient(queues.clientConfig);
  try {
    const deadline = Date.now() + 6_000;
    while (Date.now() < deadline) {
      const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queues.urls[queueName], WaitTimeSeconds: 1, MaxNumberOfMessages: 10 }));
      const found = Messages.find((message) => JSON.parse(message.Body as string).detail.event.eventId === eventId);
      if (found) return found;
    }
    throw new Error(`Timed out waiting for ${eventId} in ${queueName}`);
  } finally {
    sqs.destroy();
  }
}

/** The event's deliveries once there are `count` of them. */
const delivered = (eventId: string, count: number) =>
  waitFor(`${count} deliveries of ${eventId}`, () => (deliveriesOf(eventId).length >= count ? deliveriesOf(eventId) : undefined));

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Publishes events on the local bus, as the event relay does; returns their ids. */
async function publish(...events: { type: string; scenario?: string }[]): Promise<string[]> {
  const orgId = randomUUID();
  const published = events.map(({ type, scenario }) => {
    const eventId = randomUUID();
    return { eventId, type, orgId, createdAt: new Date().toISOString(), payload: { eventId, ...(scenario ? { scenario } : {}) } };
  });
  await localEventBus.publish(published);
  return published.map((event) => event.eventId);
}

describe('local queues', () => {
  it('hand a bus event to the consumer as an SQS record whose body is the EventBridge event', async () => {
    const eventId = randomUUID();
    const event = { eventId, type: 'session.created', orgId: randomUUID(), createdAt: '2026-03-04T05:06:07.891Z', payload: { eventId, state: 'OPEN' } };
    const region = process.env.AWS_REGION;

    await localEventBus.publish([event]);

    const [delivery] = await delivered(eventId, 1);
    const record = delivery?.record as SQSRecord;
    expect(record).toMatchObject({
      eventSource: 'aws:sqs',
      eventSourceARN: `arn:aws:sqs:${region}:000000000000:fixture-events`,
      awsRegion: region,
      messageAttributes: {},
      md5OfBody: createHash('md5').update(record.body).digest('hex'),
    });
    expect(record.messageId).toMatch(/^[0-9a-f-]{36}$/);
    expect(record.receiptHandle).toEqual(expect.any(String));
    expect(record.attributes).toMatchObject({ ApproximateReceiveCount: '1', SenderId: expect.any(String) });
    expect(Number(record.attributes.SentTimestamp)).toBeGreaterThan(Date.now() - 10_000);
    expect(Number(record.attributes.ApproximateFirstReceiveTimestamp)).toBeGreaterThanOrEqual(Number(record.attributes.SentTimestamp));
    expect(JSON.parse(record.body)).toEqual({
      version: '0',
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      'detail-type': 'session.created',
      source: 'agent-platform',
      account: '000000000000',
      time: '2026-03-04T05:06:07Z',
      region,
      resources: [],
      detail: { orgId: event.orgId, occurredAt: event.createdAt, event: event.payload },
    });
  });

  it('route what the API records: table stream, event relay, rule, queue, consumer', async () => {
    const { orgId, key } = await api.newOrg();
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'A', description: 'A', role: 'A' } });
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });

    const record = await waitFor('session.created', () =>
      invocations
        .flatMap((invocation) => invocation.records)
        .find((candidate) => {
          const body = JSON.parse(candidate.body);
          return body.detail.orgId === orgId && body['detail-type'] === 'session.created';
        }),
    );
    expect(JSON.parse(record.body).detail.event).toMatchObject({ id: session.body.id, eventType: 'session.created' });
  });

  it('send an event only to the queues whose rule pattern matches it', async () => {
    const [created, closed] = await publish({ type: 'session.created' }, { type: 'session.closed' });

    await delivered(created as string, 1);
    await delivered(closed as string, 2);
    // The router sends to every matching queue at once: a wrongly routed copy would have arrived by now.
    await pause(300);
    expect(deliveriesOf(created as string).map((delivery) => delivery.queue)).toEqual([eventsQueue.name]);
    expect(deliveriesOf(closed as string).map((delivery) => delivery.queue).sort()).toEqual([closedQueue.name, eventsQueue.name]);
  });

  it('bring back the records reported in batchItemFailures after the visibility timeout, and only those', async () => {
    const [failing, passing] = await publish({ type: 'session.updated', scenario: 'fail-first' }, { type: 'session.updated' });

    const [first, second] = (await delivered(failing as string, 2)).map((delivery) => delivery.record);
    expect(second?.attributes.ApproximateReceiveCount).toBe('2');
    expect(second?.messageId).toBe(first?.messageId);
    expect(Number(second?.attributes.ApproximateFirstReceiveTimestamp)).toBe(Number(first?.attributes.ApproximateFirstReceiveTimestamp));
    await pause(visibilityTimeoutSeconds * 1000 + 500);
    expect(deliveriesOf(failing as string)).toHaveLength(2);
    expect(deliveriesOf(passing as string)).toHaveLength(1);
  });

  it('lose nothing when the execution environment is killed mid-invocation: a new one handles the messages', async () => {
    const [hanging] = await publish({ type: 'session.updated', scenario: 'hang-first' });
    const [first] = await delivered(hanging as string, 1);

    await queues.crash('fixture');

    const [, second] = await delivered(hanging as string, 2);
    expect(second?.record.attributes.ApproximateReceiveCount).toBe('2');
    expect(second?.threadId).not.toBe(first?.threadId);
    await pause(visibilityTimeoutSeconds * 1000 + 500);
    expect(deliveriesOf(hanging as string)).toHaveLength(2);
  });

  it('move a message to the dead-letter queue after maxReceiveCount failed receives', async () => {
    const [failing] = await publish({ type: 'session.updated', scenario: 'fail' });

    const dead = await receiveDeadLetter(`${eventsQueue.name}-dlq`, failing as string);

    const deliveries = deliveriesOf(failing as string);
    expect(deliveries.map((delivery) => delivery.record.attributes.ApproximateReceiveCount)).toEqual(['1', '2']);
    expect(dead.Body).toBe(deliveries[0]?.record.body);
  });
});

/** The local addresses of the listening TCP sockets on `port`, read from the kernel's socket tables. */
function listeningAddresses(port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const listening = '0A';
  const addresses: string[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      if (!local || state !== listening) continue;
      const [address, socketPort] = local.split(':') as [string, string];
      if (socketPort === hexPort) addresses.push(address);
    }
  }
  return addresses;
}

describe('the local SQS emulator', () => {
  it('listens on 127.0.0.1 only, so queued events never reach the network', () => {
    // Act
    const addresses = listeningAddresses(Number(new URL(queues.clientConfig.endpoint as string).port));

    // Assess: 127.0.0.1 as the kernel writes it, and no socket on any other address (0.0.0.0, ::).
    expect(addresses).toEqual(['0100007F']);
  });
});
