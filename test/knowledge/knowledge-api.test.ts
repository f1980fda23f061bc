import { existsSync, mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knowledgeRoutes } from '../../functions/knowledge/routes.ts';
import type { RouteDefinition } from '../../shared/platform/http/route.ts';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { replyDeltas } from '../support/sse.ts';
import { refundPolicy } from '../support/knowledge-fixtures.ts';
import { Receiver } from '../support/webhook-receiver.ts';

let api: TestApi;
const receiver = new Receiver();
let receiverUrl: string;
const vectorDir = mkdtempSync(join(tmpdir(), 'vectors-'));
/** A customer's web site: the pages URL documents are fetched from. */
let site: Server;
let siteUrl: string;
const pages: Record<string, { type: string; body: string; status?: number }> = {
  '/faq.md': { type: 'text/markdown; charset=utf-8', body: '# FAQ\n\n## Gift cards\nGift cards never expire and can be used in every shop of the chain.' },
  '/logo.png': { type: 'image/png', body: 'PNG' },
  '/gone': { type: 'text/plain', body: 'not here', status: 404 },
};

beforeAll(async () => {
  site = createServer((request, response) => {
    const page = pages[request.url ?? ''];
    response.writeHead(page?.status ?? (page ? 200 : 404), { 'content-type': page?.type ?? 'text/plain' });
    response.end(page?.body ?? '');
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  receiverUrl = await receiver.start();
  api = await startApi({ KNOWLEDGE_VECTOR_DIR: vectorDir }, { streamPoller: true, queues: { visibilityTimeoutSeconds: 5 } });
});
afterAll(async () => {
  await new Promise((resolve) => site.close(resolve));
  await api.close();
  await receiver.close();
});

async function newStore(key: string, body: Record<string, unknown> = {}): Promise<any> {
  const created = await api.request('POST', '/v1/chat/knowledge-stores', { key, body: { name: 'Help center', ...body } });
  expect(created.status, created.text).toBe(201);
  return created.body;
}

async function addDocument(key: string, storeId: string, body: Record<string, unknown>): Promise<any> {
  const created = await api.request('POST', `/v1/chat/knowledge-stores/${storeId}/documents`, { key, body });
  expect(created.status, created.text).toBe(202);
  return created.body;
}

async function settled(key: string, storeId: string, documentId: string): Promise<any> {
  const document = await eventually(
    async () => (await api.request('GET', `/v1/chat/knowledge-stores/${storeId}/documents/${documentId}`, { key })).body,
    (found) => found?.status !== 'PROCESSING',
  );
  return document;
}

async function query(key: string, storeId: string, body: Record<string, unknown>): Promise<any[]> {
  const response = await api.request('POST', `/v1/chat/knowledge-stores/${storeId}/query`, { key, body });
  expect(response.status, response.text).toBe(200);
  return response.body.data;
}

describe('knowledge stores', () => {
  it('creates a store with the documented defaults, reads, lists, updates and refuses bad settings', async () => {
    const { key } = await api.newOrg();
    const store = await newStore(key, { description: 'FAQ' });
    expect(store).toMatchObject({
      name: 'Help center',
      description: 'FAQ',
      config: { topK: 2, rerank: { enabled: false }, chunking: { size: 400, overlap: 60 }, embeddingModelId: 'builtin/hashed-words-512' },
      counts: { documents: 0, chunks: 0, bytes: 0 },
    });
    expect((await api.request('GET', `/v1/chat/knowledge-stores/${store.id}`, { key })).body).toEqual(store);
    await newStore(key, { name: 'Legal' });
    const listed = await api.request('GET', '/v1/chat/knowledge-stores?name=help', { key });
    expect(listed.body.data.map((item: any) => item.id)).toEqual([store.id]);
    const patched = await api.request('PATCH', `/v1/chat/knowledge-stores/${store.id}`, { key, body: { config: { topK: 5, rerank: { enabled: true } } } });
    expect(patched.body.config).toMatchObject({ topK: 5, rerank: { enabled: true }, chunking: { size: 400 } });
    expectError(await api.request('POST', '/v1/chat/knowledge-stores', { key, body: { name: 'x', config: { topK: 21 } } }), 400, 'VALIDATION_ERROR', 'config.topK');
    expectError(await api.request('POST', '/v1/chat/knowledge-stores', { key, body: { name: 'x', config: { embeddingModelId: 'nope/none' } } }), 400, 'VALIDATION_ERROR', 'config.embeddingModelId');
  });

  it('answers every route with the body its declared response schema describes', async () => {
    const { key } = await api.newOrg();
    const routes: Record<string, RouteDefinition> = knowledgeRoutes.routes;
    const store = await newStore(key);
    const document = await addDocument(key, store.id, { name: 'Refund policy', text: refundPolicy });
    await settled(key, store.id, document.id);
    const base = `/v1/chat/knowledge-stores/${store.id}`;
    const answers: [string, unknown][] = [
      ['createKnowledgeStore', store],
      ['createDocument', document],
      ['getKnowledgeStore', (await api.request('GET', base, { key })).body],
      ['listKnowledgeStores', (await api.request('GET', '/v1/chat/knowledge-stores', { key })).body],
      ['updateKnowledgeStore', (await api.request('PATCH', base, { key, body: { description: null } })).body],
      ['getDocument', (await api.request('GET', `${base}/documents/${document.id}`, { key })).body],
      ['listDocuments', (await api.request('GET', `${base}/documents`, { key })).body],
      ['queryKnowledgeStore', (await api.request('POST', `${base}/query`, { key, body: { query: 'refund' } })).body],
    ];
    for (const [name, body] of answers) expect(routes[name]!.response?.safeParse(body).error, name).toBeUndefined();
    expect(Object.values(routes).filter((route) => route.successStatus !== 204 && !route.response)).toEqual([]);
  });

  it('needs knowledge:write to change and knowledge:read to look', async () => {
    const { orgId, key } = await api.newOrg();
    const store = await newStore(key);
    const reader = await api.newKey(orgId, ['knowledge:read']);
    expect((await api.request('GET', `/v1/chat/knowledge-stores/${store.id}`, { key: reader })).status).toBe(200);
    expectError(await api.request('POST', '/v1/chat/knowledge-stores', { key: reader, body: { name: 'x' } }), 403, 'FORBIDDEN');
    const agentsOnly = await api.newKey(orgId, ['agents:read']);
    expectError(await api.request('POST', `/v1/chat/knowledge-stores/${store.id}/query`, { key: agentsOnly, body: { query: 'refund' } }), 403, 'FORBIDDEN');
  });

  it('ingests a Markdown document: PROCESSING, then UPSERTED with counts, an event on the webhook, and chunks a query finds', async () => {
    const { key } = await api.newOrg();
    const hook = await api.request('POST', '/v1/chat/webhooks', { key, body: { url: `${receiverUrl}/ok/knowledge/upserted`, events: ['knowledge_store.updated'] } });
    expect(hook.status, hook.text).toBe(201);
    receiver.secrets.set('/ok/knowledge/upserted', [hook.body.secret]);
    const store = await newStore(key);
    const submitted = await addDocument(key, store.id, { name: 'Refund policy', text: refundPolicy });
    expect(submitted).toMatchObject({ name: 'Refund policy', status: 'PROCESSING', version: 1, format: 'markdown' });

    const document = await settled(key, store.id, submitted.id);
    expect(document).toMatchObject({ status: 'UPSERTED', activeVersion: 1, chunkCount: 3 });
    const counted = await api.request('GET', `/v1/chat/knowledge-stores/${store.id}`, { key });
    expect(counted.body.counts).toEqual({ documents: 1, chunks: 3, bytes: Buffer.byteLength(refundPolicy) });
    const receipts = await eventually(() => receiver.eventsFor('/ok/knowledge/upserted'), (found) => found.length >= 1);
    expect(receipts.map((receipt) => receipt.body)).toEqual([
      expect.objectContaining({ type: 'knowledge_store.updated', data: { knowledgeStoreId: store.id, documentId: submitted.id, status: 'UPSERTED' } }),
    ]);

    const [best] = await query(key, store.id, { query: 'How many days do I have to ask for a refund?' });
    expect(best).toMatchObject({ documentId: submitted.id, documentName: 'Refund policy', headingPath: ['Refund policy', 'Deadlines'] });
    expect(best.text).toContain('within 30 days');
    expect(best.chunkId).toBe(`doc#${submitted.id}#v1#0`);
    expect(await query(key, store.id, { query: 'When is the support desk open?', topK: 1 })).toEqual([
      expect.objectContaining({ headingPath: ['Opening hours'] }),
    ]);
  });

  it('ingests HTML by its readable part: headings kept for the chunks, navigation and scripts left out', async () => {
    const { key } = await api.newOrg();
    const store = await newStore(key);
    const page = `<!doctype html><html><head><title>Shipping guide</title><script>var tracking = "secret-tracker";</script></head>
      <body><nav><a href="/">Home</a> <a href="/cart">Cart navigation menu</a></nav>
      <article><h1>Shipping guide</h1>
        <p>We ship every order from our warehouse in Lyon. Parcels leave the warehouse within two working days of payment.</p>
        <h2>International delivery</h2>
        <p>International parcels travel with a tracked courier and arrive within seven to ten working days.
           Customs duties are paid by the recipient on arrival, as the carrier collects them at the door.</p>
      </article><footer>Copyright footer text</footer></body></html>`;
    const submitted = await addDocument(key, store.id, { name: 'Shipping', format: 'html', text: page });
    expect(await settled(key, store.id, submitted.id)).toMatchObject({ status: 'UPSERTED', format: 'html' });
    const [best] = await query(key, store.id, { query: 'Who pays customs duties on international parcels?', topK: 1 });
    expect(best).toMatchObject({ documentName: 'Shipping', headingPath: ['Shipping guide', 'International delivery'] });
    expect(best.text).toContain('Customs duties are paid by the recipient');
    const everything = await query(key, store.id, { query: 'secret tracker navigation menu cart', topK: 5 });
    for (const chunk of everything) expect(chunk.text).not.toMatch(/secret-tracker|navigation menu/);
  });

  it('fetches a URL document through the egress guard, its format from its Content-Type; failures carry their code', async () => {
    const { key } = await api.newOrg();
    const store = await newStore(key);
    const faq = await addDocument(key, store.id, { name: 'FAQ', url: `${siteUrl}/faq.md` });
    expect(faq).toMatchObject({ url: `${siteUrl}/faq.md`, status: 'PROCESSING' });
    expect(faq).not.toHaveProperty('format');
    expect(await settled(key, store.id, faq.id)).toMatchObject({ status: 'UPSERTED', format: 'markdown', chunkCount: 1 });
    expect((await query(key, store.id, { query: 'Do gift cards expire?', topK: 1 }))[0]).toMatchObject({ documentId: faq.id, headingPath: ['FAQ', 'Gift cards'] });

    const failures: [string, string][] = [
      [`${siteUrl}/logo.png`, 'UNSUPPORTED_TYPE'],
      [`${siteUrl}/gone`, 'FETCH_FAILED'],
      // A private address is refused by the egress guard before any connection.
      ['http://10.0.0.1/intranet', 'FETCH_FAILED'],
    ];
    for (const [url, code] of failures) {
      const submitted = await addDocument(key, store.id, { name: url, url });
      expect(await settled(key, store.id, submitted.id), url).toMatchObject({ status: 'FAILED', error: { code } });
    }
    expectError(await api.request('POST', `/v1/chat/knowledge-stores/${store.id}/documents`, { key, body: { name: 'x', url: 'ftp://example.com/a' } }), 400, 'VALIDATION_ERROR');
  });

  it('fails a document without text with NO_TEXT, and the store keeps answering from the others', async () => {
    const { key } = await api.newOrg();
    const store = await newStore(key);
    const empty = await addDocument(key, store.id, { name: 'Blank', text: '  \n\n  ' });
    expect(await settled(key, store.id, empty.id)).toMatchObject({ status: 'FAILED', chunkCount: 0, error: { code: 'NO_TEXT' } });
    const listed = await api.request('GET', `/v1/chat/knowledge-stores/${store.id}/documents?status=FAILED`, { key });
    expect(listed.body.data.map((document: any) => document.id)).toEqual([empty.id]);
  });

  it('handles a redelivered ingestion message once: no duplicate chunks, counts unchanged, one event', async () => {
    const { orgId, key } = await api.newOrg();
    const store = await newStore(key);
    const [{ knowledgeUploadsRuntime }, { handleIngestionMessage }] = await Promise.all([import('../../shared/knowledge/knowledge-uploads-runtime.ts'), import('../../shared/knowledge/knowledge-ingestion.ts')]);
    const deps = knowledgeUploadsRuntime();
    // Submitted without a queue message, so that this test delivers it itself, twice.
    const document = await deps.knowledge.submitDocument({ orgId, storeId: store.id, newId: crypto.randomUUID(), name: 'Refund policy', format: 'markdown', bytes: Buffer.byteLength(refundPolicy), at: new Date().toISOString() });
    const message = { kind: 'document.ingest' as const, orgId, storeId: store.id, documentId: document.id, version: 1, text: refundPolicy };
    expect(await handleIngestionMessage(deps, message)).toBe('upserted');
    expect(await handleIngestionMessage(deps, message)).toBe('skipped');
    const keys: string[] = [];
    for await (const vector of deps.vectors.listVectors(`ks-${store.id}`)) keys.push(vector.key);
    expect(keys.sort()).toEqual([0, 1, 2].map((n) => `doc#${document.id}#v1#${n}`));
    expect((await api.request('GET', `/v1/chat/knowledge-stores/${store.id}`, { key })).body.counts).toEqual({ documents: 1, chunks: 3, bytes: Buffer.byteLength(refundPolicy) });
    const outbox = await deps.documentClient.send(
      new QueryCommand({
        TableName: deps.config.TABLE_NAME,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :outbox)',
        ExpressionAttributeValues: { ':pk': `ORG#${orgId}#KS#${store.id}`, ':outbox': 'OUTBOX#' },
      }),
    );
    expect(outbox.Items?.map((item) => item.payload.data)).toEqual([{ knowledgeStoreId: store.id, documentId: document.id, status: 'UPSERTED' }]);
  });

  it('fails a document left PROCESSING past the limit with TIMEOUT when it is next read', async () => {
    const { orgId, key } = await api.newOrg();
    const store = await newStore(key);
    const { runtime } = await import('../../shared/runtime.ts');
    const stale = new Date(Date.now() - 2 * 60 * 60 * 1000).toISOString();
    const stuck = await runtime().knowledge.submitDocument({ orgId, storeId: store.id, newId: crypto.randomUUID(), name: 'Stuck', format: 'text', bytes: 5, at: stale });
    const read = await api.request('GET', `/v1/chat/knowledge-stores/${store.id}/documents/${stuck.id}`, { key });
    expect(read.body).toMatchObject({ status: 'FAILED', error: { code: 'TIMEOUT' } });
  });

  it('replaces a document posted again under its name: the same id, a new version, never a mix of both versions', async () => {
    const { key } = await api.newOrg();
    const store = await newStore(key, { config: { topK: 5 } });
    const first = await addDocument(key, store.id, { name: 'Refund policy', text: refundPolicy });
    await settled(key, store.id, first.id);
    const second = await addDocument(key, store.id, { name: 'Refund policy', text: refundPolicy.replaceAll('30 days', '14 days') });
    expect(second).toMatchObject({ id: first.id, version: 2, status: 'PROCESSING' });
    const seenVersions = new Set<string>();
    const done = await eventually(
      async () => {
        const chunks = await query(key, store.id, { query: 'refund days' });
        const versions = new Set(chunks.map((chunk) => /#v(\d+)#/.exec(chunk.chunkId)![1]!));
        expect(versions.size).toBe(1);
        seenVersions.add([...versions][0]!);
        return chunks;
      },
      (chunks) => chunks[0]?.text.includes('14 days'),
    );
    expect(done[0].chunkId).toMatch(/#v2#/);
    expect((await api.request('GET', `/v1/chat/knowledge-stores/${store.id}`, { key })).body.counts).toMatchObject({ documents: 1, chunks: 3 });
    expect((await settled(key, store.id, first.id)).version).toBe(2);
  });

  it('reranks when asked: the chunk covering the whole question moves ahead of one repeating part of it', async () => {
    const { key } = await api.newOrg();
    const store = await newStore(key, { config: { topK: 1 } });
    const texts: Record<string, string> = {
      Passwords: 'Password reset: password reset, password reset, password reset.',
      'Account recovery':
        'Locked out of your account? Write to our support team from the address you signed up with, tell us your customer number and the date of your last order, and we will send a link to reset the password within one working day; the link works once and expires after one hour.',
      Invoices: 'Your account page lists your invoices and your plan.',
      Closing: 'To close your account, open the settings of the account.',
    };
    for (const [name, text] of Object.entries(texts)) await settled(key, store.id, (await addDocument(key, store.id, { name, text, format: 'text' })).id);
    const question = 'account password reset';
    expect((await query(key, store.id, { query: question })).map((chunk) => chunk.documentName)).toEqual(['Passwords']);
    expect((await query(key, store.id, { query: question, rerank: true })).map((chunk) => chunk.documentName)).toEqual(['Account recovery']);
  });

  it("answers 404 for another organization's store, and agents may name only their organization's stores", async () => {
    const owner = await api.newOrg();
    const other = await api.newOrg();
    const store = await newStore(owner.key);
    expectError(await api.request('POST', `/v1/chat/knowledge-stores/${store.id}/query`, { key: other.key, body: { query: 'refund' } }), 404, 'NOT_FOUND');
    expectError(await api.request('GET', `/v1/chat/knowledge-stores/${store.id}/documents`, { key: other.key }), 404, 'NOT_FOUND');
    const agent = { fullName: 'Ada', description: 'Support', role: 'Support' };
    expectError(await api.request('POST', '/v2/chat/agents', { key: other.key, body: { ...agent, knowledgeStoreId: store.id } }), 422, 'KNOWLEDGE_STORE_NOT_FOUND', 'knowledgeStoreId');
    expectError(await api.request('POST', '/v2/chat/agents', { key: owner.key, body: { ...agent, knowledgeStoreId: 'ks-unknown' } }), 422, 'KNOWLEDGE_STORE_NOT_FOUND', 'knowledgeStoreId');
    const created = await api.request('POST', '/v2/chat/agents', { key: owner.key, body: { ...agent, knowledgeStoreId: store.id } });
    expect(created.status, created.text).toBe(201);
  });

  it('streams the citations of a grounded reply before [DONE], as the stored message holds them', async () => {
    const { key } = await api.newOrg();
    const store = await newStore(key, { config: { topK: 1 } });
    const document = await addDocument(key, store.id, { name: 'Refund policy', text: refundPolicy });
    await settled(key, store.id, document.id);
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Ada', description: 'Support', role: 'Support', knowledgeStoreId: store.id } });
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
    const streamed = await api.request('POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, { key, body: { content: 'How many days do I have for a refund?' } });
    expect(streamed.status, streamed.text).toBe(200);
    const events = replyDeltas(streamed.text) as { id: string; delta: string; citations?: unknown[] }[];
    const last = events.at(-1)!;
    expect(events.slice(0, -1).every((event) => event.citations === undefined)).toBe(true);
    expect(last).toEqual({ id: events[0]!.id, delta: '', citations: [{ documentId: document.id, documentName: 'Refund policy', chunkId: `doc#${document.id}#v1#0`, score: expect.any(Number) }] });
    const messages = await api.request('GET', `/api/v1/chat/sessions/${session.body.id}/messages`, { key });
    const assistant = messages.body.data.find((message: { role: string }) => message.role === 'ASSISTANT');
    expect(assistant.id).toBe(last.id);
    expect(assistant.metadata.citations).toEqual(last.citations);
    expect(events.map((event) => event.delta).join('')).toBe(assistant.content);
  });

  it('retrieves a short question that stands alone by itself, and a follow-up with the question before it', async () => {
    const { key } = await api.newOrg();
    const store = await newStore(key, { config: { topK: 1 } });
    await settled(key, store.id, (await addDocument(key, store.id, { name: 'Refund policy', text: refundPolicy })).id);
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Ada', description: 'Support', role: 'Support', knowledgeStoreId: store.id } });
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
    const ask = async (content: string): Promise<string> => {
      const reply = await api.request('POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, { key, body: { content, stream: false } });
      expect(reply.status, reply.text).toBe(200);
      return reply.body.assistantMessage.content;
    };
    expect(await ask('How many days do I have for a refund, and when are refunds accepted?')).toMatch(/Deadlines \[1\]/);
    expect(await ask('When is support open?')).toMatch(/Opening hours \[1\]/);
    expect(await ask('And on Saturday?')).toMatch(/Opening hours \[1\]/);
  });

  it('grounds a chat turn in the store and cites the chunk; deleting the store waits for its agents, then removes its vectors', async () => {
    const { key } = await api.newOrg();
    const store = await newStore(key, { config: { topK: 1 } });
    const document = await addDocument(key, store.id, { name: 'Refund policy', text: refundPolicy });
    await settled(key, store.id, document.id);
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Ada', description: 'Support', role: 'Support', knowledgeStoreId: store.id } });
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
    const reply = await api.request('POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, { key, body: { content: 'How many days do I have for a refund?', stream: false } });
    expect(reply.status, reply.text).toBe(200);
    const assistant = reply.body.assistantMessage;
    expect(assistant.content).toMatch(/^According to Refund policy › Refund policy › Deadlines \[1\]: Refunds are accepted within 30 days/);
    expect(assistant.metadata.citations).toEqual([{ documentId: document.id, documentName: 'Refund policy', chunkId: `doc#${document.id}#v1#0`, score: expect.any(Number) }]);
    expect(assistant.metadata.timings.retrieval).toEqual(expect.any(Number));

    expectError(await api.request('DELETE', `/v1/chat/knowledge-stores/${store.id}`, { key }), 409, 'KNOWLEDGE_STORE_IN_USE');
    await api.request('PATCH', `/v2/chat/agents/${agent.body.id}`, { key, body: { knowledgeStoreId: null } });
    expect((await api.request('DELETE', `/v1/chat/knowledge-stores/${store.id}`, { key })).status).toBe(204);
    expect((await api.request('GET', `/v1/chat/knowledge-stores/${store.id}`, { key })).status).toBe(404);
    expect(await eventually(() => existsSync(join(vectorDir, `ks-${store.id}.json`)), (exists) => !exists)).toBe(false);
  });
});
