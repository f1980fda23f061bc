import type { SimulatorEngines } from '../../infra/local/speech-simulator-server.ts';
import { BuiltinSpeechToText } from '../../shared/speech/builtin-stt.ts';
import { BuiltinTextToSpeech } from '../../shared/speech/builtin-tts.ts';
import { bytesToPcm16, muLawDecode, muLawEncode, resample } from '../../shared/speech/telephone-audio.ts';

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

/** `text` spoken by eSpeak NG as a browser's microphone sends it: PCM16 mono at 16 kHz. */
export async function browserSpeech(text: string): Promise<Int16Array> {
  const { audio } = await collect(new BuiltinTextToSpeech().synthesize(text, { voiceId: 'en-us', language: 'en-US' }));
  return resample(muLawDecode(audio), 8_000, 16_000);
}

/** What PocketSphinx makes of a browser's audio (PCM16 mono at 16 kHz), heard as telephone audio. */
export async function heardFromBrowser(samples: Int16Array | Uint8Array): Promise<string> {
  const pcm = samples instanceof Int16Array ? samples : bytesToPcm16(samples);
  const stream = new BuiltinSpeechToText().open({ language: 'en-US' });
  stream.write(muLawEncode(resample(pcm, 16_000, 8_000)));
  // Half a second of silence ends the last utterance.
  stream.write(new Uint8Array(4_000).fill(0xff));
  stream.end();
  const heard: string[] = [];
  for await (const event of stream.events) if (event.type === 'final' && event.text) heard.push(event.text);
  return heard.join(' ');
}
