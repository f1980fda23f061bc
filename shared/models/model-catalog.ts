import { v5 as uuidv5 } from 'uuid';
import type { Config } from '../platform/config.ts';
import type { Model, ModelProvider, ModelType } from './model-schemas.ts';

/** Fixed namespace: a model's id is a UUIDv5 of `provider/type/name`, the same on every deployment. */
const modelNamespace = '6f1c9b1e-3a0d-5b8e-9c4f-2d7e8a1b0c3d';

export const builtinModels = {
  llm: 'builtin-assistant',
  stt: 'builtin-stt',
  tts: 'builtin-tts',
  embeddings: ['hashed-words-512', 'hashed-ngrams-256'],
  rerank: 'lexical-coverage',
} as const;

export function modelId(provider: ModelProvider, type: ModelType, name: string): string {
  return uuidv5(`${provider}/${type}/${name}`, modelNamespace);
}

export interface ModelCatalog {
  models: readonly Model[];
  byId(id: string): Model | undefined;
  /** A model of that type by `provider/name`, as knowledge stores name their embedding and rerank models. */
  byName(type: ModelType, providerAndName: string): Model | undefined;
  defaultLlm: Model;
}

type CatalogConfig = Pick<
  Config,
  | 'BEDROCK_MODELS'
  | 'OPENAI_COMPATIBLE_MODELS'
  | 'BEDROCK_EMBEDDING_MODELS'
  | 'OPENAI_COMPATIBLE_EMBEDDING_MODELS'
  | 'BEDROCK_RERANK_MODELS'
  | 'BEDROCK_STS_MODELS'
  | 'OPENAI_COMPATIBLE_STT_MODELS'
  | 'OPENAI_COMPATIBLE_REALTIME_MODELS'
  | 'DEFAULT_LLM'
  | 'IMAGE_INPUT_MODELS'
  | 'DEEPGRAM_STT_MODELS'
  | 'CARTESIA_TTS_MODELS'
  | 'RIME_TTS_MODELS'
  | 'ELEVENLABS_TTS_MODELS'
  | 'AMAZON_STT_MODELS'
  | 'AMAZON_TTS_MODELS'
>;

/** The speech models of the media worker's providers (docs/voice.md#speech-providers). */
function speechEntries(config: CatalogConfig): [ModelProvider, ModelType, string][] {
  const of = (provider: ModelProvider, type: ModelType, names: readonly string[]) => names.map((name): [ModelProvider, ModelType, string] => [provider, type, name]);
  return [
    ...of('deepgram', 'STT', config.DEEPGRAM_STT_MODELS),
    ...of('amazon', 'STT', config.AMAZON_STT_MODELS),
    ...of('amazon', 'TTS', config.AMAZON_TTS_MODELS),
    ...of('cartesia', 'TTS', config.CARTESIA_TTS_MODELS),
    ...of('rime', 'TTS', config.RIME_TTS_MODELS),
    ...of('elevenlabs', 'TTS', config.ELEVENLABS_TTS_MODELS),
    ...of('openai-compatible', 'STS', config.OPENAI_COMPATIBLE_REALTIME_MODELS),
    ...of('bedrock', 'STS', config.BEDROCK_STS_MODELS),
  ];
}

/**
 * The deployment's catalog: the offline built-in models, always, plus the provider models configured. The
 * built-in STT and TTS entries let voice agents be configured and tested without a speech provider; the
 * OpenAI-compatible STT models transcribe (WhatsApp voice notes); the speech providers' models (STT, TTS, STS) serve calls through the
 * media worker. `IMAGE_INPUT_MODELS` names the LLMs that take
 * images; the built-in LLM does (it acknowledges them).
 */
export function createModelCatalog(config: CatalogConfig): ModelCatalog {
  const entries: [ModelProvider, ModelType, string][] = [
    ['builtin', 'LLM', builtinModels.llm],
    ['builtin', 'STT', builtinModels.stt],
    ['builtin', 'TTS', builtinModels.tts],
    ...builtinModels.embeddings.map((name): [ModelProvider, ModelType, string] => ['builtin', 'EMBEDDING', name]),
    ['builtin', 'RERANK', builtinModels.rerank],
    ...config.BEDROCK_MODELS.map((name): [ModelProvider, ModelType, string] => ['bedrock', 'LLM', name]),
    ...config.OPENAI_COMPATIBLE_MODELS.map((name): [ModelProvider, ModelType, string] => ['openai-compatible', 'LLM', name]),
    ...config.BEDROCK_EMBEDDING_MODELS.map((name): [ModelProvider, ModelType, string] => ['bedrock', 'EMBEDDING', name]),
    ...config.OPENAI_COMPATIBLE_EMBEDDING_MODELS.map((name): [ModelProvider, ModelType, string] => ['openai-compatible', 'EMBEDDING', name]),
    ...config.BEDROCK_RERANK_MODELS.map((name): [ModelProvider, ModelType, string] => ['bedrock', 'RERANK', name]),
    ...config.OPENAI_COMPATIBLE_STT_MODELS.map((name): [ModelProvider, ModelType, string] => ['openai-compatible', 'STT', name]),
    ...speechEntries(config),
  ];
  const defaultName = config.DEFAULT_LLM ?? `builtin/${builtinModels.llm}`;
  const imageModels = new Set([`builtin/${builtinModels.llm}`, ...config.IMAGE_INPUT_MODELS]);
  const models = entries.map(([provider, type, name]) => ({
    id: modelId(provider, type, name),
    type,
    provider,
    name,
    isDefault: type === 'LLM' && `${provider}/${name}` === defaultName,
    acceptsImages: type === 'LLM' && imageModels.has(`${provider}/${name}`),
    source: 'deployment' as const,
  }));
  const defaultLlm = models.find((model) => model.isDefault);
  if (!defaultLlm) throw new Error(`Invalid configuration: DEFAULT_LLM ${defaultName} is not in the model catalog`);
  const unknownImageModel = config.IMAGE_INPUT_MODELS.find((name) => !models.some((model) => model.type === 'LLM' && `${model.provider}/${model.name}` === name));
  if (unknownImageModel) throw new Error(`Invalid configuration: IMAGE_INPUT_MODELS names ${unknownImageModel}, which is not an LLM of the model catalog`);
  return catalogOf(models, defaultLlm);
}

function catalogOf(models: readonly Model[], defaultLlm: Model): ModelCatalog {
  const index = new Map(models.map((model) => [model.id, model]));
  // The deployment's models come first: a name an organization's model shares names the deployment's.
  const byName = new Map(models.toReversed().map((model) => [`${model.type} ${model.provider}/${model.name}`, model]));
  return { models, byId: (id) => index.get(id), byName: (type, providerAndName) => byName.get(`${type} ${providerAndName}`), defaultLlm };
}

/**
 * An organization's own LLM: its id is a UUIDv5 of `organization/<orgId>/<provider>/LLM/<name>` in the catalog's
 * namespace, so it is stable, differs from the deployment's model of the same name and from every other
 * organization's, and finds nothing in another organization's catalog.
 */
export function organizationModel(orgId: string, provider: ModelProvider, name: string): Model {
  return {
    id: uuidv5(`organization/${orgId}/${provider}/LLM/${name}`, modelNamespace),
    type: 'LLM',
    provider,
    name,
    isDefault: false,
    acceptsImages: false,
    source: 'organization',
  };
}

/** The deployment's catalog and, after it, the organization's own models. */
export function withOrganizationModels(catalog: ModelCatalog, own: readonly Model[]): ModelCatalog {
  return own.length === 0 ? catalog : catalogOf([...catalog.models, ...own], catalog.defaultLlm);
}
