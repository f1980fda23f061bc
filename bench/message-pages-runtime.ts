/**
 * Child process of the message-history benchmark: the API on the database the parent names, one session whose
 * history is written through the store's own turn commit (98 messages a transaction), then timed GETs. Reports
 * its figures to the parent and exits.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Message } from '../shared/conversations/session-schemas.ts';
import { keys } from '../shared/platform/store/keys.ts';
import { startBenchApi } from './bench-api.ts';
import { percentiles } from './turns.ts';
import type { MessagePagesResult } from './message-pages.ts';

const historyLength = Number(process.env.BENCH_HISTORY_MESSAGES ?? 10_000);
const requests = Number(process.env.BENCH_PAGE_REQUESTS ?? 200);
const limit = 10;
const deepPage = 50;
// A turn commit holds the session update, its messages and the expiry item: 100 items at most.
const messagesPerCommit = 98;

const { deps, orgId, call, timed, close } = await startBenchApi();
const agent = await call('POST', '/v2/chat/agents', { fullName: 'Bench', description: 'Bench', role: 'Bench' });
const sessionId = (await call('POST', '/v1/chat/chat/sessions', { agentId: agent.id })).id;
const sentence = 'A customer message of about the length people write when they explain what went wrong with an order. ';
for (let written = 0; written < historyLength; written += messagesPerCommit) {
  const session = await deps.sessions.get(orgId, sessionId);
  if (!session) throw new Error('the bench session is gone');
  const now = new Date().toISOString();
  const batch: Message[] = Array.from({ length: Math.min(messagesPerCommit, historyLength - written) }, (_, index) => ({
    id: `msg_${crypto.randomUUID().replaceAll('-', '')}`,
    sessionId,
    role: (written + index) % 2 === 0 ? 'USER' : 'ASSISTANT',
    content: sentence.repeat(2),
    metadata: {},
    createdAt: now,
  }));
  await deps.sessions.commitTurn(session, batch, { nowIso: now });
}

const messagesPath = `/api/v1/chat/sessions/${sessionId}/messages?limit=${limit}`;
const pageOneMs = percentiles(await timed(`${messagesPath}&page=1`, requests));
const deepPageMs = percentiles(await timed(`${messagesPath}&page=${deepPage}`, requests));
const floorMs = percentiles(await timed(`/api/v1/chat/sessions/${sessionId}`, requests));
// What one page costs DynamoDB: the page's range Query, strongly consistent, as the store makes it.
const consumed = await deps.documentClient.send(
  new QueryCommand({
    TableName: process.env.TABLE_NAME,
    KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
    ExpressionAttributeValues: {
      ':pk': keys.sessionPartition(orgId, sessionId),
      ':from': keys.message(orgId, sessionId, (deepPage - 1) * limit + 1).sk,
      ':to': keys.message(orgId, sessionId, deepPage * limit).sk,
    },
    ConsistentRead: true,
    ReturnConsumedCapacity: 'TOTAL',
  }),
);
// For context, what every page used to cost: the whole history read, then sliced.
const wholeHistoryMs: number[] = [];
for (let run = 0; run < 5; run += 1) {
  const started = performance.now();
  await deps.sessions.messages(orgId, sessionId);
  wholeHistoryMs.push(performance.now() - started);
}

const result: MessagePagesResult = {
  messages: historyLength,
  limit,
  requests,
  pageOneMs,
  deepPage,
  deepPageMs,
  floorMs,
  readUnitsPerPage: consumed.ConsumedCapacity?.CapacityUnits ?? Number.NaN,
  wholeHistoryReadMs: percentiles(wholeHistoryMs).p50,
};
process.send?.(result);
close();
process.exit(0);
