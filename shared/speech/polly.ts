/**
 * Amazon Polly (https://docs.aws.amazon.com/polly/latest/dg/API_SynthesizeSpeech.html): SynthesizeSpeech with
 * `OutputFormat: pcm` at 8 kHz (Polly's telephone rate; it offers no μ-law), converted to μ-law as it streams.
 * The catalog's model names the engine (`polly-neural` → `Engine: neural`); the voice is the voices catalog's
 * (`Joanna-Neural`: Polly's `Joanna`, as ConversationRelay spells it).
 */
import type { Readable } from 'node:stream';
import { PollyClient, SynthesizeSpeechCommand, type Engine } from '@aws-sdk/client-polly';
import { bytesToPcm16, muLawEncode } from './telephone-audio.ts';
import { SpeechProviderError, type SynthesisOptions, type TextToSpeech } from './ports.ts';
import { awsServiceError } from './aws-errors.ts';

export const pollyDefaultModel = 'polly-neural';

export function pollyTextToSpeech(connection: { region: string; endpoint?: string | undefined }): TextToSpeech {
  const client = new PollyClient({
    region: connection.region,
    ...(connection.endpoint ? { endpoint: connection.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
  });
  return {
    provider: 'amazon',
    async *synthesize(text: string, options: SynthesisOptions): AsyncIterable<Uint8Array> {
      if (options.signal?.aborted) return;
      const engine = (options.model ?? pollyDefaultModel).replace(/^polly-/, '') as Engine;
      let audio: AsyncIterable<Uint8Array>;
      try {
        const response = await client.send(
          new SynthesizeSpeechCommand({
            Text: text,
            VoiceId: options.voiceId.split('-')[0] as never,
            Engine: engine,
            LanguageCode: options.language as never,
            OutputFormat: 'pcm',
            SampleRate: '8000',
          }),
          { abortSignal: options.signal },
        );
        if (!response.AudioStream) throw new SpeechProviderError('amazon', 'Polly answered without audio', true);
        audio = response.AudioStream as AsyncIterable<Uint8Array>;
      } catch (error) {
        if (options.signal?.aborted) return;
        throw awsServiceError('amazon', error);
      }
      const toMulaw = pcmChunksToMulaw();
      try {
        for await (const chunk of audio) {
          if (options.signal?.aborted) return;
          const converted = toMulaw(chunk);
          if (converted.length > 0) yield converted;
        }
      } catch (error) {
        if (options.signal?.aborted) return;
        throw new SpeechProviderError('amazon', `the audio stream broke: ${(error as Error).message}`, true);
      } finally {
        // Stopped early (an abort, or a consumer that broke its loop): the HTTP/2 stream is reset, Polly stops sending.
        (audio as Partial<Readable>).destroy?.();
      }
    },
  };
}

/** Polly's PCM as it arrives, chunks of any length: a chunk that ends mid-sample keeps its odd byte for the next. */
function pcmChunksToMulaw(): (chunk: Uint8Array) => Uint8Array {
  let carry: number | undefined;
  return (chunk) => {
    let joined = chunk;
    if (carry !== undefined) {
      joined = new Uint8Array(chunk.length + 1);
      joined[0] = carry;
      joined.set(chunk, 1);
    }
    carry = joined.length % 2 === 1 ? joined[joined.length - 1] : undefined;
    return muLawEncode(bytesToPcm16(joined.subarray(0, joined.length - (joined.length % 2))));
  };
}
