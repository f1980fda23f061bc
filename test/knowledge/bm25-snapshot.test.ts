import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { startFauxqs } from 'fauxqs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Bm25Index } from '../../shared/knowledge/hybrid-retrieval.ts';
import { LocalSnapshotFiles, S3Snapshots, type IndexSnapshots } from '../../shared/knowledge/index-snapshots.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';

let api: TestApi;
const vectorDir = mkdtempSync(join(tmpdir(), 'vectors-'));
let s3: { server: Awaited<ReturnType<typeof startFauxqs>>; client: S3Client };

beforeAll(async () => {
  api = await startApi({ KNOWLEDGE_VECTOR_DIR: vectorDir }, { queues: { visibilityTimeoutSeconds: 5 } });
  // fauxqs also speaks S3: the S3 adapter runs against it, as the recordings do locally.
  const server = await startFauxqs({ port: 0, logger: false, defaultRegion: 'us-east-1' });
  const client = new S3Client({ endpoint: `http://127.0.0.1:${server.port}`, forcePathStyle: true, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  await client.send(new CreateBucketCommand({ Bucket: 'snapshots' }));
  s3 = { server, client };
});
afterAll(async () => {
  await api.close();
  s3.client.destroy();
  await s3.server.stop();
});

const adapters: [string, () => IndexSnapshots][] = [
  ['local files', () => new LocalSnapshotFiles(mkdtempSync(join(tmpdir(), 'snapshots-')))],
  ['S3', () => new S3Snapshots(s3.client, 'snapshots')],
];

describe.each(adapters)('BM25 snapshots (%s)', (_name, create) => {
  it('answers the snapshot of the revision asked for, nothing for another, and nothing once the index is deleted', async () => {
    const snapshots = create();
    const index = `ks-${crypto.randomUUID()}`;
    expect(await snapshots.load(index, 1)).toBeUndefined();
    await snapshots.save(index, 1, '{"r":1}');
    await snapshots.save(index, 2, '{"r":2}');
    expect(await snapshots.load(index, 2)).toBe('{"r":2}');
    expect(await snapshots.load(index, 3)).toBeUndefined();
    const other = `ks-${crypto.randomUUID()}`;
    await snapshots.save(other, 1, '{"other":1}');
    await snapshots.deleteAll(index);
    expect(await snapshots.load(index, 2)).toBeUndefined();
    expect(await snapshots.load(other, 1)).toBe('{"other":1}');
  });
});

describe('the BM25 snapshot of a store', () => {
  it('ranks exactly as the index it was taken from', () => {
    const chunks = ['Refunds are accepted within 30 days.', 'Shipping costs are refunded when damaged.', 'The desk opens at nine.'].map((text, n) => ({
      key: `doc#d#v1#${n}`,
      documentId: 'd',
      documentName: 'Policy',
      version: 1,
      text,
      headingPath: n === 2 ? ['Opening hours'] : ['Refunds'],
    }));
    const built = new Bm25Index(chunks);
    const loaded = Bm25Index.fromSnapshot(built.toSnapshot());
    for (const query of ['refund days', 'when does the desk open', 'shipping damaged']) expect(loaded.rank(query, 3)).toEqual(built.rank(query, 3));
    expect(loaded.chunk('doc#d#v1#2')).toEqual(chunks[2]);
  });

  it('is written at the store’s revision on the first query, and a cold process answers from it without listing a vector', async () => {
    const { key } = await api.newOrg();
    const store = (await api.request('POST', '/v1/chat/knowledge-stores', { key, body: { name: 'Help center', config: { topK: 1 } } })).body;
    const text = '# Refund policy\n\n## Deadlines\nRefunds are accepted within 30 days of purchase.\n\n# Opening hours\nOur desk is open Monday to Friday.';
    const document = (await api.request('POST', `/v1/chat/knowledge-stores/${store.id}/documents`, { key, body: { name: 'Policy', text } })).body;
    await eventually(async () => (await api.request('GET', `/v1/chat/knowledge-stores/${store.id}/documents/${document.id}`, { key })).body.status, (status) => status === 'UPSERTED');
    const question = { query: 'When is the desk open?' };
    const warm = await api.request('POST', `/v1/chat/knowledge-stores/${store.id}/query`, { key, body: question });
    expect(warm.body.data).toEqual([expect.objectContaining({ headingPath: ['Opening hours'] })]);
    const snapshotDir = join(vectorDir, 'bm25', `ks-${store.id}`);
    expect(readdirSync(snapshotDir)).toEqual([expect.stringMatching(/^bm25-r\d+\.json$/)]);

    // A cold process: fresh modules (no index in memory), and a vector store that must not be listed.
    vi.resetModules();
    const [{ knowledgeRuntime }, { retrieve }] = await Promise.all([import('../../shared/knowledge/knowledge-runtime.ts'), import('../../shared/knowledge/knowledge.ts')]);
    const deps = knowledgeRuntime();
    const listVectors = vi.spyOn(deps.vectors, 'listVectors');
    const stored = (await deps.knowledge.getStore(store.orgId, store.id))!;
    expect((await retrieve(deps, stored, question.query)).map((chunk) => chunk.text)).toEqual(warm.body.data.map((chunk: any) => chunk.text));
    expect(listVectors).not.toHaveBeenCalled();

    // A new revision (a second document) is rebuilt from the vectors once, and replaces the old snapshot.
    const second = (await api.request('POST', `/v1/chat/knowledge-stores/${store.id}/documents`, { key, body: { name: 'Gift cards', text: 'Gift cards never expire.' } })).body;
    await eventually(async () => (await api.request('GET', `/v1/chat/knowledge-stores/${store.id}/documents/${second.id}`, { key })).body.status, (status) => status === 'UPSERTED');
    const next = (await deps.knowledge.getStore(store.orgId, store.id))!;
    expect((await retrieve(deps, next, 'Do gift cards expire?'))[0]).toMatchObject({ documentId: second.id });
    expect(listVectors).toHaveBeenCalledTimes(1);
    expect(readdirSync(snapshotDir)).toEqual([`bm25-r${next.revision}.json`]);

    // Deleting the store removes its snapshots with its vectors: they hold the chunks' text.
    expect((await api.request('DELETE', `/v1/chat/knowledge-stores/${store.id}`, { key })).status).toBe(204);
    expect(await eventually(() => existsSync(snapshotDir), (exists) => !exists)).toBe(false);
  });
});
