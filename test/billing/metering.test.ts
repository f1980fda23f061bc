/**
 * Exactly-once metering: the usage-meter consumer is handed the real stream records of real messages, as Lambda
 * would after a crash (part of a batch, then the batch again from its checkpoint, then once more), and the counts
 * must equal what was done. The stream poller is off, so only these invocations count.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler } from '../../functions/usage-meter/handler.ts';
import { usageResponse } from '../../shared/billing/usage-schemas.ts';
import { runtime } from '../../shared/runtime.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { insertRecords } from '../support/database.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi({}, { queues: true });
});
afterAll(() => api.close());

/** An organization with a session in which `turns` messages were sent (each a user and an assistant message). */
async function conversation(turns: number) {
  const { key, orgId } = await api.newOrg();
  const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Meter', description: 'counts', role: 'Helpful' } });
  const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
  for (let turn = 0; turn < turns; turn += 1) {
    const sent = await api.request('POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, { key, body: { content: `hello number ${turn}`, stream: false } });
    expect(sent.status, sent.text).toBe(200);
  }
  return { key, orgId, sessionId: session.body.id as string };
}

let sequence = 0;

/** The INSERT stream records of the session's message items, as DynamoDB Streams would carry them. */
async function messageRecords(orgId: string, sessionId: string): Promise<DynamoDBRecord[]> {
  const deps = runtime();
  const page = await deps.documentClient.send(
    new QueryCommand({
      TableName: deps.config.TABLE_NAME,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :messages)',
      ExpressionAttributeValues: { ':pk': `ORG#${orgId}#SES#${sessionId}`, ':messages': 'MSG#' },
    }),
  );
  const records = insertRecords(page.Items ?? [], sequence + 1);
  sequence += records.length;
  return records;
}

const batch = (records: DynamoDBRecord[]): DynamoDBStreamEvent => ({ Records: records });

async function usageOf(key: string) {
  const response = await api.request('GET', '/v1/chat/usage?granularity=day', { key });
  expect(response.status, response.text).toBe(200);
  return usageResponse.parse(response.body);
}

describe('usage-meter consumer', () => {
  it('counts each message once after a crash mid-batch, the retry from the checkpoint and a duplicate delivery', async () => {
    // Prepare
    const first = await conversation(3);
    const second = await conversation(2);
    const records = [...(await messageRecords(first.orgId, first.sessionId)), ...(await messageRecords(second.orgId, second.sessionId))];

    // Act: a first invocation gets through part of the batch; then the whole batch comes again, twice.
    await handler(batch(records.slice(0, 3)));
    const retried = await handler(batch(records));
    const duplicated = await handler(batch(records.toReversed()));

    // Assess
    expect(retried.batchItemFailures).toEqual([]);
    expect(duplicated.batchItemFailures).toEqual([]);
    const firstUsage = await usageOf(first.key);
    const secondUsage = await usageOf(second.key);
    expect(firstUsage.currentPeriod.metrics.chat_messages).toBe(6);
    expect(secondUsage.currentPeriod.metrics.chat_messages).toBe(4);
    const today = firstUsage.series.at(-1);
    expect(today?.metrics.chat_messages).toBe(6);
    expect(firstUsage.currentPeriod.tokens).toHaveLength(1);
    expect(firstUsage.currentPeriod.tokens[0]?.outputTokens).toBeGreaterThan(0);
  });

  it('refuses a batch that starts after a message not counted yet, then counts everything once it arrives', async () => {
    // Prepare
    const { key, orgId, sessionId } = await conversation(2);
    const records = await messageRecords(orgId, sessionId);

    // Act
    const early = await handler(batch(records.slice(2)));
    const afterEarly = await usageOf(key);
    const complete = await handler(batch(records));

    // Assess
    expect(early.batchItemFailures).toEqual([{ itemIdentifier: records[2]?.dynamodb?.SequenceNumber }]);
    expect(afterEarly.currentPeriod.metrics.chat_messages).toBe(0);
    expect(complete.batchItemFailures).toEqual([]);
    expect((await usageOf(key)).currentPeriod.metrics.chat_messages).toBe(4);
  });

  it('ignores records that count nothing (sessions, outbox events of chat sessions)', async () => {
    // Act
    const result = await handler(batch(insertRecords([{ pk: 'ORG#x#SES#y', sk: '#SESSION', entity: 'session' }])));

    // Assess
    expect(result.batchItemFailures).toEqual([]);
  });
});
