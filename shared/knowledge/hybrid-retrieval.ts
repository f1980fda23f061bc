import MiniSearch from 'minisearch';
import { contentWords } from './reranker.ts';

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
 * Reciprocal rank fusion of ranked lists of keys: each key scores Σ 1/(k + rank) over the lists it appears in,
 * scaled so that first in every list is 1. Ties keep the order of first appearance.
 */
export function reciprocalRankFusion(rankings: readonly (readonly string[])[], k = rrfK): { key: string; score: number }[] {
  const scores = new Map<string, number>();
  for (const ranking of rankings) ranking.forEach((key, rank) => scores.set(key, (scores.get(key) ?? 0) + 1 / (k + rank + 1)));
  const best = rankings.length / (k + 1);
  return [...scores.entries()].map(([key, score]) => ({ key, score: score / best })).sort((left, right) => right.score - left.score);
}

/**
 * The BM25 side of hybrid retrieval: a MiniSearch index (BM25+) over a store's chunks, heading path included.
 * Search terms are the query's content words; prefix and small fuzzy matches catch plurals and typos.
 */
export class Bm25Index {
  private readonly search = new MiniSearch<IndexedChunk>({
    idField: 'key',
    fields: ['text', 'heading'],
    extractField: (chunk, field) => (field === 'heading' ? chunk.headingPath.join(' ') : (chunk[field as keyof IndexedChunk] as string)),
  });
  private readonly chunks = new Map<string, IndexedChunk>();

  constructor(chunks: Iterable<IndexedChunk>) {
    for (const chunk of chunks) this.chunks.set(chunk.key, chunk);
    this.search.addAll([...this.chunks.values()]);
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
    const results = this.search.search(terms, { prefix: (term) => term.length >= 5, fuzzy: (term) => (term.length >= 6 ? 0.15 : false), boost: { heading: 1.5 } });
    const keys: string[] = [];
    for (const result of results) {
      const chunk = this.chunks.get(result.id as string);
      if (chunk && accept(chunk)) keys.push(chunk.key);
      if (keys.length >= limit) break;
    }
    return keys;
  }
}
