/**
 * `npm run bench -- voice-media`: calls through the media worker (docs/voice.md#the-media-worker), this process
 * playing Twilio's side of each Media Stream against the worker in a child of its own (bench/voice-media-runtime.ts),
 * for each voice mode in the same run: `pipeline` (STT, turn, TTS), `sts` (a speech-to-speech session) and `hybrid`
 * (its turns that ask for a tool taken by the text LLM).
 *
 * - Voice-to-voice latency with the local engines (`pipeline`: the built-in STT and TTS; `sts` and `hybrid`: the
 *   OpenAI Realtime simulator, which hears, answers and speaks with them): the caller's question spoken (eSpeak NG)
 *   in real time, 20 ms a frame, then the line's silence; from the last frame of its speech sent to the first byte of
 *   the agent's audio received. `pipeline`'s is also split as the worker saw it: end of turn and the STT's final (the
 *   recogniser's endpointing and decoding), the turn (to the first speakable piece), the TTS's first byte.
 * - Our own overhead: the same calls with speech that takes no time (bench/scripted-speech.ts), from the frame that
 *   ends the utterance sent to the first audio received; beside its floor, a frame's round trip through a bare
 *   WebSocket server of the same process and library.
 * - Concurrent calls: each call's line sends its 20 ms frames and asks a question every few seconds, its replies
 *   acknowledged as played; the worker process's CPU and memory per call, and the overhead, at each count.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import WebSocket, { WebSocketServer } from 'ws';
import { startLocalDatabase } from '../infra/local/environment.ts';
import { BuiltinTextToSpeech } from '../shared/speech/builtin-tts.ts';
import { twilioSignature } from '../shared/voice/twilio-signature.ts';
import type { Check } from './report.ts';
import { percentiles, type Percentiles } from './turns.ts';
import type { MediaBenchReady, MediaBenchTimings, MediaTurnTiming, VoiceMode } from './voice-media-runtime.ts';

export interface ConcurrencyRun {
  calls: number;
  turns: number;
  overheadMs: Percentiles;
  workerCores: number;
  cpuMsPerCallSecond: number;
  rssMiB: number;
  rssMiBPerCall: number;
}

export interface ModeFigures {
  mode: VoiceMode;
  /** The local engines: the last frame of the caller's speech sent → the first agent audio received. */
  spoken: {
    questions: number;
    /** Questions whose reply began after the caller's speech: the others were answered in part mid-question. */
    answered: number;
    answeredMidQuestion: number;
    voiceToVoiceMs: Percentiles;
    /** Runs of the agent's tool, warm-up included: in `hybrid`, one a turn the text LLM took. */
    toolRuns: number;
  };
  /** Speech that takes no time: the frame that ends the utterance sent → the first audio received. */
  overhead: { turns: number; ms: Percentiles };
  concurrency: ConcurrencyRun[];
  idleRssMiB: number;
  /** Calls one vCPU carries at the largest count whose overhead p99 stays within 120 ms. */
  callsPerVcpu: number;
}

export interface VoiceMediaResult {
  loadAverageAtStart: number[];
  loadAverageAtEnd: number[];
  /** A frame's round trip through a bare WebSocket server: the floor of every mode's overhead. */
  floorMs: Percentiles;
  /** `pipeline`'s turns with the built-in engines on the worker's clock: end of speech → first audio byte sent. */
  pipelineSplit: {
    turns: number;
    voiceToVoiceMs: Percentiles;
    endOfTurnAndFinalMs: Percentiles;
    turnMs: Percentiles;
    ttsFirstByteMs: Percentiles;
  };
  modes: ModeFigures[];
}

const frameBytes = 160;
const frameMs = 20;
const silence = Buffer.alloc(frameBytes, 0xff);
/** The frame the scripted recogniser takes as the end of an utterance. */
const endOfUtterance = Buffer.alloc(frameBytes, 0);
const ticksPerSecond = 100;
const modes: readonly VoiceMode[] = ['pipeline', 'sts', 'hybrid'];
/**
 * The marks of the agent's reply to the scripted question: `pipeline`'s is cut into three pieces, a mark after each;
 * a speech-to-speech reply comes as one piece of audio, marked once.
 */
const replyMarks: Record<VoiceMode, number> = { pipeline: 3, sts: 1, hybrid: 1 };
/** A reply spoken with the local engines is over once no audio has come for this long. */
const replyOverAfterMs = 1_000;
/** A question with no reply by then counts as unanswered. */
const replyTimeoutMs = 20_000;
/** Turns of speech that takes no time before the overhead is measured. */
const warmupTurns = 20;

/** The worker child for one voice mode and speech, on a fresh database: its address and pid once ready. */
async function startWorker(mode: VoiceMode, speech: 'builtin' | 'scripted', endpoint: string, tableName: string): Promise<{ child: ChildProcess; ready: MediaBenchReady }> {
  // CRITICAL: each call's backstop, which this runtime has no Scheduler for, would log an error.
  const child = fork(resolve(import.meta.dirname, 'voice-media-runtime.ts'), {
    env: { ...process.env, BENCH_DYNAMODB_ENDPOINT: endpoint, TABLE_NAME: tableName, BENCH_MODE: mode, BENCH_SPEECH: speech, POWERTOOLS_LOG_LEVEL: 'CRITICAL' },
    execArgv: ['--disable-warning=ExperimentalWarning'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ready = await new Promise<MediaBenchReady>((done, fail) => {
    child.once('message', (message: { ready: MediaBenchReady }) => done(message.ready));
    child.once('exit', (code) => fail(new Error(`voice-media-runtime.ts exited with ${code}`)));
  });
  return { child, ready };
}

const askChild = <T>(child: ChildProcess, message: string): Promise<T> =>
  new Promise((done) => {
    child.once('message', (answer: T) => done(answer));
    child.send(message);
  });

/** One call's Twilio side: the voice webhook as Twilio posts it, then the stream the TwiML names, signed. */
class Line {
  readonly socket: WebSocket;
  private readonly streamSid = `MZ${crypto.randomUUID().replace(/-/g, '')}`;
  private waiters: ((at: number) => void)[] = [];
  private marksWanted = 0;
  private marksWaiter: (() => void) | undefined;
  chunk = 0;
  /** When the agent's audio last arrived. */
  lastAudioAt = 0;

  private constructor(socket: WebSocket) {
    this.socket = socket;
    socket.on('message', (data) => {
      const message = JSON.parse(data.toString()) as { event: string; mark?: { name: string } };
      if (message.event === 'media') {
        const at = performance.now();
        this.lastAudioAt = at;
        for (const waiter of this.waiters.splice(0)) waiter(at);
      } else if (message.event === 'mark') {
        // Played at once: the line's own pace does not change what the worker does per frame.
        this.send({ event: 'mark', streamSid: this.streamSid, mark: message.mark });
        this.marksWanted -= 1;
        if (this.marksWanted <= 0) this.marksWaiter?.();
      }
    });
  }

  static async open(ready: MediaBenchReady, callIndex: number): Promise<Line> {
    const params = { CallSid: `CA${crypto.randomUUID().replace(/-/g, '')}`, From: `+1555020${String(callIndex).padStart(4, '0')}`, To: ready.phoneNumber, AccountSid: ready.accountSid };
    const url = `${ready.apiUrl}/twilio/voice`;
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(ready.authToken, url, params) },
      body: new URLSearchParams(params).toString(),
    });
    const twiml = await response.text();
    const streamUrl = /<Stream url="([^"]+)">/.exec(twiml)?.[1];
    const token = /<Parameter name="token" value="([^"]+)"\/>/.exec(twiml)?.[1];
    if (!streamUrl || !token) throw new Error(`no stream in the TwiML: ${twiml}`);
    const socket = new WebSocket(streamUrl, { headers: { 'x-twilio-signature': twilioSignature(ready.authToken, streamUrl) } });
    await new Promise((opened, fail) => socket.once('open', opened).once('error', fail));
    const line = new Line(socket);
    line.send({ event: 'connected', protocol: 'Call', version: '1.0.0' });
    line.send({
      event: 'start',
      sequenceNumber: '1',
      start: { streamSid: line.streamSid, callSid: params.CallSid, accountSid: ready.accountSid, tracks: ['inbound'], mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 }, customParameters: { token } },
      streamSid: line.streamSid,
    });
    return line;
  }

  send(message: object): void {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
  }

  frame(audio: Uint8Array): void {
    this.chunk += 1;
    this.send({ event: 'media', sequenceNumber: String(this.chunk + 1), media: { track: 'inbound', chunk: String(this.chunk), timestamp: String(this.chunk * frameMs), payload: Buffer.from(audio).toString('base64') }, streamSid: this.streamSid });
  }

  /** When the agent's next audio arrives. */
  nextAudio(): Promise<number> {
    return new Promise((arrived) => this.waiters.push(arrived));
  }

  /** Resolves once `count` marks more have come (and were acknowledged). */
  marks(count: number): Promise<void> {
    this.marksWanted = count;
    return new Promise((done) => (this.marksWaiter = done));
  }

  /** Resolves once no audio has come for `ms`. */
  async quiet(ms: number): Promise<void> {
    for (let left = ms; left > 0; left = this.lastAudioAt + ms - performance.now()) await new Promise((later) => setTimeout(later, left));
  }

  /**
   * The scripted question: the frame that ends the utterance, then the reply heard out (its `marks`). Resolves with
   * the ms from that frame sent to the reply's first audio received.
   */
  async ask(marks: number): Promise<number> {
    const played = this.marks(marks);
    const audio = this.nextAudio();
    const sentAt = performance.now();
    this.frame(endOfUtterance);
    const latency = (await audio) - sentAt;
    await played;
    return latency;
  }
}

/** A frame's round trip through a bare `ws` server: the transport the overhead cannot go below. */
async function transportFloor(rounds: number): Promise<number[]> {
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  server.on('connection', (socket) => socket.on('message', (data) => socket.send(data.toString())));
  await new Promise((listening) => server.once('listening', listening));
  const socket = new WebSocket(`ws://127.0.0.1:${(server.address() as { port: number }).port}`);
  await new Promise((opened) => socket.once('open', opened));
  const latencies: number[] = [];
  const payload = JSON.stringify({ event: 'media', media: { payload: silence.toString('base64') } });
  for (let round = 0; round < rounds; round += 1) {
    const sentAt = performance.now();
    await new Promise<void>((answered) => {
      socket.once('message', () => answered());
      socket.send(payload);
    });
    latencies.push(performance.now() - sentAt);
  }
  socket.close();
  await new Promise((closed) => server.close(closed));
  return latencies;
}

/** CPU ticks (user + system) and resident memory of a process, from /proc. */
function processUsage(pid: number): { ticks: number; rssMiB: number } {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  const rssKiB = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  return { ticks: Number(fields[11]) + Number(fields[12]), rssMiB: rssKiB / 1024 };
}

/**
 * `calls` calls at once for `windowMs`: each line sends a frame every 20 ms (silence, as a real line never stops) and
 * asks a question every `askEveryMs`, its reply's marks acknowledged. The worker's CPU and memory over the window.
 */
async function concurrentCalls(ready: MediaBenchReady, calls: number, windowMs: number, askEveryMs: number, marks: number) {
  const lines = await Promise.all(Array.from({ length: calls }, (_, index) => Line.open(ready, index)));
  const latencies: number[] = [];
  const startedAt = performance.now();
  const before = processUsage(ready.workerPid);
  let running = true;
  const ticker = setInterval(() => {
    for (const line of lines) line.frame(silence);
  }, frameMs);
  await Promise.all(
    lines.map(async (line, index) => {
      // Spread the questions over the interval, so that they do not all come in one frame.
      await new Promise((spread) => setTimeout(spread, (askEveryMs * index) / calls));
      while (running) {
        latencies.push(await line.ask(marks));
        if (performance.now() - startedAt > windowMs) running = false;
        else await new Promise((pause) => setTimeout(pause, askEveryMs));
      }
    }),
  );
  const after = processUsage(ready.workerPid);
  const elapsedMs = performance.now() - startedAt;
  clearInterval(ticker);
  for (const line of lines) line.socket.close();
  const workerCores = (after.ticks - before.ticks) / ticksPerSecond / (elapsedMs / 1000);
  return { calls, turns: latencies.length, latencies, workerCores, cpuMsPerCallSecond: (workerCores * 1000) / calls, rssMiB: after.rssMiB };
}

/** The question the caller speaks, without eSpeak's trailing silence: its last frame sent is the end of its speech. */
async function spokenQuestion(): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of new BuiltinTextToSpeech().synthesize('Tell me the weather please.', { voiceId: 'en-us', language: 'en-US' })) chunks.push(chunk);
  const audio = Buffer.concat(chunks);
  // μ-law keeps the magnitude in the low seven bits, inverted: 0x7f and 0xff are silence, lower is louder.
  const audible = audio.findLastIndex((byte) => (byte & 0x7f) < 0x70);
  return audio.subarray(0, Math.ceil((audible + 1) / frameBytes) * frameBytes);
}

/** A call whose caller speaks in real time: 20 ms frames of the question when asked, of the line's silence else. */
async function speakingCaller(ready: MediaBenchReady, question: Buffer) {
  const line = await Line.open(ready, 0);
  let pending = Buffer.alloc(0);
  let speechEnded: ((ended: { at: number; reply: Promise<number> }) => void) | undefined;
  const clock = setInterval(() => {
    const frame = pending.length > 0 ? pending.subarray(0, frameBytes) : silence;
    pending = pending.subarray(Math.min(frameBytes, pending.length));
    line.frame(frame.length === frameBytes ? frame : Buffer.concat([frame, silence.subarray(frame.length)]));
    if (pending.length === 0 && speechEnded) {
      speechEnded({ at: performance.now(), reply: line.nextAudio() });
      speechEnded = undefined;
    }
  }, frameMs);
  return {
    /**
     * The question once, its reply heard out: the ms from the last frame of its speech sent to the first audio
     * received after it (undefined without a reply), and whether audio came while it was spoken.
     */
    async ask(): Promise<{ latencyMs: number | undefined; midQuestion: boolean }> {
      const askedAt = performance.now();
      const ended = new Promise<{ at: number; reply: Promise<number> }>((done) => (speechEnded = done));
      pending = Buffer.concat([silence, silence, question]);
      const { at, reply } = await ended;
      const midQuestion = line.lastAudioAt > askedAt;
      const firstAudioAt = await Promise.race([reply, delay(replyTimeoutMs, undefined, { ref: false })]);
      await line.quiet(replyOverAfterMs);
      return { latencyMs: firstAudioAt === undefined ? undefined : firstAudioAt - at, midQuestion };
    },
    close() {
      clearInterval(clock);
      line.socket.close();
    },
  };
}

interface ModeWorker {
  mode: VoiceMode;
  child: ChildProcess;
  ready: MediaBenchReady;
  stop(): Promise<void>;
}

/** A worker child for each mode, each on a fresh database, all at once: the modes are measured turn about. */
async function startModeWorkers(speech: 'builtin' | 'scripted'): Promise<ModeWorker[]> {
  const workers: ModeWorker[] = [];
  try {
    for (const mode of modes) {
      const database = await startLocalDatabase({ tableName: `bench-voice-media-${mode}-${speech}` });
      const stop = async (child?: ChildProcess) => {
        if (child?.connected) child.send('stop');
        await database.stop();
      };
      const started = await startWorker(mode, speech, database.endpoint, database.tableName).catch(async (error: unknown) => {
        await stop();
        throw error;
      });
      workers.push({ mode, ...started, stop: () => stop(started.child) });
    }
    return workers;
  } catch (error) {
    await Promise.all(workers.map((worker) => worker.stop()));
    throw error;
  }
}

/**
 * The local engines: `questions` questions spoken in real time to each mode's call in turn (the first a warm-up),
 * each after the reply to the last was heard out, so that the machine's load weighs on every mode alike.
 */
async function measureSpoken(questions: number, log: (line: string) => void): Promise<{ spoken: Map<VoiceMode, ModeFigures['spoken']>; pipelineTimings: MediaTurnTiming[] }> {
  const question = await spokenQuestion();
  const workers = await startModeWorkers('builtin');
  try {
    log(`voice-media: ${questions} questions spoken with eSpeak NG in real time to each mode in turn, the local engines answering`);
    const callers = await Promise.all(workers.map((worker) => speakingCaller(worker.ready, question)));
    const heard = workers.map(() => ({ latencies: [] as number[], answeredMidQuestion: 0 }));
    for (let asked = 0; asked <= questions; asked += 1) {
      for (const [index, caller] of callers.entries()) {
        const { latencyMs, midQuestion } = await caller.ask();
        const tally = heard[index]!;
        if (asked === 0) continue;
        if (midQuestion) tally.answeredMidQuestion += 1;
        else if (latencyMs !== undefined) tally.latencies.push(latencyMs);
      }
    }
    for (const caller of callers) caller.close();
    const spoken = new Map<VoiceMode, ModeFigures['spoken']>();
    let pipelineTimings: MediaTurnTiming[] = [];
    for (const [index, worker] of workers.entries()) {
      const { timings, toolRuns } = await askChild<MediaBenchTimings>(worker.child, 'timings');
      const { latencies, answeredMidQuestion } = heard[index]!;
      spoken.set(worker.mode, { questions, answered: latencies.length, answeredMidQuestion, voiceToVoiceMs: percentiles(latencies), toolRuns });
      if (worker.mode === 'pipeline') pipelineTimings = timings.slice(1);
    }
    return { spoken, pipelineTimings };
  } finally {
    await Promise.all(workers.map((worker) => worker.stop()));
  }
}

/**
 * Speech that takes no time, each mode's turn in turn: the overhead one call at a time (20 turns of warm-up), then
 * each count of concurrent calls.
 */
async function measureScripted(turns: number, log: (line: string) => void): Promise<Map<VoiceMode, Omit<ModeFigures, 'mode' | 'spoken'>>> {
  const workers = await startModeWorkers('scripted');
  try {
    const idleRssMiB = workers.map((worker) => processUsage(worker.ready.workerPid).rssMiB);
    log(`voice-media: our overhead, ${turns} turns of speech that takes no time to each mode in turn`);
    const lines = await Promise.all(workers.map((worker) => Line.open(worker.ready, 0)));
    const overheads = workers.map(() => [] as number[]);
    for (let turn = 0; turn < warmupTurns + turns; turn += 1) {
      for (const [index, line] of lines.entries()) {
        const latency = await line.ask(replyMarks[workers[index]!.mode]);
        if (turn >= warmupTurns) overheads[index]!.push(latency);
      }
    }
    for (const line of lines) line.socket.close();
    const concurrency = workers.map(() => [] as ConcurrencyRun[]);
    for (const calls of [10, 25, 50, 100]) {
      for (const [index, worker] of workers.entries()) {
        log(`voice-media, ${worker.mode}: ${calls} concurrent calls for 20 s, a question every 4 s each`);
        const run = await concurrentCalls(worker.ready, calls, 20_000, 4_000, replyMarks[worker.mode]);
        concurrency[index]!.push({
          calls,
          turns: run.turns,
          overheadMs: percentiles(run.latencies),
          workerCores: run.workerCores,
          cpuMsPerCallSecond: run.cpuMsPerCallSecond,
          rssMiB: run.rssMiB,
          rssMiBPerCall: (run.rssMiB - idleRssMiB[index]!) / calls,
        });
      }
    }
    return new Map(
      workers.map((worker, index) => {
        const best = concurrency[index]!.filter((run) => run.overheadMs.p99 <= overheadP99TargetMs).at(-1);
        const figures = {
          overhead: { turns, ms: percentiles(overheads[index]!) },
          concurrency: concurrency[index]!,
          idleRssMiB: idleRssMiB[index]!,
          callsPerVcpu: best ? best.calls / Math.max(best.workerCores, 1e-3) : 0,
        };
        return [worker.mode, figures];
      }),
    );
  } finally {
    await Promise.all(workers.map((worker) => worker.stop()));
  }
}

export async function measureVoiceMedia(log: (line: string) => void): Promise<VoiceMediaResult> {
  const loadAverageAtStart = loadavg();
  const { spoken, pipelineTimings } = await measureSpoken(10, log);
  const scripted = await measureScripted(200, log);
  log('voice-media: the floor, 200 round trips through a bare WebSocket server');
  const floorMs = percentiles(await transportFloor(200));
  return {
    loadAverageAtStart,
    loadAverageAtEnd: loadavg(),
    floorMs,
    pipelineSplit: {
      turns: pipelineTimings.length,
      voiceToVoiceMs: percentiles(pipelineTimings.map((timing) => timing.firstAudioAt - timing.speechEndedAt)),
      endOfTurnAndFinalMs: percentiles(pipelineTimings.map((timing) => timing.finalAt - timing.speechEndedAt)),
      turnMs: percentiles(pipelineTimings.map((timing) => timing.firstPieceAt - timing.finalAt)),
      ttsFirstByteMs: percentiles(pipelineTimings.map((timing) => timing.firstAudioAt - timing.firstPieceAt)),
    },
    modes: modes.map((mode) => ({ mode, spoken: spoken.get(mode)!, ...scripted.get(mode)! })),
  };
}

const overheadP50TargetMs = 40;
const overheadP99TargetMs = 120;
const callsPerVcpuGoal = 50;

export function voiceMediaChecks(result: VoiceMediaResult): Check[] {
  return result.modes.flatMap(({ mode, overhead, callsPerVcpu }) => [
    { figure: `media worker, ${mode}: our overhead of a turn, p50`, value: overhead.ms.p50, unit: 'ms', target: overheadP50TargetMs, comparison: '<=', pass: overhead.ms.p50 <= overheadP50TargetMs },
    { figure: `media worker, ${mode}: our overhead of a turn, p99`, value: overhead.ms.p99, unit: 'ms', target: overheadP99TargetMs, comparison: '<=', pass: overhead.ms.p99 <= overheadP99TargetMs },
    { figure: `media worker, ${mode}: concurrent calls per vCPU at that overhead`, value: callsPerVcpu, unit: 'calls', target: callsPerVcpuGoal, comparison: '>=', pass: callsPerVcpu >= callsPerVcpuGoal },
  ]);
}

const f = (value: number) => value.toFixed(1);
const loads = (values: number[]) => values.map((value) => value.toFixed(2)).join(' ');

export function voiceMediaReport(result: VoiceMediaResult): string[] {
  const { pipelineSplit: split, floorMs } = result;
  return [
    `voice-media (load average ${loads(result.loadAverageAtStart)} at the start, ${loads(result.loadAverageAtEnd)} at the end); floor (bare WebSocket round trip) p50 ${floorMs.p50.toFixed(2)} ms, p99 ${floorMs.p99.toFixed(2)} ms`,
    `  pipeline as the worker saw it, ${split.turns} turns: voice-to-voice p50 ${f(split.voiceToVoiceMs.p50)} ms, p99 ${f(split.voiceToVoiceMs.p99)} ms = end of turn + STT final p50 ${f(split.endOfTurnAndFinalMs.p50)} ms + turn p50 ${f(split.turnMs.p50)} ms + TTS first byte p50 ${f(split.ttsFirstByteMs.p50)} ms`,
    ...result.modes.flatMap(({ mode, spoken, overhead, concurrency, idleRssMiB, callsPerVcpu }) => [
      `  ${mode}, local engines: voice-to-voice p50 ${f(spoken.voiceToVoiceMs.p50)} ms, p99 ${f(spoken.voiceToVoiceMs.p99)} ms (${spoken.answered} of ${spoken.questions} questions; ${spoken.answeredMidQuestion} answered mid-question, left out; the tool ran ${spoken.toolRuns} times)`,
      `  ${mode}, our overhead, ${overhead.turns} turns: p50 ${f(overhead.ms.p50)} ms, p99 ${f(overhead.ms.p99)} ms (targets ${overheadP50TargetMs} / ${overheadP99TargetMs})`,
      ...concurrency.map(
        (run) =>
          `  ${mode}, ${run.calls} concurrent calls: ${run.turns} turns, overhead p50 ${f(run.overheadMs.p50)} ms, p99 ${f(run.overheadMs.p99)} ms; worker ${run.workerCores.toFixed(2)} cores (${f(run.cpuMsPerCallSecond)} ms CPU per call-second), ${f(run.rssMiB)} MiB (${f(run.rssMiBPerCall)} MiB a call over ${f(idleRssMiB)} idle)`,
      ),
      `  ${mode}, calls per vCPU at overhead p99 ≤ ${overheadP99TargetMs} ms: ${f(callsPerVcpu)} (goal ≥ ${callsPerVcpuGoal})`,
    ]),
  ];
}
