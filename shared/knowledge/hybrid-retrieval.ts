import type { EmbeddingModelV4, RerankingModelV4 } from '@ai-sdk/provider';
import { embed, rerank } from 'ai';
import MiniSearch from 'minisearch';
import type { RetrievedChunk } from './knowledge-schemas.ts';
import { stemmer } from 'stemmer';
import { contentWords, isStopWord } from '../models/reranker.ts';
import { VectorIndexNotFoundError, vectorLimits, type VectorStore } from './vector-store.ts';

/** One chunk as the retrieval sees it: its vector key and what a citation shows. */
export interface IndexedChunk {
  key: string;
  documentId: string;
  documentName: string;
  version: number;
  text: string;
  headingPath: string[];
  /** A PDF's page the chunk is from, counted from 1. */
  page?: number;
}

export interface ScoredKey {
  key: string;
  score: number;
}

/** One ranking to fuse: its scores, how to bring them to 0–1, and its weight. */
export interface FusedRanking {
  ranking: readonly ScoredKey[];
  /** `max`: divided by the best score (BM25, unbounded); `min-max`: spread over 0–1 between the worst and best listed (cosine). */
  scale: 'max' | 'min-max';
  weight: number;
}

/**
 * Score fusion: each key scores the weighted sum of its scaled scores in the rankings it appears in (0 where it
 * does not), divided by the weights' sum, so that first in every ranking is 1. Unlike reciprocal rank fusion it
 * keeps how far ahead a result is: a chunk that one method finds far better than anything else is not buried under
 * chunks both methods find middling (bench/knowledge-eval: RRF 0.846, this 0.885 recall@2 on the held-out half).
 */
export function scoreFusion(rankings: readonly FusedRanking[]): ScoredKey[] {
  const total = rankings.reduce((sum, { weight }) => sum + weight, 0);
  const scores = new Map<string, number>();
  for (const { ranking, scale, weight } of rankings) {
    if (ranking.length === 0) continue;
    const best = Math.max(...ranking.map((entry) => entry.score));
    const floor = scale === 'max' ? 0 : Math.min(...ranking.map((entry) => entry.score));
    const spread = best - floor;
    for (const { key, score } of ranking) scores.set(key, (scores.get(key) ?? 0) + (weight * (spread > 0 ? (score - floor) / spread : 1)) / total);
  }
  return [...scores.entries()].map(([key, score]) => ({ key, score })).sort((left, right) => right.score - left.score);
}

/**
 * BM25 fields: the text, the heading path, and the section's own heading (`title`), which says most precisely what
 * the chunk is about. Terms: stop words left out, Porter-stemmed (the `stemmer` package).
 */
const searchOptions = {
  idField: 'key',
  fields: ['text', 'heading', 'title'],
  processTerm: (term: string) => (isStopWord(term.toLowerCase()) ? null : stemmer(term.toLowerCase())),
  extractField: (chunk: IndexedChunk, field: string) =>
    field === 'heading' ? chunk.headingPath.join(' ') : field === 'title' ? (chunk.headingPath.at(-1) ?? '') : (chunk[field as keyof IndexedChunk] as string),
};

/** Heading path ×3, section heading ×2 over the text: chosen on half the evaluation set (bench section 12). */
const fieldBoosts = { heading: 3, title: 2 };

/** Bumped whenever the fields or terms change: an older snapshot is then rebuilt, not misread. */
const snapshotFormat = 2;

/** What a snapshot holds: the chunks and MiniSearch's own serialisation of its index (no tokenising on load). */
interface Bm25Snapshot {
  format: typeof snapshotFormat;
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
    const snapshot: Bm25Snapshot = { format: snapshotFormat, chunks: [...this.chunks.values()], index: this.search.toJSON() };
    return JSON.stringify(snapshot);
  }

  static fromSnapshot(json: string): Bm25Index {
    const snapshot = JSON.parse(json) as Bm25Snapshot;
    if (snapshot.format !== snapshotFormat) throw new Error(`Unknown BM25 snapshot format ${String(snapshot.format)}`);
    return new Bm25Index(snapshot.chunks, MiniSearch.loadJS(snapshot.index, searchOptions));
  }

  get size(): number {
    return this.chunks.size;
  }

  chunk(key: string): IndexedChunk | undefined {
    return this.chunks.get(key);
  }

  /** The best-matching chunks' keys and BM25 scores, best first. */
  rank(query: string, limit: number): ScoredKey[] {
    const terms = [...contentWords(query)].join(' ');
    if (!terms) return [];
    return this.search
      .search(terms, { boost: fieldBoosts })
      .slice(0, limit)
      .map((result) => ({ key: result.id as string, score: result.score }));
  }
}

/** What one search reads: the BM25 index of the chunks that answer, and the vector index holding their vectors. */
export interface SearchableIndex {
  bm25: Bm25Index;
  vectors: VectorStore;
  indexName: string;
  embeddingModel: EmbeddingModelV4;
  /** The vectors' weight in the fusion (`vectorWeightFor` the store's embedder). */
  vectorWeight: number;
}

/**
 * The vector ranking's weight in the fusion (BM25's is the rest). With the built-in embedders, whose hashed features
 * know words, not meanings, BM25 leads: 0.2, chosen on half the evaluation set (bench section 12). A provider's
 * embedding model knows meanings, so its vectors weigh as much as BM25 (not measurable offline: no weights ship).
 */
export const vectorWeightFor = (embeddingModelId: string): number => (embeddingModelId.startsWith('builtin/') ? 0.2 : 0.5);

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
 * that no longer answer are dropped: they are not in the BM25 index), fused by their scores (`scoreFusion`), reranked
 * when asked, cut to `topK` above `minScore`.
 */
export async function searchIndex(index: SearchableIndex, query: string, options: SearchOptions): Promise<RetrievedChunk[]> {
  const depth = Math.min(vectorLimits.maxTopK, Math.max(20, options.topK * 5));
  const methods = options.methods ?? ['vector', 'bm25'];
  const rankings: FusedRanking[] = [];
  if (methods.includes('vector')) {
    const nearest = (await nearestVectors(index, query, depth)).filter(({ key }) => index.bm25.chunk(key));
    rankings.push({ ranking: nearest, scale: 'min-max', weight: index.vectorWeight });
  }
  if (methods.includes('bm25')) rankings.push({ ranking: index.bm25.rank(query, depth), scale: 'max', weight: 1 - index.vectorWeight });
  let ranked = scoreFusion(rankings).slice(0, depth);
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
      return { documentId: chunk.documentId, documentName: chunk.documentName, chunkId: key, text: chunk.text, score: Math.round(score * 10_000) / 10_000, headingPath: chunk.headingPath, ...(chunk.page === undefined ? {} : { page: chunk.page }) };
    });
}

/** The nearest vectors' keys and cosine similarities (1 − S3 Vectors' cosine distance). */
async function nearestVectors(index: SearchableIndex, query: string, depth: number): Promise<ScoredKey[]> {
  const { embedding } = await embed({ model: index.embeddingModel, value: query, maxRetries: 1 });
  try {
    return (await index.vectors.queryVectors(index.indexName, { vector: embedding, topK: depth })).map((match) => ({ key: match.key, score: 1 - match.distance }));
  } catch (error) {
    if (error instanceof VectorIndexNotFoundError) return [];
    throw error;
  }
}
