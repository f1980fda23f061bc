/**
 * ElevenLabs' TTS (https://elevenlabs.io/docs/api-reference/text-to-speech/stream):
 * `POST /v1/text-to-speech/{voice_id}/stream?output_format=ulaw_8000`, the audio streamed as it is generated, in
 * telephone audio.
 */
import { streamedAudio } from './http-synthesis.ts';
import type { SynthesisOptions, TextToSpeech } from './ports.ts';

export const elevenlabsDefaultModel = 'eleven_flash_v2_5';

export function elevenlabsTextToSpeech(connection: { apiUrl: string; apiKey: string }): TextToSpeech {
  return {
    provider: 'elevenlabs',
    synthesize: (text: string, options: SynthesisOptions) => {
      const url = new URL(`/v1/text-to-speech/${encodeURIComponent(options.voiceId)}/stream`, connection.apiUrl);
      url.searchParams.set('output_format', 'ulaw_8000');
      // No language_code: the voice speaks its language, and models that do not take the field refuse it.
      return streamedAudio(
        'elevenlabs',
        url.href,
        {
          headers: { 'xi-api-key': connection.apiKey, 'content-type': 'application/json' },
          body: JSON.stringify({ text, model_id: options.model ?? elevenlabsDefaultModel }),
        },
        options.signal,
      );
    },
  };
}
