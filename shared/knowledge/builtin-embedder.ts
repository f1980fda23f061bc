/**
 * The built-in embedding model (`builtin/hashed-ngrams-256`): offline and deterministic, since no npm package ships
 * embedding weights. A text becomes a 256-dimension vector of hashed features, L2-normalised: each lower-cased word
 * (stemmed, weight 1) and each character 3-gram inside a word (weight 0.25), hashed
 * by FNV-1a to a dimension and a sign. Similar wording gives similar vectors; meaning without shared words does not.
 */
import type { EmbeddingModelV4 } from '@ai-sdk/provider';
import { isStopWord, stem } from './reranker.ts';

export const builtinEmbeddingModelId = 'builtin/hashed-ngrams-256';
export const builtinEmbeddingDimensions = 256;

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

export function embedText(text: string, dimensions = builtinEmbeddingDimensions): number[] {
  const vector = new Float64Array(dimensions);
  const add = (feature: string, weight: number) => {
    const hash = fnv1a(feature);
    vector[hash % dimensions]! += hash & 0x80000000 ? -weight : weight;
  };
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    if (isStopWord(word)) continue;
    add(`w:${stem(word)}`, 1);
    const padded = `^${word}$`;
    for (let index = 0; index + 3 <= padded.length; index += 1) add(`g:${padded.slice(index, index + 3)}`, 0.25);
  }
  const norm = Math.hypot(...vector);
  return Array.from(vector, (value) => (norm === 0 ? 0 : value / norm));
}

/** The built-in embedder as an AI SDK embedding model, so `embed`/`embedMany` treat it like a provider's. */
export function builtinEmbeddingModel(): EmbeddingModelV4 {
  return {
    specificationVersion: 'v4',
    provider: 'builtin',
    modelId: builtinEmbeddingModelId,
    maxEmbeddingsPerCall: 2048,
    supportsParallelCalls: true,
    doEmbed: async ({ values }) => ({
      embeddings: values.map((value) => embedText(value)),
      usage: { tokens: values.reduce((sum, value) => sum + value.split(/\s+/).filter(Boolean).length, 0) },
      warnings: [],
    }),
  };
}
