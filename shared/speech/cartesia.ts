/**
 * Cartesia's TTS (https://docs.cartesia.ai/api-reference/tts/bytes): `POST /tts/bytes`, which streams the audio of
 * a whole transcript as it is generated, asked for in telephone audio (raw `pcm_mulaw` at 8 kHz).
 */
import { primaryLanguage, streamedAudio } from './http-synthesis.ts';
import type { SynthesisOptions, TextToSpeech } from './ports.ts';

/** The API version this adapter speaks (the `Cartesia-Version` header Cartesia requires). */
export const cartesiaVersion = '2025-04-16';
export const cartesiaDefaultModel = 'sonic-2';

export function cartesiaTextToSpeech(connection: { apiUrl: string; apiKey: string }): TextToSpeech {
  return {
    provider: 'cartesia',
    synthesize: (text: string, options: SynthesisOptions) =>
      streamedAudio(
        'cartesia',
        new URL('/tts/bytes', connection.apiUrl).href,
        {
          headers: { authorization: `Bearer ${connection.apiKey}`, 'cartesia-version': cartesiaVersion, 'content-type': 'application/json' },
          body: JSON.stringify({
            model_id: options.model ?? cartesiaDefaultModel,
            transcript: text,
            voice: { mode: 'id', id: options.voiceId },
            output_format: { container: 'raw', encoding: 'pcm_mulaw', sample_rate: 8000 },
            language: primaryLanguage(options.language),
          }),
        },
        options.signal,
      ),
  };
}
