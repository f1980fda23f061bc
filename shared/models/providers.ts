/**
 * One interface for every LLM in the catalog: a catalog `Model` becomes an AI SDK `LanguageModelV4`, whose
 * `doStream` the turn engine (shared/domain/turn.ts) drives the same way whatever the provider.
 *
 * - `builtin`: the offline built-in model (`builtin-model.ts`).
 * - `openai-compatible`: any Chat Completions endpoint (OpenAI, Ollama, vLLM…) at `OPENAI_COMPATIBLE_BASE_URL`,
 *   with `OPENAI_COMPATIBLE_API_KEY` as a Bearer token when set; usage is requested in streams.
 * - `bedrock`: Amazon Bedrock (Converse API) in `AWS_REGION`, signed with the default AWS credential chain
 *   (environment, SSO, shared config and credentials files, process, web identity, container and instance
 *   metadata): on Lambda, the function role. Credentials are resolved on the first request, never at import.
 *
 * Provider instances are built once per process and configuration, models once per name, so that a turn only
 * pays a map lookup. Nothing here opens a connection: the first network call is the first model request.
 *
 * Import cost, bundled with the Lambda esbuild options and timed as `await import()` of the bundle (Node 22, a
 * busy 2-core machine, medians): the DynamoDB clients alone 333 KiB / ~85 ms; adding `ai` (streamText),
 * `@ai-sdk/openai-compatible` and the built-in model 1259 KiB / ~180 ms; adding `@ai-sdk/amazon-bedrock` (it
 * bundles parts of the Anthropic and OpenAI providers) 1399 KiB / ~195 ms. `@aws-sdk/credential-provider-node`
 * adds nothing: the DynamoDB client already bundles it. Standalone: `ai` 447 KiB / ~40 ms, openai-compatible
 * 574 KiB / ~40 ms, amazon-bedrock 647 KiB / ~65 ms, this module with its providers 1001 KiB / ~135 ms.
 */
import type { LanguageModelV4 } from '@ai-sdk/provider';
import { createAmazonBedrock, type AmazonBedrockProvider } from '@ai-sdk/amazon-bedrock';
import { createOpenAICompatible, type OpenAICompatibleProvider } from '@ai-sdk/openai-compatible';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import type { Config } from '../config.ts';
import type { Model } from '../schemas/model.ts';
import { builtinModelName, createBuiltinModel } from './builtin-model.ts';

type ProviderConfig = Pick<Config, 'AWS_REGION' | 'OPENAI_COMPATIBLE_BASE_URL' | 'OPENAI_COMPATIBLE_API_KEY'>;

interface CachedProvider<P> {
  key: string;
  provider: P;
  models: Map<string, LanguageModelV4>;
}

let builtin: LanguageModelV4 | undefined;
let openAICompatible: CachedProvider<OpenAICompatibleProvider> | undefined;
let bedrock: CachedProvider<AmazonBedrockProvider> | undefined;

/** The language model of a catalog LLM; throws for a model of another type or an unconfigured provider. */
export function createLanguageModel(model: Model, config: ProviderConfig): LanguageModelV4 {
  if (model.type !== 'LLM') {
    throw new Error(`Model ${model.provider}/${model.name} is a ${model.type} model, not an LLM: it cannot generate a reply`);
  }
  switch (model.provider) {
    case 'builtin':
      if (model.name !== builtinModelName) throw new Error(`Unknown built-in LLM ${model.name}`);
      builtin ??= createBuiltinModel();
      return builtin;
    case 'openai-compatible': {
      const baseURL = config.OPENAI_COMPATIBLE_BASE_URL;
      if (!baseURL) throw new Error(`Model openai-compatible/${model.name} needs OPENAI_COMPATIBLE_BASE_URL, which is not set`);
      const apiKey = config.OPENAI_COMPATIBLE_API_KEY || undefined;
      const key = `${baseURL}\n${apiKey ?? ''}`;
      if (openAICompatible?.key !== key) {
        const provider = createOpenAICompatible({ name: 'openai-compatible', baseURL, ...(apiKey ? { apiKey } : {}), includeUsage: true });
        openAICompatible = { key, provider, models: new Map() };
      }
      return cachedModel(openAICompatible, model.name);
    }
    case 'bedrock': {
      const region = config.AWS_REGION;
      if (bedrock?.key !== region) {
        // The chain is memoized and refreshes credentials before they expire.
        const credentials = defaultProvider();
        const provider = createAmazonBedrock({ region, credentialProvider: () => credentials() });
        bedrock = { key: region, provider, models: new Map() };
      }
      return cachedModel(bedrock, model.name);
    }
    default:
      throw new Error(`Unknown model provider ${String((model as Model).provider)}`);
  }
}

function cachedModel<P extends (name: string) => LanguageModelV4>(cache: CachedProvider<P>, name: string): LanguageModelV4 {
  let languageModel = cache.models.get(name);
  if (!languageModel) {
    languageModel = cache.provider(name);
    cache.models.set(name, languageModel);
  }
  return languageModel;
}
