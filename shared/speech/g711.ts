/** G.711 μ-law ⇄ 16-bit linear PCM (little-endian), for the providers that speak PCM (Polly, Transcribe). */

const bias = 0x84;
const clip = 32_635;

function encodeSample(sample: number): number {
  const sign = sample < 0 ? 0x80 : 0;
  let magnitude = Math.min(Math.abs(sample), clip) + bias;
  let exponent = 7;
  for (let mask = 0x4000; (magnitude & mask) === 0 && exponent > 0; mask >>= 1) exponent -= 1;
  const mantissa = (magnitude >> (exponent + 3)) & 0x0f;
  magnitude = sign | (exponent << 4) | mantissa;
  return ~magnitude & 0xff;
}

function decodeSample(byte: number): number {
  const value = ~byte & 0xff;
  const magnitude = ((((value & 0x0f) << 3) + bias) << ((value & 0x70) >> 4)) - bias;
  return value & 0x80 ? -magnitude : magnitude;
}

/** μ-law bytes → 16-bit little-endian PCM bytes (two a sample). */
export function mulawToPcm16(mulaw: Uint8Array): Uint8Array {
  const pcm = new Uint8Array(mulaw.length * 2);
  const view = new DataView(pcm.buffer);
  for (let index = 0; index < mulaw.length; index += 1) view.setInt16(index * 2, decodeSample(mulaw[index]!), true);
  return pcm;
}

/** 16-bit little-endian PCM bytes (an even count) → μ-law bytes. */
export function pcm16ToMulaw(pcm: Uint8Array): Uint8Array {
  const view = new DataView(pcm.buffer, pcm.byteOffset, pcm.byteLength);
  const mulaw = new Uint8Array(pcm.byteLength >> 1);
  for (let index = 0; index < mulaw.length; index += 1) mulaw[index] = encodeSample(view.getInt16(index * 2, true));
  return mulaw;
}

/**
 * Converts PCM arriving in chunks of any length: a chunk that ends in the middle of a sample keeps its odd byte for
 * the next one.
 */
export function pcm16ChunksToMulaw(): (chunk: Uint8Array) => Uint8Array {
  let carry: number | undefined;
  return (chunk) => {
    let joined = chunk;
    if (carry !== undefined) {
      joined = new Uint8Array(chunk.length + 1);
      joined[0] = carry;
      joined.set(chunk, 1);
    }
    carry = joined.length % 2 === 1 ? joined[joined.length - 1] : undefined;
    return pcm16ToMulaw(joined.subarray(0, joined.length - (joined.length % 2)));
  };
}
