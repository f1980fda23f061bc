/**
 * Voice activity detection over telephone audio (decision 442): frame energy against a noise floor that follows the
 * line's own noise, so that a hiss or hum is not speech and a quiet caller on a clean line is. Everything is counted
 * in samples of the audio pushed, never in wall-clock time, so a test and a call decide alike however busy the
 * machine is.
 */

export interface VoiceActivityOptions {
  sampleRate: number;
  /** The silence after speech that ends an utterance (an end of turn, for the caller of it). */
  silenceMs: number;
  /** How far above the noise floor a frame must be to count as speech. */
  marginDb?: number;
}

export type VoiceActivityEvent =
  /** Speech began at `atSample` (the first sample of its first frame); reported once it lasted `speechStartMs`. */
  | { type: 'speech-started'; atSample: number }
  /** Speech ended at `atSample` (where the silence began) and `silenceMs` of silence followed it. */
  | { type: 'speech-ended'; atSample: number };

const frameMs = 10;
/** Speech this long (3 frames) starts an utterance: a click or a pop does not. */
const speechStartMs = 30;
/**
 * Speech is never quieter than this (dBFS), however clean the line: a caller on a telephone is at −25 dBFS give or
 * take 10 dB, and line noise that starts after digital silence (a floor at −100 dBFS) is not speech below it.
 */
const quietestSpeechDb = -45;
/**
 * A line starts with this floor at most: a call whose first sound is speech (louder than −23 dBFS) is still heard,
 * and one whose first sound is line noise as loud as −30 dBFS is not taken for speech.
 */
const initialFloorCeilingDb = -35;
/** While frames count as speech, the floor still rises this much per frame, so that a step up of line noise ends "speech" (2 dB/s). */
const floorRiseInSpeechDb = 0.02;
/** Outside speech, the floor moves this fraction of the way to each frame's energy (a 100 ms time constant upward). */
const floorFollow = 0.1;

export class VoiceActivityDetector {
  private readonly frameLength: number;
  private readonly silenceFrames: number;
  private readonly startFrames: number;
  private readonly marginDb: number;
  private partial: number[] = [];
  private frameIndex = 0;
  private floorDb: number | undefined;
  private speaking = false;
  private voicedRun = 0;
  private silentRun = 0;

  constructor(options: VoiceActivityOptions) {
    this.frameLength = Math.round((options.sampleRate * frameMs) / 1000);
    this.silenceFrames = Math.max(1, Math.round(options.silenceMs / frameMs));
    this.startFrames = speechStartMs / frameMs;
    this.marginDb = options.marginDb ?? 12;
  }

  /** Whether the audio so far ends in speech (or in a silence shorter than `silenceMs` after it). */
  get inSpeech(): boolean {
    return this.speaking;
  }

  /** Samples pushed so far, whole frames and the partial one. */
  get samples(): number {
    return this.frameIndex * this.frameLength + this.partial.length;
  }

  push(samples: Int16Array): VoiceActivityEvent[] {
    const events: VoiceActivityEvent[] = [];
    for (const sample of samples) {
      this.partial.push(sample);
      if (this.partial.length === this.frameLength) {
        const event = this.frame(this.partial);
        if (event) events.push(event);
        this.partial = [];
      }
    }
    return events;
  }

  /** Ends the current utterance now (an end of turn decided elsewhere): the next speech starts a new one. */
  endSpeech(): void {
    this.speaking = false;
    this.voicedRun = 0;
    this.silentRun = 0;
  }

  private frame(frame: number[]): VoiceActivityEvent | undefined {
    let energy = 0;
    for (const sample of frame) energy += sample * sample;
    const db = 10 * Math.log10(energy / frame.length / 32_768 ** 2 + 1e-10);
    this.floorDb ??= Math.min(db, initialFloorCeilingDb);
    const voiced = db > Math.max(this.floorDb + this.marginDb, quietestSpeechDb);
    if (voiced) this.floorDb += floorRiseInSpeechDb;
    else this.floorDb = db < this.floorDb ? db : this.floorDb + floorFollow * (db - this.floorDb);
    const start = this.frameIndex++ * this.frameLength;
    if (voiced) {
      this.voicedRun++;
      this.silentRun = 0;
      if (!this.speaking && this.voicedRun === this.startFrames) {
        this.speaking = true;
        return { type: 'speech-started', atSample: start - (this.startFrames - 1) * this.frameLength };
      }
      return undefined;
    }
    this.voicedRun = 0;
    if (!this.speaking) return undefined;
    if (++this.silentRun < this.silenceFrames) return undefined;
    this.endSpeech();
    return { type: 'speech-ended', atSample: start - (this.silenceFrames - 1) * this.frameLength };
  }
}
