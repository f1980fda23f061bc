/**
 * Knowledge retrieval: quality on the labelled evaluation set (bench/knowledge-eval: questions about a frozen copy of
 * our own documentation, each labelled with the section that answers it), ingestion throughput, and query latency
 * on a 10,000-chunk store, each beside its floor. In-process: the local flat index and the BM25 index, no HTTP.
 */
import { readdirSync, readFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { embedMany } from 'ai';
import { builtinEmbedders, builtinEmbeddingModel, builtinEmbeddingModelId, embedWords } from '../shared/models/builtin-embedder.ts';
import { chunkText, indexedText, type TextChunk } from '../shared/knowledge/chunker.ts';
import { Bm25Index, searchIndex, vectorWeightFor, type IndexedChunk, type SearchableIndex } from '../shared/knowledge/hybrid-retrieval.ts';
import { LocalFlatVectorStore } from '../shared/knowledge/local-flat-index.ts';
import { vectorLimits } from '../shared/knowledge/vector-store.ts';
import { knowledgeStoreConfig } from '../shared/knowledge/knowledge-schemas.ts';
import type { Check } from './report.ts';

const evalDir = resolve(import.meta.dirname, 'knowledge-eval');
/** The default built-in embedder's size. */
const dimension = builtinEmbedders[builtinEmbeddingModelId]!.dimensions;
const { chunking } = knowledgeStoreConfig.parse({});

interface Question {
  q: string;
  doc: string;
  section: string;
}

export interface RetrievalQuality {
  questions: number;
  chunks: number;
  recallAt2: number;
  mrrAt10: number;
  /**
   * The same on each half of the set: the retrieval's settings (field boosts, vector weight) were chosen on the
   * tuning half (even-numbered questions) only; the held-out half (odd-numbered) says whether they generalise.
   */
  tuning: { recallAt2: number; mrrAt10: number };
  heldOut: { recallAt2: number; mrrAt10: number };
}

export interface KnowledgeBenchResult {
  quality: { bm25: RetrievalQuality; vector: RetrievalQuality; hybrid: RetrievalQuality };
  ingestion: { chunks: number; chunksPerSecond: number; floorEmbeddingChunksPerSecond: number };
  query: { chunks: number; queries: number; p50Ms: number; p99Ms: number; floorScanP50Ms: number };
  /**
   * A cold process's first query on the large store (vector file loaded, BM25 index made, one search): with the
   * index rebuilt from the vectors' metadata, and with it loaded from its snapshot; floor, reading and parsing the
   * snapshot's JSON alone. Medians of a few rounds; snapshot size in bytes.
   */
  cold: { chunks: number; rounds: number; rebuildMs: number; snapshotMs: number; floorReadParseMs: number; snapshotBytes: number };
  /** What retrieval adds to a turn on a small store (the evaluation store), beside the query's embedding alone. */
  turn: { chunks: number; p50Ms: number; floorEmbeddingP50Ms: number };
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
};

async function buildIndex(directory: string, name: string, documents: { name: string; chunks: TextChunk[] }[]): Promise<{ index: SearchableIndex; chunks: IndexedChunk[]; ms: number }> {
  const started = performance.now();
  const vectors = new LocalFlatVectorStore(directory);
  const embeddingModel = builtinEmbeddingModel();
  await vectors.createIndex({ name, dimension, nonFilterableMetadataKeys: ['documentName', 'text', 'headingPath'] });
  const chunks: IndexedChunk[] = [];
  const records = [];
  for (const document of documents) {
    const { embeddings } = await embedMany({ model: embeddingModel, values: document.chunks.map(indexedText), maxParallelCalls: 4 });
    for (const [position, chunk] of document.chunks.entries()) {
      const key = `doc#${document.name}#v1#${chunk.index}`;
      chunks.push({ key, documentId: document.name, documentName: document.name, version: 1, text: chunk.text, headingPath: chunk.headingPath });
      records.push({ key, data: embeddings[position]!, metadata: { documentId: document.name, version: 1, documentName: document.name, text: chunk.text, headingPath: chunk.headingPath } });
    }
  }
  for (let start = 0; start < records.length; start += vectorLimits.maxVectorsPerWrite) await vectors.putVectors(name, records.slice(start, start + vectorLimits.maxVectorsPerWrite));
  const bm25 = new Bm25Index(chunks);
  return { index: { bm25, vectors, indexName: name, embeddingModel, vectorWeight: vectorWeightFor(builtinEmbeddingModelId) }, chunks, ms: performance.now() - started };
}

function corpusDocuments(): { name: string; text: string }[] {
  const corpus = join(evalDir, 'corpus');
  return readdirSync(corpus)
    .filter((file) => file.endsWith('.md'))
    .sort()
    .map((file) => ({ name: file, text: readFileSync(join(corpus, file), 'utf8') }));
}

/** recall@2 (a relevant chunk among the first two) and MRR over the first ten, for one way of ranking. */
export async function evaluateRetrieval(index: SearchableIndex, questions: Question[], methods: ('vector' | 'bm25')[], chunks: number): Promise<RetrievalQuality> {
  const ranks: number[] = [];
  for (const question of questions) {
    const results = await searchIndex(index, question.q, { topK: 10, methods });
    ranks.push(results.findIndex((chunk) => chunk.documentId === question.doc && chunk.headingPath.includes(question.section)));
  }
  const figures = (subset: number[]) => ({
    recallAt2: subset.filter((rank) => rank >= 0 && rank < 2).length / subset.length,
    mrrAt10: subset.reduce((sum, rank) => sum + (rank >= 0 ? 1 / (rank + 1) : 0), 0) / subset.length,
  });
  return {
    questions: questions.length,
    chunks,
    ...figures(ranks),
    tuning: figures(ranks.filter((_, index) => index % 2 === 0)),
    heldOut: figures(ranks.filter((_, index) => index % 2 === 1)),
  };
}

export async function measureKnowledge(log: (line: string) => void): Promise<KnowledgeBenchResult> {
  const directory = mkdtempSync(join(tmpdir(), 'bench-vectors-'));
  try {
    const questions = JSON.parse(readFileSync(join(evalDir, 'questions.json'), 'utf8')) as Question[];
    const documents = corpusDocuments().map((document) => ({ name: document.name, chunks: chunkText(document.text, chunking) }));
    const { index, chunks } = await buildIndex(directory, 'eval', documents);
    log(`knowledge: ${questions.length} labelled questions over ${chunks.length} chunks of ${documents.length} documents`);
    const quality = {
      bm25: await evaluateRetrieval(index, questions, ['bm25'], chunks.length),
      vector: await evaluateRetrieval(index, questions, ['vector'], chunks.length),
      hybrid: await evaluateRetrieval(index, questions, ['vector', 'bm25'], chunks.length),
    };

    const turnLatencies: number[] = [];
    const embedLatencies: number[] = [];
    for (const question of [...questions, ...questions]) {
      let started = performance.now();
      await searchIndex(index, question.q, { topK: 2 });
      turnLatencies.push(performance.now() - started);
      started = performance.now();
      embedWords(question.q);
      embedLatencies.push(performance.now() - started);
    }

    // A 10,000-chunk store: the corpus's chunks, copied with a marker word so that copies differ.
    const target = 10_000;
    const copies = Math.ceil(target / chunks.length);
    const large = Array.from({ length: copies }, (_, copy) =>
      documents.map((document) => ({ name: `${document.name}-${copy}`, chunks: document.chunks.map((chunk) => ({ ...chunk, text: `${chunk.text} copy${copy}` })) })),
    ).flat();
    log(`knowledge: ingesting ${copies} copies of the corpus (≈${target} chunks) into the local flat index`);
    const built = await buildIndex(directory, 'large', large);
    const embedStart = performance.now();
    for (const chunk of built.chunks) embedWords(chunk.text);
    const embedMs = performance.now() - embedStart;

    const queries = questions.map((question) => question.q);
    for (const query of queries.slice(0, 10)) await searchIndex(built.index, query, { topK: 2 });
    const latencies: number[] = [];
    for (let round = 0; round < 4; round += 1) {
      for (const query of queries) {
        const started = performance.now();
        await searchIndex(built.index, query, { topK: 2 });
        latencies.push(performance.now() - started);
      }
    }
    // The floor: one exact scan of every vector (dot products only), what any flat search of this store costs.
    const rows = Float32Array.from(built.chunks.flatMap((chunk) => embedWords(chunk.text)));
    const scans: number[] = [];
    for (const query of queries) {
      const vector = embedWords(query);
      const started = performance.now();
      let best = -Infinity;
      for (let row = 0; row < built.chunks.length; row += 1) {
        let dot = 0;
        for (let d = 0; d < dimension; d += 1) dot += vector[d]! * rows[row * dimension + d]!;
        if (dot > best) best = dot;
      }
      scans.push(performance.now() - started);
    }
    const cold = await measureColdQuery(directory, built.index, queries[0]!);
    return {
      quality,
      cold,
      ingestion: {
        chunks: built.chunks.length,
        chunksPerSecond: built.chunks.length / (built.ms / 1000),
        floorEmbeddingChunksPerSecond: built.chunks.length / (embedMs / 1000),
      },
      turn: { chunks: chunks.length, p50Ms: percentile(turnLatencies, 50), floorEmbeddingP50Ms: percentile(embedLatencies, 50) },
      query: { chunks: built.chunks.length, queries: latencies.length, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99), floorScanP50Ms: percentile(scans, 50) },
    };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

/** Cold first queries on the large store, without and with the BM25 snapshot (docs/knowledge.md#retrieval). */
async function measureColdQuery(directory: string, warm: SearchableIndex, query: string): Promise<KnowledgeBenchResult['cold']> {
  const snapshotFile = join(directory, 'bm25-snapshot.json');
  writeFileSync(snapshotFile, warm.bm25.toSnapshot());
  const rounds = 5;
  const rebuild: number[] = [];
  const snapshot: number[] = [];
  const floor: number[] = [];
  const coldIndex = async (bm25: (vectors: LocalFlatVectorStore) => Promise<Bm25Index>) => {
    const started = performance.now();
    const vectors = new LocalFlatVectorStore(directory);
    await searchIndex({ ...warm, vectors, bm25: await bm25(vectors) }, query, { topK: 2 });
    return performance.now() - started;
  };
  for (let round = 0; round < rounds; round += 1) {
    rebuild.push(
      await coldIndex(async (vectors) => {
        const chunks: IndexedChunk[] = [];
        for await (const vector of vectors.listVectors(warm.indexName)) {
          const { documentId, documentName, version, text, headingPath } = vector.metadata;
          chunks.push({ key: vector.key, documentId: String(documentId), documentName: String(documentName), version: Number(version), text: String(text), headingPath: headingPath as string[] });
        }
        return new Bm25Index(chunks);
      }),
    );
    snapshot.push(await coldIndex(async () => Bm25Index.fromSnapshot(readFileSync(snapshotFile, 'utf8'))));
    const started = performance.now();
    JSON.parse(readFileSync(snapshotFile, 'utf8'));
    floor.push(performance.now() - started);
  }
  return { chunks: warm.bm25.size, rounds, rebuildMs: percentile(rebuild, 50), snapshotMs: percentile(snapshot, 50), floorReadParseMs: percentile(floor, 50), snapshotBytes: readFileSync(snapshotFile).length };
}

/** Knowledge stores' targets (issue 14). */
export const knowledgeTargets = {
  hybridRecallAt2: 0.85,
  queryP50Ms: 20,
  turnOverheadP50Ms: 10,
};

const round3 = (value: number) => Math.round(value * 1000) / 1000;
const round1 = (value: number) => Math.round(value * 10) / 10;

export function knowledgeChecks(result: KnowledgeBenchResult): Check[] {
  const { bm25, vector, hybrid } = result.quality;
  const best = Math.max(bm25.recallAt2, vector.recallAt2);
  return [
    { figure: 'knowledge hybrid recall@2 vs the better single method', value: round3(hybrid.recallAt2), unit: '', target: round3(best), comparison: '>=', pass: hybrid.recallAt2 >= best },
    { figure: 'knowledge hybrid recall@2', value: round3(hybrid.recallAt2), unit: '', target: knowledgeTargets.hybridRecallAt2, comparison: '>=', pass: hybrid.recallAt2 >= knowledgeTargets.hybridRecallAt2 },
    { figure: `knowledge retrieval in a turn p50 (${result.turn.chunks} chunks)`, value: round1(result.turn.p50Ms), unit: 'ms', target: knowledgeTargets.turnOverheadP50Ms, comparison: '<=', pass: result.turn.p50Ms <= knowledgeTargets.turnOverheadP50Ms },
    { figure: `knowledge query p50 (${result.query.chunks} chunks)`, value: round1(result.query.p50Ms), unit: 'ms', target: knowledgeTargets.queryP50Ms, comparison: '<=', pass: result.query.p50Ms <= knowledgeTargets.queryP50Ms },
    { figure: `knowledge cold first query with the BM25 snapshot vs rebuilt (${result.cold.chunks} chunks)`, value: round1(result.cold.snapshotMs), unit: 'ms', target: round1(result.cold.rebuildMs), comparison: '<=', pass: result.cold.snapshotMs <= result.cold.rebuildMs },
  ];
}

export function knowledgeReport(result: KnowledgeBenchResult): string[] {
  const { quality, ingestion, query } = result;
  const pair = (figures: { recallAt2: number; mrrAt10: number }) => `${figures.recallAt2.toFixed(3)} / ${figures.mrrAt10.toFixed(3)}`;
  const row = (name: string, figures: RetrievalQuality) =>
    `     ${name.padEnd(18)} recall@2 / MRR@10: all ${pair(figures)}   tuning half ${pair(figures.tuning)}   held-out half ${pair(figures.heldOut)}`;
  return [
    '',
    `12. Knowledge retrieval (in-process: local flat index, MiniSearch BM25, built-in embedder ${builtinEmbeddingModelId}) — targets: hybrid recall@2 ≥ ${knowledgeTargets.hybridRecallAt2} and ≥ either method alone; query p50 ≤ ${knowledgeTargets.queryP50Ms} ms`,
    `   Evaluation set: ${quality.hybrid.questions} questions over ${quality.hybrid.chunks} chunks (bench/knowledge-eval); settings chosen on the tuning half (even-numbered questions) only`,
    row('BM25 alone', quality.bm25),
    row('embedding alone', quality.vector),
    row('hybrid (fused)', quality.hybrid),
    `   Ingestion (chunk, embed, write vectors): ${ingestion.chunksPerSecond.toFixed(0)} chunks/s over ${ingestion.chunks} chunks; floor, embedding alone: ${ingestion.floorEmbeddingChunksPerSecond.toFixed(0)} chunks/s`,
    `   Retrieval in a turn on the evaluation store (${result.turn.chunks} chunks): p50 ${result.turn.p50Ms.toFixed(2)} ms; floor, embedding the message alone: p50 ${result.turn.floorEmbeddingP50Ms.toFixed(3)} ms`,
    `   Query on ${query.chunks} chunks, ${query.queries} queries (embed, flat search, BM25, fusion): p50 ${query.p50Ms.toFixed(2)} ms, p99 ${query.p99Ms.toFixed(2)} ms; floor, one bare scan of every vector: p50 ${query.floorScanP50Ms.toFixed(2)} ms`,
    `   Cold first query on ${result.cold.chunks} chunks (vector file loaded, BM25 index made, one search; median of ${result.cold.rounds}): BM25 rebuilt from the vectors ${result.cold.rebuildMs.toFixed(0)} ms, loaded from its snapshot (${(result.cold.snapshotBytes / 1024 / 1024).toFixed(1)} MiB) ${result.cold.snapshotMs.toFixed(0)} ms; floor, reading and parsing the snapshot alone: ${result.cold.floorReadParseMs.toFixed(0)} ms`,
  ];
}

if (process.argv[1] === import.meta.filename) console.log(JSON.stringify(await measureKnowledge(console.log), null, 2));
