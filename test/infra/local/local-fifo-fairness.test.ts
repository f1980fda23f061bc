/**
 * One slow message group of a FIFO queue holds back no other: the local event source mapping runs each concurrent
 * invocation in an execution environment of its own, as Lambda does, so a CPU-bound message (a large PDF) in one
 * organization's group does not stall another's. The consumer is a fixture that spins for as long as told.
 */
import { createServer, type Server } from 'node:http';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { QueueConsumer } from '../../../functions/consumers.ts';
import type { QueueDefinition } from '../../../shared/platform/queue/queue-definition.ts';
import { startApi, type TestApi } from '../../support/api.ts';
import { eventually } from '../../support/eventually.ts';
import { closeServer, listenOnLoopback } from '../../support/loopback-server.ts';

const ingestQueue: QueueDefinition = { name: 'fixture-ingest.fifo', visibilityTimeoutSeconds: 60, maxReceiveCount: 2, fifo: true };
const consumers: QueueConsumer[] = [{ name: 'fixture-busy', entry: 'test/support/fixtures/busy-consumer.ts', queue: ingestQueue, batchSize: 1, timeoutSeconds: 60 }];

let api: TestApi;
let recorder: Server;
const reports: { name: string; event: 'started' | 'finished'; at: number }[] = [];

beforeAll(async () => {
  recorder = createServer(async (request, response) => {
    let body = '';
    for await (const chunk of request) body += chunk;
    reports.push(JSON.parse(body));
    response.end();
  });
  const recorderUrl = `http://127.0.0.1:${await listenOnLoopback(recorder)}`;
  api = await startApi({ RECORDER_URL: recorderUrl }, { queues: { consumers, rules: [] } });
});
afterAll(async () => {
  await api.close();
  await closeServer(recorder);
});

const reported = (name: string, event: 'started' | 'finished') => reports.find((report) => report.name === name && report.event === event);

describe('FIFO message groups on the local runtime', { timeout: 120_000 }, () => {
  it("finishes another group's message while one group's message keeps its environment busy", async () => {
    const sqs = new SQSClient(api.queues!.clientConfig);
    const queueUrl = api.queues!.urls[ingestQueue.name] as string;
    const send = (group: string, body: { name: string; busyMs: number }) =>
      sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageGroupId: group, MessageDeduplicationId: body.name, MessageBody: JSON.stringify(body) }));
    const slow = `slow-${crypto.randomUUID()}`;
    const quick = `quick-${crypto.randomUUID()}`;

    await send('org-a', { name: slow, busyMs: 15_000 });
    await eventually(() => reported(slow, 'started'), (report) => report !== undefined, 60_000);
    await send('org-b', { name: quick, busyMs: 0 });

    const quickDone = await eventually(() => reported(quick, 'finished'), (report) => report !== undefined, 60_000);
    const slowDone = reported(slow, 'finished');
    // Before, both ran on one thread: the quick message waited for the slow one to end.
    expect(slowDone === undefined || quickDone!.at < slowDone.at).toBe(true);
    sqs.destroy();
  });
});
