/**
 * The built-in speech-to-text: PocketSphinx with its US English model (decision 439). Our voice activity detector
 * cuts the caller's audio into utterances (the endpointing silence ends one, with `endOfTurn`); each utterance is
 * decoded by a `pocketsphinx_continuous` process that was started before it began, so that its model is loaded
 * while the caller speaks and it decodes the audio as it arrives: at the end of the utterance only the last
 * fraction of a second is left to decode (decision 443).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { locateSpeechEngines, type SpeechEngines } from './engines.ts';
import { telephoneAudio, type SpeechToText, type TranscriptEvent, type TranscriptionOptions, type TranscriptionStream } from './ports.ts';
import { muLawDecode, Resampler } from './telephone-audio.ts';
import { VoiceActivityDetector } from './voice-activity.ts';

/** The silence that ends an utterance when the agent sets none (Deepgram's default is shorter, and cuts callers off). */
export const defaultEndpointingMs = 500;
/** The acoustic model's rate: its features are fixed for 16 kHz (feat.params), so telephone audio is upsampled to it. */
const decoderRate = 16_000;

/**
 * The cepstral mean PocketSphinx starts each utterance from (decision 444), measured over telephone audio (μ-law at
 * 8 kHz, upsampled): the model's own (`41.00,-5.29,…`, wide-band speech) is so far from it that a short utterance
 * ends before the live mean has moved, and the word error rate on our test sentences went from 0.93 to 0.66.
 */
const telephoneCepstralMean = '53.70,32.65,-39.47,52.92,-18.63,-5.88,12.98,-41.28,5.06,-10.82,-0.22,9.29,-16.37';
const modelFiles = ['mdef', 'means', 'noisedict', 'sendump', 'transition_matrices', 'variances'];

/**
 * The acoustic model with that mean: its files linked from where the packages put them, beside a feat.params of our
 * own (PocketSphinx reads `-cmninit` from the model's feat.params over its command line). Made once per model
 * directory under the temporary directory, so that a read-only system model (the container's) works too.
 */
function telephoneModel(hmm: string): string {
  const params = readFileSync(join(hmm, 'feat.params'), 'utf8').replace(/^-cmninit .*$/m, `-cmninit ${telephoneCepstralMean}`);
  const dir = join(tmpdir(), `pocketsphinx-telephone-${createHash('sha256').update(hmm).update(params).digest('hex').slice(0, 16)}`);
  if (existsSync(join(dir, 'feat.params'))) return dir;
  // Made beside, then renamed: another process making it at the same time never sees half a model.
  const work = mkdtempSync(`${dir}-making-`);
  for (const file of modelFiles) symlinkSync(join(hmm, file), join(work, file));
  writeFileSync(join(work, 'feat.params'), params);
  try {
    renameSync(work, dir);
  } catch {
    rmSync(work, { recursive: true, force: true });
  }
  return dir;
}

/** Events handed out in order to one reader, ending once. */
class EventQueue implements AsyncIterable<TranscriptEvent> {
  private readonly items: TranscriptEvent[] = [];
  private ended = false;
  private wake: (() => void) | undefined;

  push(event: TranscriptEvent): void {
    if (this.ended) return;
    this.items.push(event);
    this.wake?.();
  }

  end(): void {
    this.ended = true;
    this.wake?.();
  }

  get isEnded(): boolean {
    return this.ended;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<TranscriptEvent> {
    for (;;) {
      const next = this.items.shift();
      if (next) yield next;
      else if (this.ended) return;
      else await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }
}

/** One `pocketsphinx_continuous` decoding one utterance from its standard input. */
class Decoder {
  private readonly child: ChildProcess;
  private readonly lines: string[] = [];
  private readonly done: Promise<string>;

  constructor(engines: SpeechEngines, hmm: string, onPartial: (text: string) => void) {
    const { bin, lm, dict } = engines.pocketsphinx;
    // Its -infile must be a file it can open: Node's stdin pipes are sockets, which /dev/stdin cannot reopen, so
    // `cat` turns the socket into a pipe. Its own process group, so that killing it kills both.
    this.child = spawn('/bin/sh', ['-c', 'cat | exec "$0" "$@"', bin, '-hmm', hmm, '-lm', lm, '-dict', dict, '-infile', '/dev/stdin', '-logfn', '/dev/null'], {
      env: engines.env,
      stdio: ['pipe', 'pipe', 'ignore'],
      detached: true,
    });
    this.child.stdin?.on('error', () => {});
    let buffered = '';
    this.child.stdout?.setEncoding('utf8').on('data', (data: string) => {
      const parts = (buffered + data).split('\n');
      buffered = parts.pop() ?? '';
      // PocketSphinx prints a line each time its own detector closes a segment: the words so far, as a partial.
      for (const line of parts.map((part) => part.trim()).filter(Boolean)) {
        this.lines.push(line);
        onPartial(this.lines.join(' '));
      }
    });
    this.done = new Promise((resolve, reject) => {
      this.child.on('error', reject);
      this.child.on('close', (code, signal) => {
        if (buffered.trim()) this.lines.push(buffered.trim());
        if (code === 0) resolve(this.lines.join(' '));
        else reject(new Error(`pocketsphinx_continuous ended with ${signal ?? `exit ${code}`}`));
      });
    });
    // A decoder dropped unused must not leave a rejection nobody awaits.
    this.done.catch(() => {});
  }

  write(samples: Int16Array): void {
    if (samples.length) this.child.stdin?.write(new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength));
  }

  /** The words of everything written. */
  finish(): Promise<string> {
    this.child.stdin?.end();
    return this.done;
  }

  kill(): void {
    if (this.child.pid && this.child.exitCode === null && this.child.signalCode === null) {
      try {
        process.kill(-this.child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }
}

class BuiltinTranscriptionStream implements TranscriptionStream {
  readonly events = new EventQueue();
  private readonly vad: VoiceActivityDetector;
  private readonly upsampler = new Resampler(telephoneAudio.sampleRate, decoderRate);
  private decoder: Decoder | undefined;
  /** Finals are reported in the order their utterances ended, whichever decoder finishes first. */
  private reported: Promise<void> = Promise.resolve();
  private utteranceStartMs: number | undefined;
  private closed = false;
  private readonly engines: SpeechEngines;
  private readonly hmm: string;

  constructor(engines: SpeechEngines, hmm: string, options: TranscriptionOptions) {
    this.engines = engines;
    this.hmm = hmm;
    this.vad = new VoiceActivityDetector({ sampleRate: telephoneAudio.sampleRate, silenceMs: options.endpointingMs ?? defaultEndpointingMs });
    this.decoder = this.startDecoder();
    options.signal?.addEventListener('abort', () => this.close(), { once: true });
  }

  write(audio: Uint8Array): void {
    if (this.closed) return;
    const samples = muLawDecode(audio);
    this.decoder?.write(this.upsampler.push(samples));
    for (const event of this.vad.push(samples)) {
      if (event.type === 'speech-started') {
        this.utteranceStartMs = this.msOf(event.atSample);
        this.events.push({ type: 'speech-started', atMs: this.utteranceStartMs });
      } else {
        this.endUtterance(this.msOf(event.atSample));
      }
    }
  }

  finalize(): void {
    if (this.closed) return;
    this.vad.endSpeech();
    this.endUtterance(this.msOf(this.vad.samples));
  }

  end(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.utteranceStartMs !== undefined) this.endUtterance(this.msOf(this.vad.samples));
    this.decoder?.kill();
    void this.reported.then(() => this.events.end());
  }

  close(): void {
    this.closed = true;
    this.decoder?.kill();
    this.events.end();
  }

  private msOf(sample: number): number {
    return Math.round((sample * 1000) / telephoneAudio.sampleRate);
  }

  private startDecoder(): Decoder {
    return new Decoder(this.engines, this.hmm, (text) => {
      if (!this.events.isEnded) this.events.push({ type: 'partial', text });
    });
  }

  /**
   * Hands the utterance's decoder its end and starts the next one's now. An end with no speech heard (a
   * `finalize()` in silence) still gets its final, empty, so that whoever asked is answered.
   */
  private endUtterance(endMs: number): void {
    const decoder = this.decoder;
    const startMs = this.utteranceStartMs ?? endMs;
    this.utteranceStartMs = undefined;
    this.decoder = this.closed ? undefined : this.startDecoder();
    const text = decoder ? decoder.finish() : Promise.resolve('');
    this.reported = this.reported.then(async () => {
      try {
        this.events.push({ type: 'final', text: await text, endOfTurn: true, startMs, endMs });
      } catch (error) {
        this.events.push({ type: 'error', message: `builtin: ${(error as Error).message}` });
        this.close();
      }
    });
  }
}

export class BuiltinSpeechToText implements SpeechToText {
  readonly provider = 'builtin';
  private readonly enginesDir: string | undefined;

  /** `enginesDir`: the `SPEECH_ENGINES_DIR` setting. The engines are looked for at each `open()`. */
  constructor(enginesDir?: string) {
    this.enginesDir = enginesDir;
  }

  open(options: TranscriptionOptions): TranscriptionStream {
    try {
      if (!/^en(-|$)/i.test(options.language)) throw new Error(`speaks US English only, not ${options.language}`);
      const engines = locateSpeechEngines(this.enginesDir);
      return new BuiltinTranscriptionStream(engines, telephoneModel(engines.pocketsphinx.hmm), options);
    } catch (error) {
      return failedStream(`builtin: ${(error as Error).message}`);
    }
  }
}

/** A stream that reports its error and ends, as the port says a failing stream does. */
function failedStream(message: string): TranscriptionStream {
  const events = new EventQueue();
  events.push({ type: 'error', message });
  events.end();
  return { events, write: () => {}, finalize: () => {}, end: () => {}, close: () => {} };
}
