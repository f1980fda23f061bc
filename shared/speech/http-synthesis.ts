import { SpeechProviderError } from './ports.ts';

/**
 * A TTS provider's HTTP response body, chunk by chunk as it arrives (Cartesia's `/tts/bytes`, Rime's and
 * ElevenLabs' streaming endpoints all answer raw audio bytes). A refusal becomes a `SpeechProviderError` with the
 * provider's own message, retryable for 5xx and 429 and for a connection that drops; an abort ends the chunks
 * and cancels the request.
 */
export async function* streamedAudio(provider: string, url: string, init: { headers: Record<string, string>; body: string }, signal?: AbortSignal): AsyncIterable<Uint8Array> {
  if (signal?.aborted) return;
  let response: Response;
  try {
    response = await fetch(url, { method: 'POST', headers: init.headers, body: init.body, signal: signal ?? null });
  } catch (error) {
    if (signal?.aborted) return;
    throw new SpeechProviderError(provider, `request failed: ${(error as Error).message}`, true);
  }
  if (!response.ok) {
    const text = (await response.text().catch(() => '')).slice(0, 500);
    throw new SpeechProviderError(provider, `HTTP ${response.status}: ${text || response.statusText}`, response.status >= 500 || response.status === 429);
  }
  if (!response.body) return;
  const reader = response.body.getReader();
  try {
    for (;;) {
      let next: Awaited<ReturnType<typeof reader.read>>;
      try {
        next = await reader.read();
      } catch (error) {
        if (signal?.aborted) return;
        throw new SpeechProviderError(provider, `the audio stream broke: ${(error as Error).message}`, true);
      }
      if (next.done) return;
      if (next.value.length > 0) yield next.value;
    }
  } finally {
    // The consumer stopped early (a barge-in that broke its loop): the provider stops sending.
    await reader.cancel().catch(() => undefined);
  }
}

/** A BCP-47 tag's primary language subtag, lower case (`en-US` → `en`). */
export const primaryLanguage = (tag: string): string => (tag.split('-')[0] ?? tag).toLowerCase();
