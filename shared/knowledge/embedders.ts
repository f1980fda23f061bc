/**
 * Which embedder built a store's vectors: a catalog embedding model (`provider/name`) and the dimensions it was
 * asked for. A query must embed with the very same embedder, or its vector means nothing to the index.
 */
import type { EmbeddingModelV4 } from '@ai-sdk/provider';
import { builtinEmbedders } from '../models/builtin-embedder.ts';

export interface Embedder {
  modelId: string;
  dimensions: number;
}

/** S3 Vectors' largest index dimension. */
export const maxEmbeddingDimensions = 4096;

/** Titan Text Embeddings v2 answers in one of three sizes (1024 by default). */
const titanV2Dimensions = [256, 512, 1024];

/**
 * The embedder a store configured with `modelId` (`provider/name`) and optional `dimensions` gets, or why it
 * cannot: a built-in one has its own; Titan v2 takes 256, 512 or 1024 (default 1024); any other model must be
 * told its dimensions, since they are the index's and cannot be guessed before the first call.
 */
export function embedderFor(modelId: string, dimensions: number | undefined): Embedder | { problem: string } {
  const builtin = builtinEmbedders[modelId];
  if (builtin) {
    if (dimensions !== undefined && dimensions !== builtin.dimensions) return { problem: `${modelId} has ${builtin.dimensions} dimensions` };
    return { modelId, dimensions: builtin.dimensions };
  }
  if (modelId.includes('amazon.titan-embed-text-v2')) {
    if (dimensions !== undefined && !titanV2Dimensions.includes(dimensions)) return { problem: `Titan Text Embeddings v2 takes ${titanV2Dimensions.join(', ')} dimensions` };
    return { modelId, dimensions: dimensions ?? 1024 };
  }
  if (dimensions === undefined) return { problem: `give config.embeddingDimensions: the number of dimensions ${modelId} answers with` };
  return { modelId, dimensions };
}

export const sameEmbedder = (left: Embedder, right: Embedder): boolean => left.modelId === right.modelId && left.dimensions === right.dimensions;

/** An embedding of another length than the embedder's: the deployment's model is not the one that built the store. */
export class EmbeddingDimensionsError extends Error {
  override readonly name = 'EmbeddingDimensionsError';
}

/**
 * The model asked for `dimensions` on every call (the AI SDK's `dimensions`, and Bedrock Titan's own option), each
 * embedding checked to have them, so that a model answering another size fails here instead of in the index.
 */
export function withDimensions(model: EmbeddingModelV4, dimensions: number, send: boolean): EmbeddingModelV4 {
  return {
    specificationVersion: 'v4',
    provider: model.provider,
    modelId: model.modelId,
    maxEmbeddingsPerCall: model.maxEmbeddingsPerCall,
    supportsParallelCalls: model.supportsParallelCalls,
    doEmbed: async (options) => {
      const result = await model.doEmbed(send ? { ...options, dimensions, providerOptions: { ...options.providerOptions, amazonBedrock: { dimensions } } } : options);
      const wrong = result.embeddings.find((embedding) => embedding.length !== dimensions);
      if (wrong) throw new EmbeddingDimensionsError(`${model.modelId} answered ${wrong.length} dimensions instead of ${dimensions}.`);
      return result;
    },
  };
}
