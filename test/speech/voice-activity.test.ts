import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { VoiceActivityDetector, type VoiceActivityEvent } from '../../shared/speech/voice-activity.ts';

const rate = 8_000;
const frame = 80;

/** Line noise: uniform white noise at `db` dBFS (RMS), from a seeded generator so that a failure replays. */
function noise(samples: number, db: number, seed: number): Int16Array {
  let state = seed >>> 0 || 1;
  const amplitude = 32_768 * 10 ** (db / 20) * Math.sqrt(3);
  return Int16Array.from({ length: samples }, () => {
    state = (state * 1_664_525 + 1_013_904_223) >>> 0;
    return Math.round(amplitude * (state / 2 ** 32 - 0.5) * 2);
  });
}

function tone(samples: number, amplitude: number): Int16Array {
  return Int16Array.from({ length: samples }, (_, i) => Math.round(amplitude * Math.sin((2 * Math.PI * 440 * i) / rate)));
}

const concat = (...parts: Int16Array[]): Int16Array => Int16Array.from(parts.flatMap((part) => [...part]));

/** Pushes the audio in the given chunk sizes (cycled), as a call's audio arrives. */
function detect(detector: VoiceActivityDetector, audio: Int16Array, chunks: readonly number[] = [160]): VoiceActivityEvent[] {
  const events: VoiceActivityEvent[] = [];
  for (let offset = 0, i = 0; offset < audio.length; i++) {
    const size = chunks[i % chunks.length] as number;
    events.push(...detector.push(audio.subarray(offset, offset + size)));
    offset += size;
  }
  return events;
}

const chunkSizes = fc.array(fc.integer({ min: 1, max: 400 }), { minLength: 1, maxLength: 5 });

describe('voice activity detection', () => {
  it('never reports speech in silence or in steady line noise up to -30 dBFS (a very noisy line)', () => {
    fc.assert(
      fc.property(fc.double({ min: -90, max: -30, noNaN: true }), fc.integer(), chunkSizes, (db, seed, chunks) => {
        const detector = new VoiceActivityDetector({ sampleRate: rate, silenceMs: 500 });
        expect(detect(detector, noise(rate * 3, db, seed), chunks)).toEqual([]);
      }),
      { numRuns: 60 },
    );
  });

  it('never reports speech in digital silence, nor in line noise up to -47 dBFS that follows it', () => {
    fc.assert(
      fc.property(fc.double({ min: -90, max: -47, noNaN: true }), fc.integer(), chunkSizes, (db, seed, chunks) => {
        const detector = new VoiceActivityDetector({ sampleRate: rate, silenceMs: 500 });
        expect(detect(detector, concat(new Int16Array(rate), noise(rate * 3, db, seed)), chunks)).toEqual([]);
      }),
      { numRuns: 60 },
    );
  });

  it('reports a tone burst 20 dB or more over line noise as speech starting within a frame of its first sample', () => {
    fc.assert(
      fc.property(fc.integer({ min: 4_000, max: 12_000 }), fc.double({ min: -70, max: -45, noNaN: true }), fc.integer({ min: 3_000, max: 20_000 }), fc.integer(), chunkSizes, (onset, noiseDb, amplitude, seed, chunks) => {
        const detector = new VoiceActivityDetector({ sampleRate: rate, silenceMs: 500 });
        const audio = noise(onset + 4_000, noiseDb, seed);
        audio.set(tone(4_000, amplitude).map((sample, i) => sample + (audio[onset + i] as number)), onset);
        const started = detect(detector, audio, chunks).filter((event) => event.type === 'speech-started');
        expect(started).toHaveLength(1);
        expect(Math.abs((started[0] as VoiceActivityEvent).atSample - onset)).toBeLessThanOrEqual(frame);
      }),
      { numRuns: 60 },
    );
  });

  it('hears speech that begins the call, before any noise was measured', () => {
    const detector = new VoiceActivityDetector({ sampleRate: rate, silenceMs: 500 });
    expect(detect(detector, tone(2_000, 5_000))).toEqual([{ type: 'speech-started', atSample: 0 }]);
  });

  it('ends speech after exactly the silence asked for, counted in samples, and not after a shorter pause', () => {
    fc.assert(
      fc.property(fc.integer({ min: 10, max: 150 }).map((frames) => frames * 10), (silenceMs) => {
        const detector = new VoiceActivityDetector({ sampleRate: rate, silenceMs });
        const silenceSamples = (silenceMs * rate) / 1000;
        const speech = concat(new Int16Array(1_600), tone(4_000, 8_000));
        const speechEnd = speech.length;
        const pause = concat(speech, noise(silenceSamples - frame, -70, 1));
        expect(detect(detector, pause).map((event) => event.type)).toEqual(['speech-started']);
        expect(detector.inSpeech).toBe(true);
        expect(detector.push(noise(frame, -70, 2))).toEqual([{ type: 'speech-ended', atSample: speechEnd }]);
        expect(detector.inSpeech).toBe(false);
      }),
      { numRuns: 30 },
    );
  });

  it('keeps one utterance across a pause shorter than the silence, and starts a new one after endSpeech()', () => {
    const detector = new VoiceActivityDetector({ sampleRate: rate, silenceMs: 500 });
    const audio = concat(new Int16Array(800), tone(2_000, 8_000), new Int16Array(3_200), tone(2_000, 8_000));
    expect(detect(detector, audio).map((event) => event.type)).toEqual(['speech-started']);
    detector.endSpeech();
    expect(detector.push(tone(400, 8_000))).toEqual([{ type: 'speech-started', atSample: audio.length }]);
  });
});
