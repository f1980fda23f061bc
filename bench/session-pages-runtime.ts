/**
 * Child process of the session-list benchmark: the API on the database the parent names, an organization with
 * 100,000 sessions as the store's own create writes them (most of them ended, as in a real history), then timed
 * GETs of page 1 and page 50. Reports its figures to the parent and exits.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { StoredSession } from '../shared/conversations/ports.ts';
import { secretCipherFromConfig } from '../shared/platform/secrets/secret-cipher.ts';
import { keys } from '../shared/platform/store/keys.ts';
import { DynamoSessionStore } from '../shared/conversations/session-store.ts';
import { startBenchApi } from './bench-api.ts';
import { bulkWriter } from './bulk-writes.ts';
import { percentiles } from './turns.ts';
import type { SessionPagesResult } from './session-pages.ts';

const sessionCount = Number(process.env.BENCH_SESSIONS ?? 100_000);
const requests = Number(process.env.BENCH_PAGE_REQUESTS ?? 200);
/** One session in this many is still open; the others have ended. */
const openEvery = 50;
const limit = 10;
const deepPage = 50;
const writers = 8;

const { deps, orgId, call, timed, close } = await startBenchApi();
const agent = await call('POST', '/v2/chat/agents', { fullName: 'Bench', description: 'Bench', role: 'Bench' });

const seedStarted = performance.now();
const startMs = Date.now() - sessionCount;
const bulk = bulkWriter(deps.documentClient, process.env.TABLE_NAME as string);
const recordingStore = new DynamoSessionStore(bulk.client, process.env.TABLE_NAME as string, secretCipherFromConfig(deps.config));
for (let index = 0; index < sessionCount; index += 1) {
  // One millisecond apart, in the past: the order of creation is the order of the sort keys.
  const createdAt = new Date(startMs + index).toISOString();
  const ended = index % openEvery !== 0;
  const session: StoredSession = {
    id: crypto.randomUUID(),
    orgId,
    agentId: agent.id,
    type: 'CHAT',
    direction: 'INBOUND',
    platform: index % 3 === 0 ? 'WEB' : 'SDK',
    state: ended ? 'CLOSED' : 'OPEN',
    metadata: { sessionVariables: {} },
    createdAt,
    updatedAt: createdAt,
    lastActivityAt: new Date().toISOString(),
    messageCount: 0,
    nextSeq: 1,
    ...(ended ? { endedAt: createdAt, endedReason: 'USER_CLOSED' as const } : {}),
  };
  await recordingStore.create(session, Math.floor(Date.now() / 1000) + 3600, []);
}
await bulk.flush(writers);
const seedSeconds = (performance.now() - seedStarted) / 1000;

const listPath = `/v1/chat/chat/sessions?limit=${limit}`;
const pageOneMs = percentiles(await timed(listPath, requests));
// Page 50 as a client reaches it: following nextCursor from page 1.
let cursor = '';
for (let page = 1; page < deepPage; page += 1) {
  const listed = await call<{ pagination: { nextCursor: string } }>('GET', `${listPath}${cursor ? `&cursor=${cursor}` : ''}`);
  cursor = listed.pagination.nextCursor;
}
const deepPageMs = percentiles(await timed(`${listPath}&cursor=${cursor}`, requests));
const deepPageByNumberMs = percentiles(await timed(`${listPath}&page=${deepPage}`, requests));
const openPageOneMs = percentiles(await timed(`${listPath}&state=OPEN`, requests));
const someSession = await call<{ data: { id: string }[] }>('GET', listPath);
const floorMs = percentiles(await timed(`/api/v1/chat/sessions/${someSession.data[0]?.id}`, requests));

// What a page costs DynamoDB, read as the store reads it: the page (one more than the limit) and the counters.
const position = Buffer.from(cursor, 'base64url').toString('utf8');
const after = (JSON.parse(position) as { after: string }).after;
const pageRead = await deps.documentClient.send(
  new QueryCommand({
    TableName: process.env.TABLE_NAME,
    IndexName: 'gsi1',
    KeyConditionExpression: 'gsi1pk = :pk',
    ExpressionAttributeValues: { ':pk': keys.sessionsByOrg(orgId) },
    ExclusiveStartKey: { ...keys.session(orgId, after.slice(after.lastIndexOf('#') + 1)), gsi1pk: keys.sessionsByOrg(orgId), gsi1sk: after },
    ScanIndexForward: false,
    Limit: limit + 1,
    ReturnConsumedCapacity: 'TOTAL',
  }),
);
const countersRead = await deps.documentClient.send(
  new QueryCommand({
    TableName: process.env.TABLE_NAME,
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :scope)',
    ExpressionAttributeValues: { ':pk': keys.sessionCounters(orgId), ':scope': 'ORG#' },
    ConsistentRead: true,
    ReturnConsumedCapacity: 'TOTAL',
  }),
);

const result: SessionPagesResult = {
  sessions: sessionCount,
  openSessions: Math.ceil(sessionCount / openEvery),
  seedSeconds,
  limit,
  requests,
  pageOneMs,
  deepPage,
  deepPageMs,
  deepPageByNumberMs,
  openPageOneMs,
  floorMs,
  readUnitsPerPage: (pageRead.ConsumedCapacity?.CapacityUnits ?? Number.NaN) + (countersRead.ConsumedCapacity?.CapacityUnits ?? Number.NaN),
};
process.send?.(result);
close();
process.exit(0);
