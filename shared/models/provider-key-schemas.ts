import * as z from 'zod';
import { instant } from '../platform/schemas/common.ts';

/**
 * The providers an organization may bring its own key for (docs/models.md#your-own-provider-keys). The LLM ones put
 * the models they name into the organization's catalog; the speech ones are kept for the media worker.
 */
export const llmKeyProviders = ['openai-compatible', 'anthropic'] as const;
export const speechKeyProviders = ['elevenlabs', 'deepgram', 'cartesia', 'rime'] as const;
export const providerKeyProviders = [...llmKeyProviders, ...speechKeyProviders] as const;
export type ProviderKeyProvider = (typeof providerKeyProviders)[number];
export type LlmKeyProvider = (typeof llmKeyProviders)[number];

export const isLlmKeyProvider = (provider: ProviderKeyProvider): provider is LlmKeyProvider => (llmKeyProviders as readonly string[]).includes(provider);

export const providerKeyParams = z.object({
  provider: z.enum(providerKeyProviders, { error: `must be one of ${providerKeyProviders.join(', ')}` }),
});

/** Printable ASCII without spaces, as providers issue keys; it goes into a header as is. */
const apiKey = z
  .string()
  .trim()
  .min(8, { error: 'must be at least 8 characters' })
  .max(1024)
  .regex(/^[\x21-\x7e]+$/, { error: 'must be printable ASCII without spaces' });

/** A model name as the provider spells it (`gpt-4o-mini`, `claude-sonnet-4-5`, `llama3.1:8b`, `org/model`). */
const modelName = z
  .string()
  .trim()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:/@-]*$/, { error: 'must be a model name: letters, digits and . _ : / @ -' });

/** Which fields a provider takes is checked with the provider (`putProviderKey`): the path names it, not the body. */
export const providerKeyBody = z.strictObject({
  apiKey,
  /** The API's base URL: required for `openai-compatible`; for `anthropic`, `https://api.anthropic.com/v1` when absent. */
  baseUrl: z.url({ protocol: /^https?$/, error: 'must be an http or https URL' }).max(2048).optional(),
  /** The LLMs this key may use, as the provider names them: each becomes a model of the organization's catalog. */
  models: z
    .array(modelName)
    .min(1)
    .max(50)
    .refine((names) => new Set(names).size === names.length, { error: 'must not repeat a name' })
    .optional(),
});
export type ProviderKeyInput = z.output<typeof providerKeyBody>;

/** What the API shows of a stored key: never the key, only its last four characters. */
export const providerKeyRecord = z.object({
  provider: z.enum(providerKeyProviders),
  apiKeyHint: z.string().describe('The last four characters of the key, after an ellipsis: `…abcd`'),
  baseUrl: z.string().optional(),
  models: z.array(z.string()).optional(),
  createdAt: instant,
  updatedAt: instant,
});
export type ProviderKey = z.output<typeof providerKeyRecord>;

export const providerKeyList = z.object({ data: z.array(providerKeyRecord) });

/** A stored key with its secret opened: what a model request needs. */
export interface ProviderConnection {
  provider: ProviderKeyProvider;
  apiKey: string;
  baseUrl?: string | undefined;
  models: readonly string[];
  updatedAt: string;
}
