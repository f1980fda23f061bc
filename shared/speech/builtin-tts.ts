/**
 * The built-in text-to-speech: eSpeak NG (decision 439), one process per utterance, its WAV stream read as eSpeak
 * writes it and turned into telephone audio chunk by chunk, so that the first chunk leaves before the sentence is
 * synthesized to its end.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { voiceCatalog } from '../models/voices.ts';
import { locateSpeechEngines, type SpeechEngines } from './engines.ts';
import { SpeechProviderError, telephoneAudio, type SynthesisOptions, type TextToSpeech } from './ports.ts';
import { muLawEncode, Resampler } from './telephone-audio.ts';

/** The WAV header eSpeak NG writes before its samples (it always writes this one, 44 bytes, PCM16 mono). */
const wavHeaderBytes = 44;

export class BuiltinTextToSpeech implements TextToSpeech {
  readonly provider = 'builtin';
  private readonly engines: () => SpeechEngines;

  /** `enginesDir`: the `SPEECH_ENGINES_DIR` setting. The engines are looked for at the first synthesis, not before. */
  constructor(enginesDir?: string) {
    this.engines = () => locateSpeechEngines(enginesDir);
  }

  async *synthesize(text: string, options: SynthesisOptions): AsyncIterable<Uint8Array> {
    if (!voiceCatalog.some((voice) => voice.provider === 'builtin' && voice.voiceId === options.voiceId)) {
      throw new SpeechProviderError(this.provider, `no voice "${options.voiceId}"`, false);
    }
    if (options.signal?.aborted) return;
    let engines: SpeechEngines;
    try {
      engines = this.engines();
    } catch (error) {
      throw new SpeechProviderError(this.provider, (error as Error).message, false);
    }
    // The text goes in on stdin: as an argument, one that starts with "-" would be read as an option.
    const child = spawn(engines.espeak.bin, ['--path', engines.espeak.dataPath, '-v', options.voiceId, '--stdout'], { env: engines.env, stdio: ['pipe', 'pipe', 'pipe'] });
    const kill = (): void => void child.kill('SIGKILL');
    options.signal?.addEventListener('abort', kill, { once: true });
    const exited = once(child, 'close') as Promise<[number | null, NodeJS.Signals | null]>;
    // A spawn failure reaches `close` too; listening keeps it from being thrown as unhandled.
    const spawnError = once(child, 'error').then(([error]) => error as Error, () => undefined);
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (data: string) => (stderr += data));
    child.stdin.on('error', () => {}).end(text);
    try {
      let header = Buffer.alloc(0);
      let resampler: Resampler | undefined;
      let odd: Buffer = Buffer.alloc(0);
      for await (const data of child.stdout as AsyncIterable<Buffer>) {
        // What the pipe still held when the abort killed eSpeak is not spoken.
        if (options.signal?.aborted) return;
        let bytes = Buffer.concat([odd, data]);
        if (!resampler) {
          header = Buffer.concat([header, bytes]);
          if (header.length < wavHeaderBytes) {
            odd = Buffer.alloc(0);
            continue;
          }
          resampler = new Resampler(header.readUInt32LE(24), telephoneAudio.sampleRate);
          bytes = header.subarray(wavHeaderBytes);
        }
        const whole = bytes.length - (bytes.length % 2);
        odd = Buffer.from(bytes.subarray(whole));
        const samples = new Int16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + whole));
        const audio = muLawEncode(resampler.push(samples));
        if (audio.length) yield audio;
      }
      if (options.signal?.aborted) return;
      const [code] = await exited;
      if (code !== 0) {
        const error = await Promise.race([spawnError, Promise.resolve(undefined)]);
        throw new SpeechProviderError(this.provider, `espeak-ng failed (${error?.message ?? `exit ${code}`}): ${stderr.trim()}`, false);
      }
      if (resampler) {
        const tail = muLawEncode(resampler.flush());
        if (tail.length) yield tail;
      }
    } finally {
      options.signal?.removeEventListener('abort', kill);
      if (child.exitCode === null && child.signalCode === null) kill();
    }
  }
}
