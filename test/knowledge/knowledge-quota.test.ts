/**
 * `knowledge_chunks`: the chunks an organization stores, a stock counted where documents are made live and deleted,
 * shown by GET /v1/chat/usage and `usage.updated`, and held to the plan's quota (the free plan's 1,000).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventSchemas } from '../../shared/webhooks/event-catalog.ts';
import { chunkText } from '../../shared/knowledge/chunker.ts';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { Receiver } from '../support/webhook-receiver.ts';

let api: TestApi;
const receiver = new Receiver();
let receiverUrl: string;

beforeAll(async () => {
  receiverUrl = await receiver.start();
  api = await startApi(
    { KNOWLEDGE_VECTOR_DIR: mkdtempSync(join(tmpdir(), 'vectors-')), QUOTA_CACHE_SECONDS: '0', USAGE_ROLLUP_SECONDS: '1' },
    { streamPoller: true, queues: { visibilityTimeoutSeconds: 5 } },
  );
});
afterAll(async () => {
  await api.close();
  await receiver.close();
});

const chunking = { size: 400, overlap: 60 };
/** Markdown of `sections` short sections: one chunk each (a chunk never spans two sections). */
const sectioned = (sections: number, word = 'fact') => Array.from({ length: sections }, (_, index) => `# Section ${index + 1}\nThe ${word} number ${index + 1} of the handbook.`).join('\n\n');
const chunksOf = (text: string) => chunkText(text, chunking, true).length;

async function newStore(key: string): Promise<string> {
  const created = await api.request('POST', '/v1/chat/knowledge-stores', { key, body: { name: 'Handbook', config: { chunking } } });
  expect(created.status, created.text).toBe(201);
  return created.body.id;
}

async function addDocument(key: string, storeId: string, name: string, text: string): Promise<any> {
  const created = await api.request('POST', `/v1/chat/knowledge-stores/${storeId}/documents`, { key, body: { name, text } });
  expect(created.status, created.text).toBe(202);
  return eventually(
    async () => (await api.request('GET', `/v1/chat/knowledge-stores/${storeId}/documents/${created.body.id}`, { key })).body,
    (document) => document?.status !== 'PROCESSING' && document?.version === created.body.version,
    60_000,
  );
}

async function storedChunks(key: string): Promise<number> {
  const usage = await api.request('GET', '/v1/chat/usage', { key });
  expect(usage.status, usage.text).toBe(200);
  return usage.body.currentPeriod.metrics.knowledge_chunks;
}

/** `knowledge_chunks` of each bucket of the usage series from `from` to now, oldest first. */
async function seriesChunks(key: string, granularity: 'hour' | 'day', from: Date): Promise<number[]> {
  const usage = await api.request('GET', `/v1/chat/usage?granularity=${granularity}&from=${from.toISOString()}`, { key });
  expect(usage.status, usage.text).toBe(200);
  return usage.body.series.map((bucket: { metrics: { knowledge_chunks: number } }) => bucket.metrics.knowledge_chunks);
}

describe('knowledge_chunks', { timeout: 180_000 }, () => {
  it('counts the chunks stored: ingestion adds, a new version replaces, deleting a document or a store releases; usage.updated carries them', async () => {
    const { key } = await api.newOrg();
    const path = `/ok/${crypto.randomUUID()}`;
    const endpoint = await api.request('POST', '/v1/chat/webhooks', { key, body: { url: receiverUrl + path, events: ['usage.updated'] } });
    receiver.secrets.set(path, [endpoint.body.secret]);
    const first = await newStore(key);
    const second = await newStore(key);

    const policy = await addDocument(key, first, 'Policy', sectioned(30));
    expect(policy).toMatchObject({ status: 'UPSERTED', chunkCount: chunksOf(sectioned(30)) });
    expect(await storedChunks(key)).toBe(policy.chunkCount);
    // Deliveries may arrive in any order: the events' times tell which report is the latest.
    const reported = await eventually(
      () =>
        receiver
          .for(path)
          .map((receipt) => eventSchemas['usage.updated'].parse(receipt.body))
          .sort((a, b) => a.createdAt.localeCompare(b.createdAt))
          .map((event) => event.data.metrics.knowledge_chunks),
      (counts) => counts.includes(policy.chunkCount),
    );
    expect(reported.filter((count) => count !== undefined).at(-1)).toBe(policy.chunkCount);

    const shorter = await addDocument(key, first, 'Policy', sectioned(12));
    expect(shorter).toMatchObject({ status: 'UPSERTED', version: 2, chunkCount: chunksOf(sectioned(12)) });
    const faq = await addDocument(key, second, 'FAQ', sectioned(7, 'answer'));
    expect(faq).toMatchObject({ status: 'UPSERTED', chunkCount: chunksOf(sectioned(7, 'answer')) });
    expect(await storedChunks(key)).toBe(shorter.chunkCount + faq.chunkCount);

    expect((await api.request('DELETE', `/v1/chat/knowledge-stores/${first}/documents/${policy.id}`, { key })).status).toBe(204);
    expect(await storedChunks(key)).toBe(faq.chunkCount);
    expect((await api.request('DELETE', `/v1/chat/knowledge-stores/${second}`, { key })).status).toBe(204);
    expect(await storedChunks(key)).toBe(0);
    await eventually(
      () => receiver.for(path).map((receipt) => receipt.body.data.metrics.knowledge_chunks),
      (counts) => counts.at(-1) === 0,
    );
  });

  it('shows in each bucket of the usage series the chunks stored at its end: 0 before the documents came, what is stored now in the bucket of now', async () => {
    // Prepare: an organization that stored nothing until now.
    const { key } = await api.newOrg();
    const storeId = await newStore(key);
    const threeHoursAgo = new Date(Date.now() - 3 * 3_600_000);

    // Act
    const handbook = await addDocument(key, storeId, 'Handbook', sectioned(4));
    const afterAdding = { hours: await seriesChunks(key, 'hour', threeHoursAgo), days: await seriesChunks(key, 'day', threeHoursAgo) };
    const faq = await addDocument(key, storeId, 'FAQ', sectioned(3, 'answer'));
    expect((await api.request('DELETE', `/v1/chat/knowledge-stores/${storeId}/documents/${handbook.id}`, { key })).status).toBe(204);
    const afterDeleting = await seriesChunks(key, 'hour', threeHoursAgo);

    // Assess
    expect(handbook.chunkCount).toBe(4);
    // (Four hourly buckets, or five if an hour began meanwhile.)
    expect(afterAdding.hours.slice(0, 3)).toEqual([0, 0, 0]);
    expect(afterAdding.hours.at(-1)).toBe(4);
    expect(afterAdding.days.at(-1)).toBe(4);
    expect(afterDeleting.slice(0, 3)).toEqual([0, 0, 0]);
    expect(afterDeleting.at(-1)).toBe(faq.chunkCount);
    expect(await storedChunks(key)).toBe(faq.chunkCount);
  });

  it('holds the free plan to 1,000 chunks: a document that would pass it ends FAILED QUOTA_EXCEEDED, and at the quota new documents get 429', async () => {
    const { key } = await api.newOrg();
    const storeId = await newStore(key);
    expect(chunksOf(sectioned(1_001))).toBe(1_001);

    const tooBig = await addDocument(key, storeId, 'Too big', sectioned(1_001));
    expect(tooBig).toMatchObject({ status: 'FAILED', chunkCount: 0, error: { code: 'QUOTA_EXCEEDED', message: expect.stringContaining("free plan's knowledge_chunks quota of 1000") } });
    expect(await storedChunks(key)).toBe(0);

    const full = await addDocument(key, storeId, 'Exactly the quota', sectioned(1_000));
    expect(full).toMatchObject({ status: 'UPSERTED', chunkCount: 1_000 });
    expect(await storedChunks(key)).toBe(1_000);

    const refused = await api.request('POST', `/v1/chat/knowledge-stores/${storeId}/documents`, { key, body: { name: 'One more', text: 'A last fact.' } });
    expectError(refused, 429, 'QUOTA_EXCEEDED');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expectError(await api.request('POST', `/v1/chat/knowledge-stores/${storeId}/documents/uploads`, { key, body: { name: 'A file', format: 'pdf' } }), 429, 'QUOTA_EXCEEDED');

    // Deleting makes room again.
    expect((await api.request('DELETE', `/v1/chat/knowledge-stores/${storeId}/documents/${full.id}`, { key })).status).toBe(204);
    const smaller = await addDocument(key, storeId, 'Smaller', sectioned(400));
    expect(smaller).toMatchObject({ status: 'UPSERTED', chunkCount: 400 });
    expect(await storedChunks(key)).toBe(400);
  });

  it('lets only one of two documents that each fit, but not together, become live: never more than the quota', async () => {
    const { key } = await api.newOrg();
    const [left, right] = [await newStore(key), await newStore(key)];
    const [a, b] = await Promise.all([addDocument(key, left, 'Left', sectioned(600)), addDocument(key, right, 'Right', sectioned(600, 'rule'))]);
    expect([a.status, b.status].sort()).toEqual(['FAILED', 'UPSERTED']);
    expect([a, b].find((document) => document.status === 'FAILED').error.code).toBe('QUOTA_EXCEEDED');
    expect(await storedChunks(key)).toBe(600);
  });
});
