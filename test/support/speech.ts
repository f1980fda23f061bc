import type { SimulatorEngines } from '../../infra/local/speech-simulator-server.ts';

/**
 * Engines for the protocol tests of the speech simulators: "speech" that is the text's bytes, each held for 10 ms
 * of telephone audio (so a test knows exactly what audio a synthesis must yield), and a recogniser that answers
 * what it is told to. The tests that hear real audio use the built-in engines.
 */
export function protocolEngines(heard = 'hello there'): SimulatorEngines & { recognised: Uint8Array[] } {
  const recognised: Uint8Array[] = [];
  return {
    recognised,
    speak: async (text) => spokenBytes(text),
    recognise: async (audio) => {
      recognised.push(audio);
      return heard;
    },
  };
}

export function spokenBytes(text: string): Uint8Array {
  const bytes = Buffer.from(text, 'utf8');
  const audio = new Uint8Array(bytes.length * 80);
  bytes.forEach((byte, index) => audio.fill(byte, index * 80, (index + 1) * 80));
  return audio;
}

export async function collect(chunks: AsyncIterable<Uint8Array>): Promise<{ audio: Uint8Array; count: number }> {
  const parts: Uint8Array[] = [];
  for await (const chunk of chunks) parts.push(chunk);
  return { audio: Buffer.concat(parts), count: parts.length };
}
