import * as z from 'zod';
import { pageOf, paginationQuery } from '../platform/schemas/common.ts';

/**
 * LLMs answer turns; STT and TTS serve calls; STS (speech-to-speech) models hear and answer the calls of `sts`
 * agents on their own; EMBEDDING and RERANK models serve knowledge stores.
 */
export const modelTypes = ['LLM', 'STT', 'TTS', 'STS', 'EMBEDDING', 'RERANK'] as const;
export type ModelType = (typeof modelTypes)[number];
/**
 * `anthropic` models are only ever an organization's own (docs/models.md#your-own-provider-keys); `amazon`,
 * `deepgram`, `cartesia`, `rime` and `elevenlabs` are speech providers (STT and TTS models, docs/voice.md#speech-providers).
 */
export const modelProviders = ['builtin', 'bedrock', 'openai-compatible', 'anthropic', 'amazon', 'deepgram', 'cartesia', 'rime', 'elevenlabs'] as const;
export type ModelProvider = (typeof modelProviders)[number];
/** `deployment`: configured for every organization; `organization`: reached with the organization's own key. */
export const modelSources = ['deployment', 'organization'] as const;
export type ModelSource = (typeof modelSources)[number];

export interface Model {
  id: string;
  type: ModelType;
  provider: ModelProvider;
  name: string;
  /** True for the LLM an agent gets when it is created without `modelId`. */
  isDefault: boolean;
  /** An LLM that takes images with the text (a WhatsApp customer's photo is passed to it); false for every other type. */
  acceptsImages: boolean;
  source: ModelSource;
}

export const listModelsQuery = paginationQuery.extend({
  type: z.enum(modelTypes).optional(),
  provider: z.enum(modelProviders).optional(),
  source: z.enum(modelSources).optional(),
});

export const modelSchema = z.object({
  id: z.uuid(),
  type: z.enum(modelTypes),
  provider: z.enum(modelProviders),
  name: z.string(),
  isDefault: z.boolean(),
  acceptsImages: z.boolean(),
  source: z.enum(modelSources).describe("`organization`: one of the organization's own models, reached with its own provider key"),
}) satisfies z.ZodType<Model>;

export const modelPage = pageOf(modelSchema);
