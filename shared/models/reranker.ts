import type { RerankingModelV4 } from '@ai-sdk/provider';

export const builtinRerankerId = 'builtin/lexical-coverage';

const stopWords = new Set(
  'a an and are as at be by can do does for from how i in is it my of on or the this to what when where which who why with you your'.split(' '),
);

export const isStopWord = (word: string): boolean => stopWords.has(word);

/**
 * A light English stemmer: strips the commonest inflections (`retries` → `retri`, `delivered` → `deliver`,
 * `sessions` → `session`), so that BM25 and the built-in embedder match a word's forms. Short words stay whole.
 */
export function stem(word: string): string {
  if (word.length <= 4) return word;
  for (const suffix of ['ations', 'ation', 'ings', 'ing', 'ies', 'ied', 'ers', 'er', 'ed', 'es', 'ly', 's']) {
    if (word.endsWith(suffix) && word.length - suffix.length >= 3) return word.slice(0, -suffix.length);
  }
  return word;
}

/** The distinct content words of a text, lower-cased. */
export function contentWords(text: string): Set<string> {
  return new Set((text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((word) => !stopWords.has(word)));
}

/**
 * The built-in reranker (offline, deterministic), as an AI SDK reranking model: a document's relevance is the
 * share of the query's distinct content words it contains (a word also counts through a shared 5-letter prefix,
 * at half weight). It promotes the chunk that covers the whole question over one that repeats a single term.
 */
export function builtinRerankingModel(): RerankingModelV4 {
  return {
    specificationVersion: 'v4',
    provider: 'builtin',
    modelId: builtinRerankerId,
    doRerank: async ({ documents, query, topN }) => {
      const wanted = [...contentWords(query)];
      const values = documents.type === 'text' ? documents.values : documents.values.map((value) => JSON.stringify(value));
      const scored = values.map((text, index) => {
        const words = contentWords(text);
        const prefixes = new Set([...words].map((word) => word.slice(0, 5)));
        const covered = wanted.reduce((sum, word) => sum + (words.has(word) ? 1 : word.length >= 5 && prefixes.has(word.slice(0, 5)) ? 0.5 : 0), 0);
        return { index, relevanceScore: wanted.length ? covered / wanted.length : 0 };
      });
      // A stable sort: equal relevance keeps the order the documents came in.
      scored.sort((left, right) => right.relevanceScore - left.relevanceScore);
      return { ranking: topN === undefined ? scored : scored.slice(0, topN) };
    },
  };
}
