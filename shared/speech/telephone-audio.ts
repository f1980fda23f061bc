/**
 * Telephone audio: G.711 μ-law, PCM16 resampling between the rates the engines and Twilio speak (8 kHz, 16 kHz,
 * 22,050 Hz), and WAV files. Hand-written (decision 441): each is a few lines, and a package would add a dependency
 * for less than this file.
 */

const muLawBias = 0x84;
const muLawClip = 32_635;

/** One PCM16 sample as a G.711 μ-law byte. */
export function muLawEncodeSample(sample: number): number {
  const sign = sample < 0 ? 0x80 : 0;
  const magnitude = Math.min(Math.abs(sample), muLawClip) + muLawBias;
  const exponent = Math.max(0, 31 - Math.clz32(magnitude) - 7);
  const mantissa = (magnitude >> (exponent + 3)) & 0x0f;
  return ~(sign | (exponent << 4) | mantissa) & 0xff;
}

/** One G.711 μ-law byte as a PCM16 sample. */
export function muLawDecodeSample(byte: number): number {
  const inverted = ~byte & 0xff;
  const exponent = (inverted >> 4) & 0x07;
  const magnitude = ((((inverted & 0x0f) << 3) + muLawBias) << exponent) - muLawBias;
  return inverted & 0x80 ? -magnitude : magnitude;
}

const decodeTable = Int16Array.from({ length: 256 }, (_, byte) => muLawDecodeSample(byte));

export function muLawEncode(samples: Int16Array): Uint8Array {
  const bytes = new Uint8Array(samples.length);
  for (let i = 0; i < samples.length; i++) bytes[i] = muLawEncodeSample(samples[i] as number);
  return bytes;
}

export function muLawDecode(bytes: Uint8Array): Int16Array {
  const samples = new Int16Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) samples[i] = decodeTable[bytes[i] as number] as number;
  return samples;
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/**
 * A streaming PCM16 resampler: windowed-sinc (Blackman) interpolation, its cut-off 90% of the lower rate's Nyquist
 * frequency, so that decimating (22,050 → 8,000 Hz) low-passes first and nothing above 4 kHz folds back into the
 * band. Polyphase: the kernel is computed once per phase of the rates' ratio (2 phases for 8 → 16 kHz, 160 for
 * 22,050 → 8,000), not per sample. `push` returns what the audio so far determines; `flush` the rest.
 */
export class Resampler {
  private readonly step: number;
  private readonly phases: number;
  private readonly halfWidth: number;
  private readonly kernels: Float32Array[];
  private pending: Float32Array = new Float32Array(0);
  /** The absolute index of `pending[0]` among the input samples. */
  private pendingStart = 0;
  private inputLength = 0;
  private produced = 0;

  constructor(fromRate: number, toRate: number) {
    const divisor = gcd(fromRate, toRate);
    this.step = fromRate / divisor;
    this.phases = toRate / divisor;
    const cutoff = 0.45 * Math.min(1, toRate / fromRate);
    this.halfWidth = Math.ceil(6 / cutoff);
    this.kernels = Array.from({ length: this.phases }, (_, phase) => {
      const kernel = new Float32Array(2 * this.halfWidth);
      for (let j = 0; j < kernel.length; j++) {
        const distance = j - this.halfWidth + 1 - phase / this.phases;
        const x = 2 * cutoff * distance;
        const sinc = x === 0 ? 1 : Math.sin(Math.PI * x) / (Math.PI * x);
        const w = (distance + this.halfWidth) / (2 * this.halfWidth);
        const window = 0.42 - 0.5 * Math.cos(2 * Math.PI * w) + 0.08 * Math.cos(4 * Math.PI * w);
        kernel[j] = 2 * cutoff * sinc * window;
      }
      return kernel;
    });
  }

  push(samples: Int16Array): Int16Array {
    const joined = new Float32Array(this.pending.length + samples.length);
    joined.set(this.pending);
    joined.set(samples, this.pending.length);
    this.pending = joined;
    this.inputLength += samples.length;
    return this.drain(this.inputLength);
  }

  /** The output the last input samples still owed, as if silence followed them. */
  flush(): Int16Array {
    const total = this.inputLength;
    const padded = new Float32Array(this.pending.length + this.halfWidth);
    padded.set(this.pending);
    this.pending = padded;
    return this.drain(total + this.halfWidth, Math.ceil((total * this.phases) / this.step));
  }

  /** Outputs while the input up to `available` covers their kernel (and, flushing, up to `limit` of them). */
  private drain(available: number, limit = Infinity): Int16Array {
    const out: number[] = [];
    for (;;) {
      const position = this.produced * this.step;
      const base = Math.floor(position / this.phases);
      if (base + this.halfWidth >= available || this.produced >= limit) break;
      const kernel = this.kernels[position % this.phases] as Float32Array;
      let sum = 0;
      for (let j = 0; j < kernel.length; j++) {
        const index = base - this.halfWidth + 1 + j - this.pendingStart;
        if (index >= 0) sum += (this.pending[index] as number) * (kernel[j] as number);
      }
      out.push(Math.max(-32_768, Math.min(32_767, Math.round(sum))));
      this.produced++;
    }
    // Keep only what later outputs' kernels still reach.
    const keepFrom = Math.floor((this.produced * this.step) / this.phases) - this.halfWidth + 1;
    if (keepFrom > this.pendingStart) {
      this.pending = this.pending.slice(Math.min(keepFrom - this.pendingStart, this.pending.length));
      this.pendingStart = keepFrom;
    }
    return Int16Array.from(out);
  }
}

/** All of `samples` at another rate. */
export function resample(samples: Int16Array, fromRate: number, toRate: number): Int16Array {
  if (fromRate === toRate) return samples;
  const resampler = new Resampler(fromRate, toRate);
  const head = resampler.push(samples);
  const tail = resampler.flush();
  const all = new Int16Array(head.length + tail.length);
  all.set(head);
  all.set(tail, head.length);
  return all;
}

export interface WavAudio {
  sampleRate: number;
  /** Mono PCM16: the first channel of a multi-channel file. */
  samples: Int16Array;
}

/**
 * A WAV file's audio: PCM16 or G.711 μ-law (format 7, as Twilio's recordings are). A streamed file's data size
 * (eSpeak NG writes 0x7ffff000 to a pipe) is taken as "to the end".
 */
export function readWav(file: Uint8Array): WavAudio {
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const tag = (offset: number): string => String.fromCharCode(...file.subarray(offset, offset + 4));
  if (file.length < 12 || tag(0) !== 'RIFF' || tag(8) !== 'WAVE') throw new Error('not a WAV file');
  let format: { code: number; channels: number; sampleRate: number; bits: number } | undefined;
  for (let offset = 12; offset + 8 <= file.length; ) {
    const size = view.getUint32(offset + 4, true);
    if (tag(offset) === 'fmt ') {
      format = { code: view.getUint16(offset + 8, true), channels: view.getUint16(offset + 10, true), sampleRate: view.getUint32(offset + 12, true), bits: view.getUint16(offset + 22, true) };
    } else if (tag(offset) === 'data') {
      if (!format) throw new Error('WAV data before its format');
      const data = file.subarray(offset + 8, Math.min(file.length, offset + 8 + size));
      if (format.code === 1 && format.bits === 16) {
        const frames = Math.floor(data.length / (2 * format.channels));
        const dataView = new DataView(data.buffer, data.byteOffset, data.byteLength);
        const samples = Int16Array.from({ length: frames }, (_, i) => dataView.getInt16(i * 2 * format!.channels, true));
        return { sampleRate: format.sampleRate, samples };
      }
      if (format.code === 7 && format.bits === 8) {
        const mono = data.filter((_, i) => i % format!.channels === 0);
        return { sampleRate: format.sampleRate, samples: muLawDecode(mono) };
      }
      throw new Error(`WAV format ${format.code} with ${format.bits} bits is not PCM16 or μ-law`);
    }
    offset += 8 + size + (size % 2);
  }
  throw new Error('WAV file without data');
}

/** A mono PCM16 WAV file. */
export function writeWav(samples: Int16Array, sampleRate: number): Uint8Array {
  const file = new Uint8Array(44 + samples.length * 2);
  const view = new DataView(file.buffer);
  const text = (offset: number, value: string): void => file.set(Array.from(value, (c) => c.charCodeAt(0)), offset);
  text(0, 'RIFF');
  view.setUint32(4, 36 + samples.length * 2, true);
  text(8, 'WAVE');
  text(12, 'fmt ');
  view.setUint32(16, 16, true);
  view.setUint16(20, 1, true);
  view.setUint16(22, 1, true);
  view.setUint32(24, sampleRate, true);
  view.setUint32(28, sampleRate * 2, true);
  view.setUint16(32, 2, true);
  view.setUint16(34, 16, true);
  text(36, 'data');
  view.setUint32(40, samples.length * 2, true);
  for (let i = 0; i < samples.length; i++) view.setInt16(44 + i * 2, samples[i] as number, true);
  return file;
}

/** PCM16 samples as headerless little-endian bytes: what Polly answers and Transcribe streaming takes. */
export function pcm16ToBytes(samples: Int16Array): Uint8Array {
  const bytes = new Uint8Array(samples.length * 2);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < samples.length; i++) view.setInt16(i * 2, samples[i] as number, true);
  return bytes;
}

/** Headerless little-endian PCM16 bytes (an even count) as samples. */
export function bytesToPcm16(bytes: Uint8Array): Int16Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const samples = new Int16Array(bytes.byteLength >> 1);
  for (let i = 0; i < samples.length; i++) samples[i] = view.getInt16(i * 2, true);
  return samples;
}
