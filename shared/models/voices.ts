import * as z from 'zod';
import type { ModelCatalog } from './model-catalog.ts';

/**
 * The TTS voices calls can use, by provider. ConversationRelay speaks with the voice the call's TwiML names when
 * it speaks that provider; the media worker speaks the others with a TTS model of the voice's provider
 * (docs/voice.md#speech-providers). This catalog is what an agent's voice settings are checked against.
 */
export const ttsProviders = ['google', 'amazon', 'elevenlabs', 'cartesia', 'rime', 'builtin'] as const;
export type TtsProvider = (typeof ttsProviders)[number];

/** The providers ConversationRelay speaks itself (Twilio runs the synthesis): their voices need no TTS model of ours. */
export const conversationRelayTtsProviders: readonly TtsProvider[] = ['google', 'amazon', 'elevenlabs'];

export interface Voice {
  provider: TtsProvider;
  voiceId: string;
  name: string;
  /** BCP-47. */
  language: string;
  gender: 'female' | 'male' | 'neutral';
}

export const voiceCatalog: readonly Voice[] = [
  { provider: 'google', voiceId: 'en-US-Journey-O', name: 'Journey O', language: 'en-US', gender: 'female' },
  { provider: 'google', voiceId: 'en-US-Journey-D', name: 'Journey D', language: 'en-US', gender: 'male' },
  { provider: 'google', voiceId: 'en-GB-Neural2-A', name: 'Neural2 A', language: 'en-GB', gender: 'female' },
  { provider: 'google', voiceId: 'fr-FR-Neural2-B', name: 'Neural2 B', language: 'fr-FR', gender: 'male' },
  { provider: 'google', voiceId: 'de-DE-Neural2-C', name: 'Neural2 C', language: 'de-DE', gender: 'female' },
  { provider: 'google', voiceId: 'es-ES-Neural2-B', name: 'Neural2 B', language: 'es-ES', gender: 'male' },
  { provider: 'amazon', voiceId: 'Joanna-Neural', name: 'Joanna', language: 'en-US', gender: 'female' },
  { provider: 'amazon', voiceId: 'Matthew-Neural', name: 'Matthew', language: 'en-US', gender: 'male' },
  { provider: 'amazon', voiceId: 'Amy-Neural', name: 'Amy', language: 'en-GB', gender: 'female' },
  { provider: 'amazon', voiceId: 'Lea-Neural', name: 'Léa', language: 'fr-FR', gender: 'female' },
  { provider: 'elevenlabs', voiceId: 'UgBBYS2sOqTuMpoF3BR0', name: 'Mark', language: 'en-US', gender: 'male' },
  { provider: 'elevenlabs', voiceId: '21m00Tcm4TlvDq8ikWAM', name: 'Rachel', language: 'en-US', gender: 'female' },
  { provider: 'cartesia', voiceId: 'a0e99841-438c-4a64-b679-ae501e7d6091', name: 'Barbershop Man', language: 'en-US', gender: 'male' },
  { provider: 'cartesia', voiceId: '79a125e8-cd45-4c13-8a67-188112f4dd22', name: 'British Lady', language: 'en-GB', gender: 'female' },
  { provider: 'rime', voiceId: 'celeste', name: 'Celeste', language: 'en-US', gender: 'female' },
  { provider: 'rime', voiceId: 'orion', name: 'Orion', language: 'en-US', gender: 'male' },
  // eSpeak NG's voices (docs/voice.md#built-in-speech): the voice id is eSpeak's own, a language and a variant.
  { provider: 'builtin', voiceId: 'en-us', name: 'eSpeak US English', language: 'en-US', gender: 'male' },
  { provider: 'builtin', voiceId: 'en-us+f3', name: 'eSpeak US English (female)', language: 'en-US', gender: 'female' },
  { provider: 'builtin', voiceId: 'en-gb', name: 'eSpeak British English', language: 'en-GB', gender: 'male' },
  { provider: 'builtin', voiceId: 'fr-fr', name: 'eSpeak French', language: 'fr-FR', gender: 'male' },
  { provider: 'builtin', voiceId: 'de', name: 'eSpeak German', language: 'de-DE', gender: 'male' },
  { provider: 'builtin', voiceId: 'es', name: 'eSpeak Spanish', language: 'es-ES', gender: 'male' },
];

/**
 * Whether calls of this deployment can speak with a provider's voices: ConversationRelay's providers always, the
 * others when the catalog has a TTS model of theirs (the built-in one always does).
 */
export function voiceProviderAvailable(catalog: Pick<ModelCatalog, 'models'>, provider: TtsProvider): boolean {
  return conversationRelayTtsProviders.includes(provider) || catalog.models.some((model) => model.type === 'TTS' && model.provider === provider);
}

export const listVoicesQuery = z.object({
  provider: z.enum(ttsProviders).optional(),
  /** A language tag or its primary subtag: `en` lists `en-US` and `en-GB`. */
  language: z.string().trim().min(2).max(35).optional(),
});

export const voiceRecord = z.object({
  provider: z.enum(ttsProviders),
  voiceId: z.string(),
  name: z.string(),
  language: z.string(),
  gender: z.enum(['female', 'male', 'neutral']),
});

export const voiceList = z.object({ items: z.array(voiceRecord) });

/**
 * The voices this deployment can speak with, filtered by provider and language (case-insensitive; a primary subtag
 * matches its regions).
 */
export function listVoices(catalog: Pick<ModelCatalog, 'models'>, query: z.output<typeof listVoicesQuery>): { items: Voice[] } {
  const language = query.language?.toLowerCase();
  return {
    items: voiceCatalog.filter(
      (voice) =>
        voiceProviderAvailable(catalog, voice.provider) &&
        (!query.provider || voice.provider === query.provider) &&
        (!language || voice.language.toLowerCase() === language || voice.language.toLowerCase().startsWith(`${language}-`)),
    ),
  };
}
