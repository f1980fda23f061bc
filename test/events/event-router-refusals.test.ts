/**
 * The local event router, when the queue refuses an event (here: a queue whose maximum message size is below the
 * event's): an error log naming the event and a QueueMessagesRefused metric, and the event retried until the
 * queue takes it, never dropped.
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { ReceiveMessageCommand, SetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { EventRule } from '../../functions/consumers.ts';
import { startEventRouter } from '../../infra/local/event-router.ts';
import { startLocalQueues, type LocalQueues } from '../../infra/local/queues.ts';
import { eventSource, LocalEventBus } from '../../shared/events/bus.ts';
import { logger } from '../../shared/platform/logger.ts';
import type { QueueDefinition } from '../../shared/platform/queue/queue-definition.ts';
import { eventually } from '../support/eventually.ts';

const target: QueueDefinition = { name: 'fixture-refusing', visibilityTimeoutSeconds: 30, maxReceiveCount: 2 };
const rules: EventRule[] = [{ name: 'every-event', description: 'All events', pattern: { source: [eventSource] }, target }];

let queues: LocalQueues;
let sqs: SQSClient;
const bus = new EventEmitter();
let router: { stop(): Promise<void> };

beforeAll(async () => {
  queues = await startLocalQueues({ consumers: [], rules, env: {} });
  sqs = new SQSClient(queues.clientConfig);
  router = startEventRouter({ queues, rules, bus });
});
afterAll(async () => {
  await router.stop();
  sqs.destroy();
  await queues.stop();
});

const setMaximumMessageSize = (bytes: number) =>
  sqs.send(new SetQueueAttributesCommand({ QueueUrl: queues.urlOf(target.name), Attributes: { MaximumMessageSize: String(bytes) } }));

describe('the local event router, when the queue refuses an event', () => {
  it('logs an error naming the event, counts a QueueMessagesRefused metric, and sends it once the queue takes it', async () => {
    // Prepare: a queue that takes at most 1 KiB, and an event of about 2 KiB.
    await setMaximumMessageSize(1024);
    const errors = vi.spyOn(logger, 'error');
    // Locally a metric is a DEBUG `metrics` log line holding its EMF document (docs/deploy.md#the-platforms-metrics).
    const debug = vi.spyOn(logger, 'debug');
    const eventId = randomUUID();
    const event = { eventId, type: 'message.added', orgId: randomUUID(), createdAt: new Date().toISOString(), payload: { eventId, content: `Thanks 😀 ${'x'.repeat(2048)}` } };

    // Act
    bus.emit('event', event);
    const refusal = await eventually(
      () => errors.mock.calls.find(([message]) => String(message).includes('refused')),
      (found) => found !== undefined,
    );
    await setMaximumMessageSize(262_144);

    // Assess
    expect(refusal?.[1]).toMatchObject({ eventIds: [eventId] });
    const documents = debug.mock.calls.filter(([message]) => message === 'metrics').map(([, fields]) => (fields as { emf: Record<string, unknown> }).emf);
    expect(documents.find((document) => 'QueueMessagesRefused' in document)).toMatchObject({
      QueueMessagesRefused: 1,
      _aws: { CloudWatchMetrics: [{ Namespace: 'AgentPlatform', Metrics: [{ Name: 'QueueMessagesRefused', Unit: 'Count' }] }] },
    });
    errors.mockRestore();
    debug.mockRestore();
    // The retries back off to 30 s at most: the event arrives within one of them.
    const received = await eventually(
      async () => (await sqs.send(new ReceiveMessageCommand({ QueueUrl: queues.urlOf(target.name), WaitTimeSeconds: 1 }))).Messages ?? [],
      (messages) => messages.length > 0,
      45_000,
    );
    expect(JSON.parse(received[0]?.Body as string).detail.event).toEqual(event.payload);
  }, 60_000);
});

describe('publishing on the local bus', () => {
  it('resolves only once the queue holds the event, so the relay never moves past an event not yet queued', async () => {
    // Prepare: a bus of its own, routed by a second router, and a queue that refuses the event for now.
    const localBus = new LocalEventBus();
    const busRouter = startEventRouter({ queues, rules, bus: localBus });
    await setMaximumMessageSize(1024);
    const errors = vi.spyOn(logger, 'error').mockImplementation(() => undefined);
    const eventId = randomUUID();
    const event = { eventId, type: 'message.added', orgId: randomUUID(), createdAt: new Date().toISOString(), payload: { eventId, content: 'y'.repeat(2048) } };

    // Act
    let published = false;
    const publishing = localBus.publish([event]).then(() => (published = true));
    await eventually(
      () => errors.mock.calls.some(([, details]) => (details as { eventIds?: string[] } | undefined)?.eventIds?.includes(eventId)),
      (refused) => refused,
    );
    const publishedWhileRefused = published;
    await setMaximumMessageSize(262_144);
    await publishing;

    // Assess
    expect(publishedWhileRefused).toBe(false);
    const received = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queues.urlOf(target.name), WaitTimeSeconds: 1, MaxNumberOfMessages: 10 }));
    expect(received.Messages?.map((message) => JSON.parse(message.Body as string).detail.event.eventId)).toContain(eventId);
    errors.mockRestore();
    await busRouter.stop();
  }, 60_000);
});
