import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3VectorsClient } from '@aws-sdk/client-s3vectors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalFlatVectorStore } from '../../shared/knowledge/local-flat-index.ts';
import { S3VectorsStore } from '../../shared/knowledge/s3-vectors-store.ts';
import { VectorIndexNotFoundError, VectorStoreLimitError, type VectorRecord, type VectorStore } from '../../shared/knowledge/vector-store.ts';
import { S3VectorsSimulator } from '../support/s3-vectors-simulator.ts';

const simulator = new S3VectorsSimulator(mkdtempSync(join(tmpdir(), 's3-vectors-')));
let s3Store: S3VectorsStore;
beforeAll(async () => {
  const endpoint = await simulator.start();
  const client = new S3VectorsClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
  s3Store = new S3VectorsStore(client, 'platform-vectors');
});
afterAll(() => simulator.close());

let indexCount = 0;
const spec = () => ({ name: `ks-contract-${(indexCount += 1)}`, dimension: 3, nonFilterableMetadataKeys: ['text'] });
const vector = (key: string, data: number[], metadata: VectorRecord['metadata'] = {}): VectorRecord => ({ key, data, metadata });

const implementations: [string, () => VectorStore][] = [
  ['local flat index', () => new LocalFlatVectorStore(mkdtempSync(join(tmpdir(), 'flat-index-')))],
  ['S3 Vectors adapter', () => s3Store],
];

describe.each(implementations)('vector store contract: %s', (_name, make) => {
  it('finds the nearest vectors by cosine distance, best first, at most topK, with their metadata', async () => {
    const store = make();
    const index = spec();
    await store.createIndex(index);
    await store.createIndex(index);
    await store.putVectors(index.name, [
      vector('east', [1, 0, 0], { documentId: 'a', text: 'east' }),
      vector('north-east', [1, 1, 0], { documentId: 'a', text: 'north-east' }),
      vector('north', [0, 1, 0], { documentId: 'b', text: 'north' }),
    ]);
    const matches = await store.queryVectors(index.name, { vector: [2, 0.1, 0], topK: 2 });
    expect(matches.map((match) => match.key)).toEqual(['east', 'north-east']);
    expect(matches[0]!.distance).toBeCloseTo(1 - 2 / Math.hypot(2, 0.1), 5);
    expect(matches[0]!.metadata).toEqual({ documentId: 'a', text: 'east' });
  });

  it("applies S3 Vectors' filter grammar", async () => {
    const store = make();
    const index = spec();
    await store.createIndex(index);
    await store.putVectors(index.name, [
      vector('a1', [1, 0, 0], { documentId: 'a', version: 1, tags: ['faq', 'billing'] }),
      vector('a2', [1, 0, 0], { documentId: 'a', version: 2 }),
      vector('b1', [1, 0, 0], { documentId: 'b', version: 1, tags: ['legal'] }),
    ]);
    const keys = async (filter: Record<string, unknown>) =>
      (await store.queryVectors(index.name, { vector: [1, 0, 0], topK: 10, filter })).map((match) => match.key).sort();
    expect(await keys({ documentId: 'a' })).toEqual(['a1', 'a2']);
    expect(await keys({ documentId: { $ne: 'a' } })).toEqual(['b1']);
    expect(await keys({ version: { $gte: 2 } })).toEqual(['a2']);
    expect(await keys({ documentId: { $in: ['b', 'c'] } })).toEqual(['b1']);
    expect(await keys({ tags: 'billing' })).toEqual(['a1']);
    expect(await keys({ tags: { $exists: false } })).toEqual(['a2']);
    expect(await keys({ $and: [{ documentId: 'a' }, { version: { $lt: 2 } }] })).toEqual(['a1']);
    expect(await keys({ $or: [{ version: 2 }, { documentId: 'b' }] })).toEqual(['a2', 'b1']);
    expect(await keys({ documentId: { $nin: ['a'] } })).toEqual(['b1']);
  });

  it('overwrites a key, deletes by key, and lists every vector with its metadata', async () => {
    const store = make();
    const index = spec();
    await store.createIndex(index);
    await store.putVectors(index.name, [vector('k1', [1, 0, 0], { n: 1 }), vector('k2', [0, 1, 0], { n: 2 })]);
    await store.putVectors(index.name, [vector('k1', [0, 0, 1], { n: 3 })]);
    await store.deleteVectors(index.name, ['k2', 'missing']);
    const listed = [];
    for await (const entry of store.listVectors(index.name)) listed.push(entry);
    expect(listed).toEqual([{ key: 'k1', metadata: { n: 3 } }]);
    expect((await store.queryVectors(index.name, { vector: [0, 0, 1], topK: 1 }))[0]!.distance).toBeCloseTo(0, 5);
  });

  it("refuses what S3 Vectors refuses: 501 vectors a write, topK above 100, 2 KB of filterable metadata, another dimension", async () => {
    const store = make();
    const index = spec();
    await store.createIndex(index);
    const many = Array.from({ length: 501 }, (_, n) => vector(`v${n}`, [1, 0, 0]));
    await expect(store.putVectors(index.name, many)).rejects.toThrow(VectorStoreLimitError);
    await expect(store.queryVectors(index.name, { vector: [1, 0, 0], topK: 101 })).rejects.toThrow(VectorStoreLimitError);
    await expect(store.putVectors(index.name, [vector('big', [1, 0, 0], { note: 'x'.repeat(2100) })])).rejects.toThrow(VectorStoreLimitError);
    // Non-filterable metadata does not count towards the 2 KB.
    await store.putVectors(index.name, [vector('long-text', [1, 0, 0], { text: 'x'.repeat(2100) })]);
    await expect(store.putVectors(index.name, [vector('flat', [1, 0])])).rejects.toThrow(VectorStoreLimitError);
  });

  it('deletes an index with its vectors; a missing index is a VectorIndexNotFoundError, a second delete no error', async () => {
    const store = make();
    const index = spec();
    await store.createIndex(index);
    await store.putVectors(index.name, [vector('k', [1, 0, 0])]);
    await store.deleteIndex(index.name);
    await store.deleteIndex(index.name);
    await expect(store.queryVectors(index.name, { vector: [1, 0, 0], topK: 1 })).rejects.toThrow(VectorIndexNotFoundError);
  });
});

describe('S3 Vectors adapter on the wire', () => {
  it('sends the documented request shapes: float32 data, cosine float32 indexes, metadata and distance asked for', async () => {
    const index = spec();
    await s3Store.createIndex(index);
    await s3Store.putVectors(index.name, [vector('k', [1, 0, 0], { documentId: 'a', text: 't' })]);
    await s3Store.queryVectors(index.name, { vector: [1, 0, 0], topK: 1, filter: { documentId: 'a' } });
    const sent = simulator.requests.filter((request) => request.body.indexName === index.name);
    expect(sent.map((request) => request.operation)).toEqual(['CreateIndex', 'PutVectors', 'QueryVectors']);
    expect(sent[0]!.body).toEqual({
      vectorBucketName: 'platform-vectors',
      indexName: index.name,
      dataType: 'float32',
      dimension: 3,
      distanceMetric: 'cosine',
      metadataConfiguration: { nonFilterableMetadataKeys: ['text'] },
    });
    expect(sent[1]!.body.vectors).toEqual([{ key: 'k', data: { float32: [1, 0, 0] }, metadata: { documentId: 'a', text: 't' } }]);
    expect(sent[2]!.body).toMatchObject({ topK: 1, queryVector: { float32: [1, 0, 0] }, filter: { documentId: 'a' }, returnMetadata: true, returnDistance: true });
  });
});

describe('local flat index', () => {
  it('persists under its directory: another instance (another Lambda environment) reads what one wrote', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'flat-index-'));
    const writer = new LocalFlatVectorStore(directory);
    const reader = new LocalFlatVectorStore(directory);
    const index = spec();
    await writer.createIndex(index);
    await writer.putVectors(index.name, [vector('k1', [1, 0, 0])]);
    expect((await reader.queryVectors(index.name, { vector: [1, 0, 0], topK: 5 })).map((match) => match.key)).toEqual(['k1']);
    await writer.putVectors(index.name, [vector('k2', [0.9, 0.1, 0])]);
    expect((await reader.queryVectors(index.name, { vector: [1, 0, 0], topK: 5 })).map((match) => match.key)).toEqual(['k1', 'k2']);
  });

});
