/**
 * One interface for every LLM in the catalog: a catalog `Model` becomes an AI SDK `LanguageModelV4`, whose
 * `doStream` the turn engine (shared/conversations/turn.ts) drives the same way whatever the provider. Embedding and
 * rerank models of knowledge stores come from the same provider instances (`createEmbeddingModel`,
 * `createRerankingModel`).
 *
 * - `builtin`: the offline built-in model (`builtin-model.ts`).
 * - `openai-compatible`: any Chat Completions endpoint (OpenAI, Ollama, vLLM…) at `OPENAI_COMPATIBLE_BASE_URL`,
 *   with `OPENAI_COMPATIBLE_API_KEY` as a Bearer token when set (on AWS, the value of the secret its `_ARN` names,
 *   read on each request through a 5-minute cache, so a rotated key is used without a redeploy); usage is
 *   requested in streams.
 * - `bedrock`: Amazon Bedrock (Converse API) in `AWS_REGION`, signed with the default AWS credential chain
 *   (environment, SSO, shared config and credentials files, process, web identity, container and instance
 *   metadata): on Lambda, the function role. Credentials are resolved on the first request, never at import.
 *
 * - An organization's own models (`createOrganizationLanguageModel`): `openai-compatible` or `anthropic` with its key and
 *   base URL, through the egress guard's fetch (docs/models.md#your-own-provider-keys).
 *
 * Each provider package (`@ai-sdk/openai-compatible`, `@ai-sdk/amazon-bedrock`, `@ai-sdk/anthropic`) is imported on
 * its first model call, not when the function loads: the stack bundles each into a chunk of its own (decision 420),
 * so a function loads only the provider its models use, and only once it calls one. The models handed out are
 * stand-ins with the provider's name and model id, which load the provider and pass each call on.
 *
 * Provider instances are built once per process and configuration, models once per name, so that a turn only
 * pays a map lookup. Nothing here opens a connection: the first network call is the first model request.
 */
import type { EmbeddingModelV4, LanguageModelV4, RerankingModelV4 } from '@ai-sdk/provider';
import type { AmazonBedrockProvider } from '@ai-sdk/amazon-bedrock';
import type { OpenAICompatibleProvider } from '@ai-sdk/openai-compatible';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import type { Config } from '../platform/config.ts';
import { secretSetting } from '../platform/secrets/secret-settings.ts';
import type { Model } from './model-schemas.ts';
import type { ProviderConnection } from './provider-key-schemas.ts';
import { builtinEmbeddingModel } from './builtin-embedder.ts';
import { builtinRerankingModel } from './reranker.ts';
import { builtinModelName, createBuiltinModel } from './builtin-model.ts';
import { openAICompatibleTranscriber, type Transcriber } from './transcription.ts';

export type { Transcriber };

type ProviderConfig = Pick<Config, 'AWS_REGION' | 'SECRETS_MANAGER_ENDPOINT' | 'OPENAI_COMPATIBLE_BASE_URL' | 'OPENAI_COMPATIBLE_API_KEY' | 'OPENAI_COMPATIBLE_API_KEY_ARN'>;

interface CachedProvider<P> {
  key: string;
  /** The provider, built on its package's first import. */
  provider: () => Promise<P>;
  models: Map<string, LanguageModelV4 | EmbeddingModelV4 | RerankingModelV4>;
}

let builtin: LanguageModelV4 | undefined;
let openAICompatible: CachedProvider<OpenAICompatibleProvider> | undefined;
let bedrock: CachedProvider<AmazonBedrockProvider> | undefined;

function openAICompatibleProvider(model: Model, config: ProviderConfig): CachedProvider<OpenAICompatibleProvider> {
  const baseURL = config.OPENAI_COMPATIBLE_BASE_URL;
  if (!baseURL) throw new Error(`Model openai-compatible/${model.name} needs OPENAI_COMPATIBLE_BASE_URL, which is not set`);
  const key = `${baseURL}\n${config.OPENAI_COMPATIBLE_API_KEY ?? ''}\n${config.OPENAI_COMPATIBLE_API_KEY_ARN ?? ''}`;
  if (openAICompatible?.key !== key) {
    const provider = once(async () => {
      const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible');
      return createOpenAICompatible({ name: openAICompatibleName, baseURL, includeUsage: true, fetch: withApiKey(config) });
    });
    openAICompatible = { key, provider, models: new Map() };
  }
  return openAICompatible;
}

/** Sends the API key, when there is one, as the Bearer token of each request (it may come from a secret, read asynchronously). */
function withApiKey(config: ProviderConfig): typeof fetch {
  return async (input, init) => {
    const apiKey = await secretSetting(config, 'OPENAI_COMPATIBLE_API_KEY');
    if (!apiKey) return fetch(input, init);
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${apiKey}`);
    return fetch(input, { ...init, headers });
  };
}

/** Bedrock Runtime (models, embeddings) and Bedrock Agent Runtime (rerank); `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` and `AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME` point them elsewhere (tests). */
function bedrockProvider(config: ProviderConfig): CachedProvider<AmazonBedrockProvider> {
  const region = config.AWS_REGION;
  if (bedrock?.key !== region) {
    // The chain is memoized and refreshes credentials before they expire.
    const credentials = defaultProvider();
    const provider = once(async () => {
      const { createAmazonBedrock } = await import('@ai-sdk/amazon-bedrock');
      return createAmazonBedrock({ region, credentialProvider: () => credentials() });
    });
    bedrock = { key: region, provider, models: new Map() };
  }
  return bedrock;
}

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
    case 'openai-compatible':
      return cachedModel(openAICompatibleProvider(model, config), model, (provider) => lazyLanguageModel(`${openAICompatibleName}.chat`, model.name, async () => (await provider())(model.name)));
    case 'bedrock':
      return cachedModel(bedrockProvider(config), model, (provider) => lazyLanguageModel(bedrockName, model.name, async () => (await provider())(model.name)));
    default:
      throw new Error(`Model ${model.provider}/${model.name} is not one of the deployment's models`);
  }
}

/** Organizations' models by connection (provider, base URL, key): a changed key builds a new one; the oldest go first. */
const organizationModels = new Map<string, LanguageModelV4>();
const organizationModelsKept = 256;

/**
 * The language model of one of an organization's own models (docs/models.md#your-own-provider-keys), reached with
 * its key and base URL through `fetch` (the egress guard: the organization chose the URL). The Anthropic provider is
 * loaded on its first use: only organizations' keys need it, and it is a third of a turn function's bundle.
 */
export async function createOrganizationLanguageModel(model: Model, connection: ProviderConnection, fetch: typeof globalThis.fetch): Promise<LanguageModelV4> {
  const key = `${connection.provider}\n${connection.baseUrl ?? ''}\n${connection.apiKey}\n${model.name}`;
  let created = organizationModels.get(key);
  if (created) return created;
  switch (connection.provider) {
    case 'openai-compatible':
      if (!connection.baseUrl) throw new Error('An openai-compatible key needs its base URL');
      const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible');
      created = createOpenAICompatible({ name: openAICompatibleName, baseURL: connection.baseUrl, apiKey: connection.apiKey, includeUsage: true, fetch })(model.name);
      break;
    case 'anthropic': {
      const { createAnthropic } = await import('@ai-sdk/anthropic');
      created = createAnthropic({ apiKey: connection.apiKey, ...(connection.baseUrl ? { baseURL: connection.baseUrl } : {}), fetch })(model.name);
      break;
    }
    default:
      throw new Error(`A ${connection.provider} key serves no language model`);
  }
  if (organizationModels.size >= organizationModelsKept) organizationModels.delete(organizationModels.keys().next().value!);
  organizationModels.set(key, created);
  return created;
}

/** The AI SDK embedding model of a catalog EMBEDDING model (Bedrock embeds one text per call: `embedMany` runs calls in parallel). */
export function createEmbeddingModel(model: Model, config: ProviderConfig): EmbeddingModelV4 {
  if (model.type !== 'EMBEDDING') throw new Error(`Model ${model.provider}/${model.name} is a ${model.type} model, not an embedding model`);
  switch (model.provider) {
    case 'builtin':
      return builtinEmbeddingModel(`builtin/${model.name}`);
    case 'openai-compatible':
      return cachedModel(openAICompatibleProvider(model, config), model, (provider) =>
        lazyEmbeddingModel(`${openAICompatibleName}.embedding`, model.name, async () => (await provider()).embeddingModel(model.name)),
      );
    case 'bedrock':
      return cachedModel(bedrockProvider(config), model, (provider) => lazyEmbeddingModel(bedrockName, model.name, async () => (await provider()).embeddingModel(model.name)));
    default:
      throw new Error(`Unknown model provider ${String((model as Model).provider)}`);
  }
}

/** The AI SDK reranking model of a catalog RERANK model (Bedrock's Rerank API: Cohere Rerank 3.5, Amazon Rerank). */
export function createRerankingModel(model: Model, config: ProviderConfig): RerankingModelV4 {
  if (model.type !== 'RERANK') throw new Error(`Model ${model.provider}/${model.name} is a ${model.type} model, not a rerank model`);
  switch (model.provider) {
    case 'builtin':
      return builtinRerankingModel();
    case 'bedrock':
      return cachedModel(bedrockProvider(config), model, (provider) => lazyRerankingModel(bedrockName, model.name, async () => (await provider()).rerankingModel(model.name)));
    default:
      throw new Error(`No rerank models from ${model.provider}`);
  }
}

/** The transcriber of a catalog STT model; undefined for a model that cannot transcribe (the built-in one only lets voice agents be configured). */
export function createTranscriber(model: Model, config: ProviderConfig): Transcriber | undefined {
  if (model.type !== 'STT' || model.provider !== 'openai-compatible' || !config.OPENAI_COMPATIBLE_BASE_URL) return undefined;
  return openAICompatibleTranscriber({ baseURL: config.OPENAI_COMPATIBLE_BASE_URL, apiKey: config.OPENAI_COMPATIBLE_API_KEY || undefined, model: model.name });
}

function cachedModel<P, M extends LanguageModelV4 | EmbeddingModelV4 | RerankingModelV4>(cache: CachedProvider<P>, model: Model, create: (provider: () => Promise<P>) => M): M {
  const key = `${model.type} ${model.name}`;
  let created = cache.models.get(key) as M | undefined;
  if (!created) {
    created = create(cache.provider);
    cache.models.set(key, created);
  }
  return created;
}

/** The providers' own names, which the stand-ins carry before their package is loaded. */
const openAICompatibleName = 'openai-compatible';
const bedrockName = 'amazon-bedrock';

/** Runs `load` on the first call only; a failed load is tried again on the next call. */
function once<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () =>
    (loading ??= load().catch((error: unknown) => {
      loading = undefined;
      throw error;
    }));
}

function lazyLanguageModel(provider: string, modelId: string, load: () => Promise<LanguageModelV4>): LanguageModelV4 {
  const model = once(load);
  return {
    specificationVersion: 'v4',
    provider,
    modelId,
    get supportedUrls() {
      return model().then((loaded) => loaded.supportedUrls);
    },
    doGenerate: async (options) => (await model()).doGenerate(options),
    doStream: async (options) => (await model()).doStream(options),
  };
}

function lazyEmbeddingModel(provider: string, modelId: string, load: () => Promise<EmbeddingModelV4>): EmbeddingModelV4 {
  const model = once(load);
  return {
    specificationVersion: 'v4',
    provider,
    modelId,
    get maxEmbeddingsPerCall() {
      return model().then((loaded) => loaded.maxEmbeddingsPerCall);
    },
    get supportsParallelCalls() {
      return model().then((loaded) => loaded.supportsParallelCalls);
    },
    doEmbed: async (options) => (await model()).doEmbed(options),
  };
}

function lazyRerankingModel(provider: string, modelId: string, load: () => Promise<RerankingModelV4>): RerankingModelV4 {
  const model = once(load);
  return { specificationVersion: 'v4', provider, modelId, doRerank: async (options) => (await model()).doRerank(options) };
}
