/**
 * The provider registry the media worker uses (docs/voice.md#speech-providers): for an STT, TTS or STS model of the
 * catalog, the adapter that speaks to its provider, with the organization's own key for that provider when it has
 * one (docs/models.md#your-own-provider-keys), else the deployment's (`<PROVIDER>_API_KEY`, a secret on AWS).
 */
import type { Model } from '../models/model-schemas.ts';
import type { Config } from '../platform/config.ts';
import { secretSetting } from '../platform/secrets/secret-settings.ts';
import { BuiltinSpeechToText } from './builtin-stt.ts';
import { BuiltinTextToSpeech } from './builtin-tts.ts';
import { cartesiaTextToSpeech } from './cartesia.ts';
import { deepgramSpeechToText } from './deepgram.ts';
import { elevenlabsTextToSpeech } from './elevenlabs.ts';
import { novaSonicSpeechToSpeech } from './nova-sonic.ts';
import { openAIRealtimeSpeechToSpeech } from './openai-realtime.ts';
import { pollyTextToSpeech } from './polly.ts';
import { SpeechProviderError, type SpeechToSpeech, type SpeechToText, type TextToSpeech } from './ports.ts';
import { rimeTextToSpeech } from './rime.ts';
import { transcribeSpeechToText } from './transcribe.ts';

/** The speech providers an organization may bring its own key for (shared/models/provider-key-schemas.ts). */
type KeyedProvider = 'deepgram' | 'cartesia' | 'rime' | 'elevenlabs';

export type SpeechProviderConfig = Pick<
  Config,
  | 'AWS_REGION'
  | 'SPEECH_ENGINES_DIR'
  | 'SECRETS_MANAGER_ENDPOINT'
  | 'DEEPGRAM_API_URL'
  | 'CARTESIA_API_URL'
  | 'RIME_API_URL'
  | 'ELEVENLABS_API_URL'
  | 'POLLY_ENDPOINT'
  | 'TRANSCRIBE_STREAMING_ENDPOINT'
  | 'NOVA_SONIC_ENDPOINT'
  | 'DEEPGRAM_API_KEY'
  | 'DEEPGRAM_API_KEY_ARN'
  | 'CARTESIA_API_KEY'
  | 'CARTESIA_API_KEY_ARN'
  | 'RIME_API_KEY'
  | 'RIME_API_KEY_ARN'
  | 'ELEVENLABS_API_KEY'
  | 'ELEVENLABS_API_KEY_ARN'
  | 'OPENAI_COMPATIBLE_REALTIME_URL'
  | 'OPENAI_COMPATIBLE_BASE_URL'
  | 'OPENAI_COMPATIBLE_API_KEY'
  | 'OPENAI_COMPATIBLE_API_KEY_ARN'
>;

export interface SpeechProviderDeps {
  config: SpeechProviderConfig;
  /** The organization's own keys (the provider key store). */
  providerKeys: { connection(orgId: string, provider: KeyedProvider): Promise<{ apiKey: string } | undefined> };
}

export interface SpeechProviders {
  /** The adapter of an STT model of the catalog; open its streams with `model: model.name`. */
  speechToText(orgId: string, model: Model): Promise<SpeechToText>;
  /** The adapter of a TTS model of the catalog; synthesize with `model: model.name`. */
  textToSpeech(orgId: string, model: Model): Promise<TextToSpeech>;
  /** The adapter of an STS model of the catalog; open its sessions with `model: model.name`. */
  speechToSpeech(orgId: string, model: Model): Promise<SpeechToSpeech>;
}

const apiKeySetting = { deepgram: 'DEEPGRAM_API_KEY', cartesia: 'CARTESIA_API_KEY', rime: 'RIME_API_KEY', elevenlabs: 'ELEVENLABS_API_KEY' } as const;
const apiUrlSetting = { deepgram: 'DEEPGRAM_API_URL', cartesia: 'CARTESIA_API_URL', rime: 'RIME_API_URL', elevenlabs: 'ELEVENLABS_API_URL' } as const;

export function createSpeechProviders(deps: SpeechProviderDeps): SpeechProviders {
  const { config } = deps;
  const builtin = { speechToText: new BuiltinSpeechToText(config.SPEECH_ENGINES_DIR), textToSpeech: new BuiltinTextToSpeech(config.SPEECH_ENGINES_DIR) };
  // One AWS client per registry (the worker makes one), made on first use: they hold connections.
  let polly: TextToSpeech | undefined;
  let transcribe: SpeechToText | undefined;
  let novaSonic: SpeechToSpeech | undefined;

  /** The organization's own key for the provider, else the deployment's. */
  async function connection(orgId: string, provider: KeyedProvider): Promise<{ apiUrl: string; apiKey: string }> {
    const apiKey = (await deps.providerKeys.connection(orgId, provider))?.apiKey ?? (await secretSetting(config, apiKeySetting[provider]));
    if (!apiKey) throw new SpeechProviderError(provider, `no API key: set ${apiKeySetting[provider]} for the deployment, or PUT /v1/chat/provider-keys/${provider}`, false);
    return { apiUrl: config[apiUrlSetting[provider]], apiKey };
  }
  const unsupported = (model: Model) => new SpeechProviderError(model.provider, `${model.type} model ${model.provider}/${model.name} has no speech adapter`, false);

  return {
    async speechToText(orgId, model) {
      if (model.type !== 'STT') throw unsupported(model);
      switch (model.provider) {
        case 'builtin':
          return builtin.speechToText;
        case 'deepgram':
          return deepgramSpeechToText(await connection(orgId, 'deepgram'));
        case 'amazon':
          transcribe ??= transcribeSpeechToText({ region: config.AWS_REGION, endpoint: config.TRANSCRIBE_STREAMING_ENDPOINT });
          return transcribe;
        default:
          throw unsupported(model);
      }
    },
    async textToSpeech(orgId, model) {
      if (model.type !== 'TTS') throw unsupported(model);
      switch (model.provider) {
        case 'builtin':
          return builtin.textToSpeech;
        case 'amazon':
          polly ??= pollyTextToSpeech({ region: config.AWS_REGION, endpoint: config.POLLY_ENDPOINT });
          return polly;
        case 'cartesia':
          return cartesiaTextToSpeech(await connection(orgId, 'cartesia'));
        case 'rime':
          return rimeTextToSpeech(await connection(orgId, 'rime'));
        case 'elevenlabs':
          return elevenlabsTextToSpeech(await connection(orgId, 'elevenlabs'));
        default:
          throw unsupported(model);
      }
    },
    async speechToSpeech(_orgId, model) {
      if (model.type !== 'STS') throw unsupported(model);
      switch (model.provider) {
        case 'openai-compatible': {
          // The deployment's Realtime endpoint and key: organizations' own OpenAI-compatible keys serve LLMs only.
          const url = config.OPENAI_COMPATIBLE_REALTIME_URL ?? config.OPENAI_COMPATIBLE_BASE_URL;
          if (!url) throw new SpeechProviderError(model.provider, 'no Realtime endpoint: set OPENAI_COMPATIBLE_BASE_URL', false);
          return openAIRealtimeSpeechToSpeech({ url, apiKey: await secretSetting(config, 'OPENAI_COMPATIBLE_API_KEY') });
        }
        case 'bedrock':
          novaSonic ??= novaSonicSpeechToSpeech({ region: config.AWS_REGION, endpoint: config.NOVA_SONIC_ENDPOINT });
          return novaSonic;
        default:
          throw unsupported(model);
      }
    },
  };
}
