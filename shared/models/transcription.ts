/** Speech to text of a recorded message (a WhatsApp voice note): its words, trimmed; empty when nothing was said. */
export interface Transcriber {
  transcribe(audio: Uint8Array, mediaType: string): Promise<string>;
}

/** The file extension the transcription endpoint reads the format from, by the audio's media type (parameters ignored). */
const extensionByMediaType: Record<string, string> = {
  'audio/ogg': 'ogg',
  'audio/opus': 'ogg',
  'audio/mpeg': 'mp3',
  'audio/mp3': 'mp3',
  'audio/mp4': 'm4a',
  'audio/m4a': 'm4a',
  'audio/x-m4a': 'm4a',
  'audio/aac': 'aac',
  'audio/amr': 'amr',
  'audio/wav': 'wav',
  'audio/x-wav': 'wav',
  'audio/webm': 'webm',
  'audio/flac': 'flac',
};

/** A voice note lasts minutes at most; a transcription that takes longer than this is given up. */
const transcriptionTimeoutMs = 60_000;

/**
 * OpenAI's `POST /audio/transcriptions` (multipart: `file`, `model`, `response_format=json`; answers `{text}`), at
 * any OpenAI-compatible base URL: OpenAI's Whisper and gpt-4o-transcribe models, Groq, a faster-whisper server…
 * https://platform.openai.com/docs/api-reference/audio/createTranscription
 */
export function openAICompatibleTranscriber(options: { baseURL: string; apiKey?: string | undefined; model: string }): Transcriber {
  const url = `${options.baseURL.replace(/\/$/, '')}/audio/transcriptions`;
  return {
    async transcribe(audio, mediaType) {
      const baseType = mediaType.split(';')[0]!.trim().toLowerCase();
      const form = new FormData();
      form.set('file', new Blob([audio], { type: baseType }), `voice-note.${extensionByMediaType[baseType] ?? 'bin'}`);
      form.set('model', options.model);
      form.set('response_format', 'json');
      const response = await fetch(url, {
        method: 'POST',
        headers: options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {},
        body: form,
        signal: AbortSignal.timeout(transcriptionTimeoutMs),
      });
      const text = await response.text();
      let parsed: { text?: unknown; error?: { message?: unknown } } | undefined;
      try {
        parsed = JSON.parse(text) as typeof parsed;
      } catch {
        parsed = undefined;
      }
      if (!response.ok || typeof parsed?.text !== 'string') {
        throw new Error(`The transcription endpoint answered ${response.status}: ${String(parsed?.error?.message ?? text).slice(0, 300)}`);
      }
      return parsed.text.trim();
    },
  };
}
