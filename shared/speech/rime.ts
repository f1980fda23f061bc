/**
 * Rime's TTS (https://docs.rime.ai/api-reference/mistv2/http): `POST /v1/rime-tts`, streaming HTTP, asked for
 * headerless G.711 μ-law (`Accept: audio/PCMU`) at 8 kHz.
 */
import { primaryLanguage, streamedAudio } from './http-synthesis.ts';
import type { SynthesisOptions, TextToSpeech } from './ports.ts';

export const rimeDefaultModel = 'mistv2';

/** Rime's language codes (ISO 639-2) of the languages its voices speak; English otherwise. */
const rimeLanguages: Record<string, string> = { en: 'eng', es: 'spa', fr: 'fra', de: 'ger' };

export function rimeTextToSpeech(connection: { apiUrl: string; apiKey: string }): TextToSpeech {
  return {
    provider: 'rime',
    synthesize: (text: string, options: SynthesisOptions) =>
      streamedAudio(
        'rime',
        new URL('/v1/rime-tts', connection.apiUrl).href,
        {
          headers: { authorization: `Bearer ${connection.apiKey}`, accept: 'audio/PCMU', 'content-type': 'application/json' },
          body: JSON.stringify({
            speaker: options.voiceId,
            text,
            modelId: options.model ?? rimeDefaultModel,
            lang: rimeLanguages[primaryLanguage(options.language)] ?? 'eng',
            samplingRate: 8000,
          }),
        },
        options.signal,
      ),
  };
}
