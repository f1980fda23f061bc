/**
 * Amazon Transcribe streaming (https://docs.aws.amazon.com/transcribe/latest/APIReference/API_streaming_StartStreamTranscription.html):
 * StartStreamTranscription over HTTP/2 with AWS event-stream framing (the SDK's), sent 16-bit PCM at 8 kHz
 * (converted from μ-law: Transcribe takes no μ-law), with partial-results stabilisation.
 *
 * Transcribe has no endpointing and no speech-start event of its own, so this adapter defines them
 * (docs/voice.md#speech-providers, decision 453):
 * - `speech-started` is the first partial of a new segment;
 * - a segment Transcribe completes (`IsPartial: false`, which it does at a pause) is held; it is `endOfTurn` once
 *   `endpointingMs` of audio (default 500) has been written after its end with no new words, and not when words
 *   of a next segment come first. Counted in audio written, not in time, so a slow network changes nothing.
 * - `finalize()` reports the held segment, or else the words of the segment under way, as the turn's last final
 *   (and drops what Transcribe says of that segment afterwards).
 */
import { StartStreamTranscriptionCommand, TranscribeStreamingClient, type AudioStream, type LanguageCode, type Result } from '@aws-sdk/client-transcribe-streaming';
import { awsServiceError } from './aws-errors.ts';
import { EventQueue } from './event-queue.ts';
import { muLawDecode, pcm16ToBytes } from './telephone-audio.ts';
import type { SpeechToText, TranscriptEvent, TranscriptionOptions, TranscriptionStream } from './ports.ts';

export const transcribeDefaultEndpointingMs = 500;
/** Telephone audio: 8 bytes of μ-law a millisecond. */
const bytesPerMs = 8;

export function transcribeSpeechToText(connection: { region: string; endpoint?: string | undefined }): SpeechToText {
  const client = new TranscribeStreamingClient({
    region: connection.region,
    ...(connection.endpoint ? { endpoint: connection.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
  });
  return { provider: 'amazon', open: (options) => openStream(client, options) };
}

interface Segment {
  resultId: string;
  text: string;
  startMs: number;
  endMs: number;
}

function openStream(client: TranscribeStreamingClient, options: TranscriptionOptions): TranscriptionStream {
  const events = new EventQueue<TranscriptEvent>();
  const audio = new EventQueue<Uint8Array>();
  const aborter = new AbortController();
  const endpointingMs = options.endpointingMs ?? transcribeDefaultEndpointingMs;
  let writtenMs = 0;
  let held: Segment | undefined;
  let underWay: Segment | undefined;
  /** Segments finalize() already reported: what Transcribe says of them later is dropped. */
  const reported = new Set<string>();

  const report = (segment: Segment, endOfTurn: boolean) => {
    reported.add(segment.resultId);
    events.push({ type: 'final', text: segment.text, endOfTurn, startMs: segment.startMs, endMs: segment.endMs });
  };
  const releaseHeld = (endOfTurn: boolean) => {
    if (held) report(held, endOfTurn);
    held = undefined;
  };
  const onResult = (result: Result) => {
    const resultId = result.ResultId ?? '';
    const text = result.Alternatives?.[0]?.Transcript?.trim() ?? '';
    if (!text || reported.has(resultId)) return;
    const segment = { resultId, text, startMs: Math.round((result.StartTime ?? 0) * 1000), endMs: Math.round((result.EndTime ?? 0) * 1000) };
    if (held && held.resultId !== resultId) releaseHeld(false);
    if (result.IsPartial) {
      if (underWay?.resultId !== resultId) events.push({ type: 'speech-started', atMs: segment.startMs });
      underWay = segment;
      events.push({ type: 'partial', text });
      return;
    }
    underWay = undefined;
    held = segment;
    checkEndpoint();
  };
  const checkEndpoint = () => {
    if (held && writtenMs >= held.endMs + endpointingMs) releaseHeld(true);
  };

  async function* audioStream(): AsyncIterable<AudioStream> {
    for await (const chunk of audio) yield { AudioEvent: { AudioChunk: pcm16ToBytes(muLawDecode(chunk)) } };
  }
  void (async () => {
    try {
      const response = await client.send(
        new StartStreamTranscriptionCommand({
          LanguageCode: options.language as LanguageCode,
          MediaEncoding: 'pcm',
          MediaSampleRateHertz: 8000,
          EnablePartialResultsStabilization: true,
          PartialResultsStability: 'high',
          AudioStream: audioStream(),
        }),
        { abortSignal: aborter.signal },
      );
      for await (const event of response.TranscriptResultStream ?? []) {
        if (event.TranscriptEvent) for (const result of event.TranscriptEvent.Transcript?.Results ?? []) onResult(result);
        else {
          const failure = Object.values(event).find((value) => value !== undefined) as { message?: string } | undefined;
          throw Object.assign(new Error(failure?.message ?? 'stream failed'), { name: Object.keys(event)[0] });
        }
      }
      // The audio ended: what is held is the last thing said.
      releaseHeld(true);
    } catch (error) {
      if (!aborter.signal.aborted) events.push({ type: 'error', message: awsServiceError('amazon', error).message });
    } finally {
      events.end();
    }
  })();

  const close = () => {
    aborter.abort();
    audio.end(true);
    events.end(true);
  };
  options.signal?.addEventListener('abort', close, { once: true });
  return {
    write: (chunk) => {
      if (audio.ended || chunk.length === 0) return;
      audio.push(chunk);
      writtenMs += chunk.length / bytesPerMs;
      checkEndpoint();
    },
    finalize: () => {
      if (held) releaseHeld(true);
      else if (underWay) {
        report(underWay, true);
        underWay = undefined;
      }
    },
    end: () => audio.end(),
    close,
    events,
  };
}
