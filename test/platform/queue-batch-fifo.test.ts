import type { SQSEvent, SQSRecord } from 'aws-lambda';
import fc from 'fast-check';
import * as z from 'zod';
import { describe, expect, it } from 'vitest';
import { handleQueueBatch } from '../../shared/platform/queue/queue-message.ts';

const record = (messageId: string, group: string, body: unknown): SQSRecord =>
  ({ messageId, body: JSON.stringify(body), attributes: { MessageGroupId: group } }) as unknown as SQSRecord;

const schema = z.object({ n: z.number(), fails: z.boolean() });

describe("handleQueueBatch's fifo order", () => {
  it('hands back, unhandled, every later message of a group whose message failed; other groups go on in order', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.record({ group: fc.constantFrom('a', 'b', 'c'), fails: fc.boolean() }), { maxLength: 10 }), async (messages) => {
        const handled: number[] = [];
        const event = { Records: messages.map((message, n) => record(String(n), message.group, { n, fails: message.fails })) } as SQSEvent;
        const { batchItemFailures } = await handleQueueBatch(event, { schema, name: 'test', order: 'fifo' }, async (message) => {
          handled.push(message.n);
          if (message.fails) throw new Error('fails');
        });
        const failedGroups = new Set<string>();
        const expectedHandled: number[] = [];
        const expectedFailures: string[] = [];
        messages.forEach((message, n) => {
          if (failedGroups.has(message.group)) return expectedFailures.push(String(n));
          expectedHandled.push(n);
          if (message.fails) {
            failedGroups.add(message.group);
            expectedFailures.push(String(n));
          }
        });
        expect(handled).toEqual(expectedHandled);
        expect(batchItemFailures.map((failure) => failure.itemIdentifier)).toEqual(expectedFailures);
      }),
    );
  });
});
