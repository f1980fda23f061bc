/**
 * The two speech ports of a call that passes through the media worker (docs/voice.md#the-media-worker): a
 * streaming speech-to-text and a text-to-speech. Every adapter speaks telephone audio on this side, whatever the
 * provider speaks on the other: G.711 μ-law, mono, 8 kHz, as Twilio Media Streams carry it, so that audio crosses
 * the worker without a conversion it did not need.
 */

/** G.711 μ-law, mono, 8,000 samples a second: one byte a sample, 160 bytes every 20 ms. */
export const telephoneAudio = { encoding: 'mulaw', sampleRate: 8_000, channels: 1 } as const;

export interface TranscriptionOptions {
  /** BCP-47 (`en-US`): the agent's language. */
  language: string;
  /** The provider's model, as the catalog names it (`nova-3`); the adapter's default when absent. */
  model?: string | undefined;
  /**
   * Silence after speech, in ms, after which the provider itself says the speaker finished (`endOfTurn` on the
   * final that closes the utterance): Deepgram's `endpointing`, the built-in engine's silence threshold. Undefined:
   * the provider's default.
   */
  endpointingMs?: number | undefined;
  /** Closes the stream (as `close()`) when aborted. */
  signal?: AbortSignal | undefined;
}

/** What a transcription stream reports, in order. Times are ms of audio since the stream opened. */
export type TranscriptEvent =
  /** The provider heard speech begin: the cue for barge-in, before any words are known. */
  | { type: 'speech-started'; atMs: number }
  /** Words of the utterance so far; a later partial or final replaces them. */
  | { type: 'partial'; text: string }
  /**
   * Words that will not change. `endOfTurn`: the provider's endpointing says the speaker finished (Deepgram's
   * `speech_final`); the finals since the previous end of turn, joined, are what the caller said.
   */
  | { type: 'final'; text: string; endOfTurn: boolean; startMs: number; endMs: number }
  /** The stream failed and ends; the call goes on without hearing (and says so in its log). */
  | { type: 'error'; message: string };

export interface TranscriptionStream {
  /** Audio as it arrives: telephone audio bytes, any length. Never blocks; the adapter buffers what it must. */
  write(audio: Uint8Array): void;
  /**
   * Asks for finals of everything written so far now, instead of after the provider's own endpointing (Deepgram's
   * `Finalize`): an end of turn that another detector (silence) decided. The last final it causes has `endOfTurn`.
   */
  finalize(): void;
  /** No more audio: the stream reports what is left, then its events end. */
  end(): void;
  /** Ends the stream at once, dropping what was not reported; its events end. */
  close(): void;
  events: AsyncIterable<TranscriptEvent>;
}

/** A speech-to-text provider (an STT model of the catalog). */
export interface SpeechToText {
  /** The catalog's provider name: `builtin`, `deepgram`, `amazon`. */
  readonly provider: string;
  open(options: TranscriptionOptions): TranscriptionStream;
}

export interface SynthesisOptions {
  /** A voice of the voices catalog (`GET /v1/chat/voices`) of this provider. */
  voiceId: string;
  /** BCP-47: the agent's language. */
  language: string;
  /** The provider's model, as the catalog names it (`sonic-2`); the adapter's default when absent. */
  model?: string | undefined;
  /** Stops the synthesis (a barge-in): the iterator ends, and the provider's request is cancelled. */
  signal?: AbortSignal | undefined;
}

/** A text-to-speech provider (a TTS model of the catalog). */
export interface TextToSpeech {
  /** The catalog's provider name: `builtin`, `amazon`, `cartesia`, `rime`, `elevenlabs`. */
  readonly provider: string;
  /**
   * `text` spoken, as telephone audio, in chunks as the provider delivers them (the first as early as it can: it is
   * the call's latency). Throws `SpeechProviderError` when the provider refuses or fails.
   */
  synthesize(text: string, options: SynthesisOptions): AsyncIterable<Uint8Array>;
}

/** A provider refused or failed; `retryable` when trying again could succeed (5xx, a dropped connection). */
export class SpeechProviderError extends Error {
  readonly provider: string;
  readonly retryable: boolean;

  constructor(provider: string, message: string, retryable: boolean) {
    super(`${provider}: ${message}`);
    this.name = 'SpeechProviderError';
    this.provider = provider;
    this.retryable = retryable;
  }
}

/** A tool a speech-to-speech model may call: our tool engine runs it and hands the result back. */
export interface SpeechToSpeechTool {
  name: string;
  description: string;
  /** JSON Schema of the arguments. */
  parameters: Record<string, unknown>;
}

export interface SpeechToSpeechOptions {
  /** The provider's model, as the catalog names it (`amazon.nova-sonic-v1:0`, `gpt-realtime`). */
  model: string;
  /** The agent's system prompt, its variables filled in. */
  instructions: string;
  /** A voice of the provider; its default when absent. */
  voiceId?: string | undefined;
  /** BCP-47: the agent's language. */
  language: string;
  tools: readonly SpeechToSpeechTool[];
  /** Closes the session (as `close()`) when aborted. */
  signal?: AbortSignal | undefined;
}

/** What a speech-to-speech session reports, in order. */
export type SpeechToSpeechEvent =
  /** The caller began speaking: the cue for barge-in. */
  | { type: 'speech-started' }
  /** What the caller said in one turn, as the model's transcription heard it. */
  | { type: 'user-transcript'; text: string }
  /** Telephone audio of the model's reply, as it is produced. */
  | { type: 'audio'; audio: Uint8Array }
  /** Text of the reply being spoken; `final` once the reply's transcript is whole. */
  | { type: 'assistant-transcript'; text: string; final: boolean }
  /**
   * The model asks for a tool: answer with `toolResult(callId, …)`. The reply that asks ends (`response-done`) once
   * it has asked; the model answers in a new reply once every call has its result.
   */
  | { type: 'tool-call'; callId: string; name: string; arguments: string }
  /**
   * Tokens the provider counted for the model's work since its last report (a response's, or a part of it), as it
   * reports them: what the usage meter counts for the speech-to-speech model.
   */
  | { type: 'usage'; inputTokens: number; outputTokens: number }
  /** The model finished its reply (or stopped it after `interrupt`, or asked for tools). */
  | { type: 'response-done' }
  /** The session failed and ends. */
  | { type: 'error'; message: string };

/** One conversation with a speech-to-speech model: the caller's audio in, the model's audio and both transcripts out. */
export interface SpeechToSpeechSession {
  /** The caller's audio as it arrives: telephone audio bytes, any length. */
  write(audio: Uint8Array): void;
  /** The output of a tool the model called. */
  toolResult(callId: string, output: string): void;
  /** The caller spoke over the reply: it stops, and the model keeps only the `playedMs` of it that were heard. */
  interrupt(playedMs: number): void;
  /** Has the model say `text` (the welcome message) as its own turn. */
  say(text: string): void;
  /** Ends the session; its events end. */
  close(): void;
  events: AsyncIterable<SpeechToSpeechEvent>;
}

/** A speech-to-speech provider (an STS model of the catalog): Amazon Nova Sonic, the OpenAI Realtime protocol. */
export interface SpeechToSpeech {
  /** The catalog's provider name: `bedrock`, `openai-compatible`, `builtin`. */
  readonly provider: string;
  open(options: SpeechToSpeechOptions): SpeechToSpeechSession;
}
