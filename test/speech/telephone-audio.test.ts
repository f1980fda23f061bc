import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { muLawDecode, muLawDecodeSample, muLawEncode, muLawEncodeSample, readWav, resample, Resampler, writeWav } from '../../shared/speech/telephone-audio.ts';

const tone = (hz: number, rate: number, seconds: number, amplitude = 10_000): Int16Array =>
  Int16Array.from({ length: Math.round(rate * seconds) }, (_, i) => Math.round(amplitude * Math.sin((2 * Math.PI * hz * i) / rate)));
/** Root mean square away from the edges, where the filter's ramps are. */
const rms = (samples: Int16Array): number => {
  const middle = samples.subarray(Math.floor(samples.length / 8), Math.floor((samples.length * 7) / 8));
  return Math.sqrt(middle.reduce((sum, sample) => sum + sample * sample, 0) / middle.length);
};
const rates = fc.constantFrom<[number, number]>([8_000, 16_000], [16_000, 8_000], [22_050, 8_000], [22_050, 16_000], [8_000, 22_050]);

describe('G.711 μ-law', () => {
  it('decodes what it encodes to within half a step of its segment', () => {
    fc.assert(
      fc.property(fc.integer({ min: -32_768, max: 32_767 }), (sample) => {
        const decoded = muLawDecodeSample(muLawEncodeSample(sample));
        // The step doubles with each segment: 8 at the smallest magnitudes, 1,024 at the largest (clipped at 32,124).
        const step = 2 ** Math.max(3, Math.floor(Math.log2(Math.abs(sample) + 0x84)) - 4);
        expect(Math.abs(decoded - Math.max(-32_124, Math.min(32_124, sample)))).toBeLessThanOrEqual(step / 2 + 4);
        expect(Math.sign(decoded) * Math.sign(sample)).toBeGreaterThanOrEqual(0);
      }),
    );
  });

  it('encodes what it decodes back to the same byte (but for the negative zero, 0x7f, which is 0xff)', () => {
    const bytes = Uint8Array.from({ length: 256 }, (_, i) => i);
    const again = muLawEncode(muLawDecode(bytes));
    expect([...again].map((byte, i) => (byte === i ? 'same' : `${i}→${byte}`)).filter((change) => change !== 'same')).toEqual(['127→255']);
  });

  it('has the values of G.711: silence is 0xff, full scale is 0x80 and 0x00', () => {
    expect(muLawEncodeSample(0)).toBe(0xff);
    expect(muLawEncodeSample(32_767)).toBe(0x80);
    expect(muLawEncodeSample(-32_768)).toBe(0x00);
    expect(muLawDecodeSample(0x80)).toBe(32_124);
    expect(muLawDecodeSample(0x00)).toBe(-32_124);
  });
});

describe('the resampler', () => {
  it('keeps a tone of the pass band (to 3 kHz: the cut-off is 90% of 4 kHz) within half a decibel, at every pair of rates', () => {
    fc.assert(
      fc.property(rates, fc.double({ min: 100, max: 3_000, noNaN: true }), ([from, to], hz) => {
        const out = resample(tone(hz, from, 0.2), from, to);
        expect(out.length).toBe(Math.ceil((0.2 * from * to) / from));
        expect(Math.abs(20 * Math.log10(rms(out) / (10_000 / Math.SQRT2)))).toBeLessThan(0.5);
      }),
      { numRuns: 40 },
    );
  });

  it('low-passes when decimating: a tone above the new Nyquist frequency does not fold back into the band', () => {
    fc.assert(
      fc.property(fc.constantFrom<[number, number]>([16_000, 8_000], [22_050, 8_000], [22_050, 16_000]), fc.double({ min: 0.55, max: 0.95, noNaN: true }), ([from, to], fraction) => {
        const hz = to / 2 + fraction * (from / 2 - to / 2);
        const out = resample(tone(hz, from, 0.2), from, to);
        // More than 40 dB down.
        expect(rms(out)).toBeLessThan(10_000 / Math.SQRT2 / 100);
      }),
      { numRuns: 40 },
    );
  });

  it('gives the same samples whatever the chunks the audio arrives in', () => {
    fc.assert(
      fc.property(rates, fc.array(fc.integer({ min: 1, max: 700 }), { minLength: 1, maxLength: 12 }), ([from, to], sizes) => {
        const input = tone(440, from, sizes.reduce((a, b) => a + b, 0) / from);
        const whole = resample(input, from, to);
        const resampler = new Resampler(from, to);
        const parts: number[] = [];
        let offset = 0;
        for (const size of sizes) {
          parts.push(...resampler.push(input.subarray(offset, offset + size)));
          offset += size;
        }
        parts.push(...resampler.flush());
        expect(parts).toEqual([...whole]);
      }),
      { numRuns: 40 },
    );
  });
});

describe('WAV files', () => {
  it('read back what was written', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -32_768, max: 32_767 }), { maxLength: 500 }), fc.constantFrom(8_000, 16_000, 22_050), (values, rate) => {
        const read = readWav(writeWav(Int16Array.from(values), rate));
        expect(read.sampleRate).toBe(rate);
        expect([...read.samples]).toEqual(values);
      }),
    );
  });

  it('reads a μ-law file (format 7) and a streamed one whose data size is unknown', () => {
    const samples = Int16Array.from([0, 1_000, -1_000, 32_000]);
    const pcm = writeWav(samples, 8_000);
    const streamed = pcm.slice();
    new DataView(streamed.buffer).setUint32(40, 0x7fff_f000, true);
    expect([...readWav(streamed).samples]).toEqual([...samples]);

    const mulaw = pcm.slice(0, 44 + samples.length);
    const view = new DataView(mulaw.buffer);
    view.setUint16(20, 7, true);
    view.setUint16(34, 8, true);
    view.setUint32(40, samples.length, true);
    mulaw.set(muLawEncode(samples), 44);
    expect([...readWav(mulaw).samples]).toEqual([...muLawDecode(muLawEncode(samples))]);
  });
});
