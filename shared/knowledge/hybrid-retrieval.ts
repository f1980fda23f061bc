import type { EmbeddingModelV4, RerankingModelV4 } from '@ai-sdk/provider';
import { embed, rerank } from 'ai';
import MiniSearch from 'minisearch';
import type { RetrievedChunk } from '../schemas/knowledge.ts';
import { contentWords, isStopWord, stem } from './reranker.ts';
import { VectorIndexNotFoundError, vectorLimits, type VectorStore } from './vector-store.ts';

/** One chunk as the retrieval sees it: its vector key and what a citation shows. */
export interface IndexedChunk {
  key: string;
  documentId: string;
  documentName: string;
  version: number;
  text: string;
  headingPath: string[];
}

export interface RankedChunk extends IndexedChunk {
  score: number;
}

/** Reciprocal rank fusion's constant (Cormack et al.): dampens the weight of the very first ranks. */
export const rrfK = 60;

/**
 * Reciprocal rank fusion of ranked lists of keys: each key scores Σ weight/(k + rank) over the lists it appears in,
 * scaled so that first in every list is 1. Ties keep the order of first appearance.
 */
export function reciprocalRankFusion(rankings: readonly (readonly string[])[], k = rrfK, weights: readonly number[] = rankings.map(() => 1)): { key: string; score: number }[] {
  const scores = new Map<string, number>();
  rankings.forEach((ranking, list) => ranking.forEach((key, rank) => scores.set(key, (scores.get(key) ?? 0) + weights[list]! / (k + rank + 1))));
  const best = weights.reduce((sum, weight) => sum + weight, 0) / (k + 1);
  return [...scores.entries()].map(([key, score]) => ({ key, score: score / best })).sort((left, right) => right.score - left.score);
}

const searchOptions = {
  idField: 'key',
  fields: ['text', 'heading'],
  processTerm: (term: string) => (isStopWord(term.toLowerCase()) ? null : stem(term.toLowerCase())),
  extractField: (chunk: IndexedChunk, field: string) => (field === 'heading' ? chunk.headingPath.join(' ') : (chunk[field as keyof IndexedChunk] as string)),
};

/** What a snapshot holds: the chunks and MiniSearch's own serialisation of its index (no tokenising on load). */
interface Bm25Snapshot {
  format: 1;
  chunks: IndexedChunk[];
  index: ReturnType<MiniSearch<IndexedChunk>['toJSON']>;
}

/**
 * The BM25 side of hybrid retrieval: a MiniSearch index (BM25+) over a store's chunks, heading path included.
 * Search terms are the query's content words; prefix and small fuzzy matches catch plurals and typos.
 */
export class Bm25Index {
  private readonly search: MiniSearch<IndexedChunk>;
  private readonly chunks = new Map<string, IndexedChunk>();

  constructor(chunks: Iterable<IndexedChunk>, search?: MiniSearch<IndexedChunk>) {
    for (const chunk of chunks) this.chunks.set(chunk.key, chunk);
    this.search = search ?? new MiniSearch<IndexedChunk>(searchOptions);
    if (!search) this.search.addAll([...this.chunks.values()]);
  }

  /** The index as one JSON text, for `fromSnapshot` in another process. */
  toSnapshot(): string {
    const snapshot: Bm25Snapshot = { format: 1, chunks: [...this.chunks.values()], index: this.search.toJSON() };
    return JSON.stringify(snapshot);
  }

  static fromSnapshot(json: string): Bm25Index {
    const snapshot = JSON.parse(json) as Bm25Snapshot;
    if (snapshot.format !== 1) throw new Error(`Unknown BM25 snapshot format ${String(snapshot.format)}`);
    return new Bm25Index(snapshot.chunks, MiniSearch.loadJS(snapshot.index, searchOptions));
  }

  get size(): number {
    return this.chunks.size;
  }

  chunk(key: string): IndexedChunk | undefined {
    return this.chunks.get(key);
  }

  /** Keys of the best-matching chunks, best first. */
  rank(query: string, limit: number, accept: (chunk: IndexedChunk) => boolean = () => true): string[] {
    const terms = [...contentWords(query)].join(' ');
    if (!terms) return [];
    const results = this.search.search(terms, { boost: { heading: 3 } });
    const keys: string[] = [];
    for (const result of results) {
      const chunk = this.chunks.get(result.id as string);
      if (chunk && accept(chunk)) keys.push(chunk.key);
      if (keys.length >= limit) break;
    }
    return keys;
  }
}

/** What one search reads: the BM25 index of the chunks that answer, and the vector index holding their vectors. */
export interface SearchableIndex {
  bm25: Bm25Index;
  vectors: VectorStore;
  indexName: string;
  embeddingModel: EmbeddingModelV4;
}

/**
 * The vector ranking's weight in the fusion, BM25's being 1: measured on the evaluation set with the built-in
 * embedder (bench/knowledge-eval), whose hashed features know words, not meanings.
 */
export const vectorWeight = 0.5;

export interface SearchOptions {
  topK: number;
  /** Reorders the fused candidates when given. */
  reranker?: RerankingModelV4 | undefined;
  minScore?: number | undefined;
  /** Which rankings to fuse: both (the default), or one alone (the evaluation compares them). */
  methods?: readonly ('vector' | 'bm25')[];
}

/**
 * Hybrid search: the nearest vectors and the BM25 best matches, each a few times `topK` deep (vectors of versions
 * that no longer answer are dropped: they are not in the BM25 index), fused by reciprocal rank fusion, reranked
 * when asked, cut to `topK` above `minScore`.
 */
export async function searchIndex(index: SearchableIndex, query: string, options: SearchOptions): Promise<RetrievedChunk[]> {
  const depth = Math.min(vectorLimits.maxTopK, Math.max(20, options.topK * 5));
  const methods = options.methods ?? ['vector', 'bm25'];
  const rankings: string[][] = [];
  const weights: number[] = [];
  if (methods.includes('vector')) {
    rankings.push((await nearestKeys(index, query, depth)).filter((key) => index.bm25.chunk(key)));
    weights.push(vectorWeight);
  }
  if (methods.includes('bm25')) {
    rankings.push(index.bm25.rank(query, depth));
    weights.push(1);
  }
  let ranked = reciprocalRankFusion(rankings, rrfK, weights).slice(0, depth);
  if (options.reranker) {
    const candidates = ranked.slice(0, Math.max(options.topK * 4, 10));
    const { ranking } = await rerank({ model: options.reranker, query, documents: candidates.map(({ key }) => index.bm25.chunk(key)!.text) });
    ranked = ranking.map((entry) => ({ key: candidates[entry.originalIndex]!.key, score: entry.score }));
  }
  return ranked
    .filter((entry) => entry.score >= (options.minScore ?? 0))
    .slice(0, options.topK)
    .map(({ key, score }) => {
      const chunk = index.bm25.chunk(key)!;
      return { documentId: chunk.documentId, documentName: chunk.documentName, chunkId: key, text: chunk.text, score: Math.round(score * 10_000) / 10_000, headingPath: chunk.headingPath };
    });
}

async function nearestKeys(index: SearchableIndex, query: string, depth: number): Promise<string[]> {
  const { embedding } = await embed({ model: index.embeddingModel, value: query, maxRetries: 1 });
  try {
    return (await index.vectors.queryVectors(index.indexName, { vector: embedding, topK: depth })).map((match) => match.key);
  } catch (error) {
    if (error instanceof VectorIndexNotFoundError) return [];
    throw error;
  }
}
