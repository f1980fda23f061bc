import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { handleQueueBatch } from '../../shared/queue/queue-message.ts';

const record = (messageId: string, body: string): SQSRecord => ({ messageId, body }) as SQSRecord;

describe('a FIFO batch', () => {
  it('stops at the first failure and hands back it and everything after, so nothing overtakes it', async () => {
    const event: SQSEvent = { Records: ['a', 'b', 'c', 'd'].map((id) => record(id, JSON.stringify({ id }))) };
    const handled: string[] = [];
    const response = await handleQueueBatch(event, { schema: z.object({ id: z.string() }), name: 'test', order: 'fifo' }, async ({ id }) => {
      if (id === 'b') throw new Error('fails');
      handled.push(id);
    });
    expect(handled).toEqual(['a']);
    expect(response.batchItemFailures.map((failure) => failure.itemIdentifier)).toEqual(['b', 'c', 'd']);
  });

  it('hands back a poison message and what follows it too', async () => {
    const event: SQSEvent = { Records: [record('a', '{"id":"a"}'), record('b', 'not json'), record('c', '{"id":"c"}')] };
    const handled: string[] = [];
    const response = await handleQueueBatch(event, { schema: z.object({ id: z.string() }), name: 'test', order: 'fifo' }, async ({ id }) => {
      handled.push(id);
    });
    expect(handled).toEqual(['a']);
    expect(response.batchItemFailures.map((failure) => failure.itemIdentifier)).toEqual(['b', 'c']);
  });
});
