/**
 * The local SQS emulator persisted under DATA_DIR, restarted after a crash: messages a consumer of the previous run
 * had received and not deleted come back within a second, not once their visibility timeout has run out.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ReceiveMessageCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import type { EventRule } from '../../../functions/consumers.ts';
import { startLocalQueues } from '../../../infra/local/queues.ts';
import { eventSource } from '../../../shared/events/bus.ts';
import type { QueueDefinition } from '../../../shared/platform/queue/queue-definition.ts';

const target: QueueDefinition = { name: 'fixture-restarted', visibilityTimeoutSeconds: 300, maxReceiveCount: 5 };
const rules: EventRule[] = [{ name: 'every-event', description: 'All events', pattern: { source: [eventSource] }, target }];
const dataDir = mkdtempSync(join(tmpdir(), 'local-queues-restart-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe('local queues restarted on their data', () => {
  it('hand over again, at once, the messages received and not deleted before the restart', async () => {
    // Prepare: a message received (in flight for 5 minutes) when the runtime stops.
    const first = await startLocalQueues({ consumers: [], rules, dataDir, env: {} });
    const firstClient = new SQSClient(first.clientConfig);
    await firstClient.send(new SendMessageCommand({ QueueUrl: first.urlOf(target.name), MessageBody: '{"n":1}' }));
    const taken = await firstClient.send(new ReceiveMessageCommand({ QueueUrl: first.urlOf(target.name), WaitTimeSeconds: 1 }));
    expect(taken.Messages).toHaveLength(1);
    firstClient.destroy();
    await first.stop();

    // Act
    const second = await startLocalQueues({ consumers: [], rules, dataDir, env: {} });
    const client = new SQSClient(second.clientConfig);
    const startedAt = Date.now();
    let received: unknown[] = [];
    // Any wait well under the 5 minutes of visibility tells a released message from one that timed out.
    while (received.length === 0 && Date.now() - startedAt < 60_000) {
      received = (await client.send(new ReceiveMessageCommand({ QueueUrl: second.urlOf(target.name), WaitTimeSeconds: 1 }))).Messages ?? [];
    }
    client.destroy();
    await second.stop();

    // Assess
    expect(received).toEqual([expect.objectContaining({ Body: '{"n":1}', MessageId: taken.Messages?.[0]?.MessageId })]);
  }, 120_000);
});
