/**
 * `npm run bench -- voice-media`: calls through the media worker (docs/voice.md#the-media-worker), this process
 * playing Twilio's side of each Media Stream against the worker in a child of its own (bench/voice-media-runtime.ts).
 *
 * - Voice-to-voice latency with the built-in engines: the caller's question spoken (eSpeak NG) in real time, 20 ms a
 *   frame, then the line's silence; from the end of its speech to the first byte of the agent's audio, split as the
 *   worker saw it: end of turn and the STT's final (the recogniser's endpointing and decoding), the turn (to the
 *   first speakable piece), the TTS's first byte.
 * - Our own overhead: the same calls with speech that takes no time (the final the moment the caller's last frame
 *   arrives, the synthesis at once), from that frame sent to the first audio received, less the model's own first
 *   token; beside its floor, a frame's round trip through a bare WebSocket server of the same process and library.
 * - Concurrent calls: each call's line sends its 20 ms frames and asks a question every few seconds, its replies
 *   acknowledged as played; the worker process's CPU and memory per call, and the overhead, at each count.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import WebSocket, { WebSocketServer } from 'ws';
import { startLocalDatabase } from '../infra/local/environment.ts';
import { BuiltinTextToSpeech } from '../shared/speech/builtin-tts.ts';
import { twilioSignature } from '../shared/voice/twilio-signature.ts';
import type { Check } from './report.ts';
import { percentiles, type Percentiles } from './turns.ts';
import type { MediaBenchReady, MediaTurnTiming } from './voice-media-runtime.ts';

export interface VoiceMediaResult {
  loadAverageAtStart: number[];
  builtin: {
    turns: number;
    /** End of the caller's speech → first agent audio byte sent, and its split. */
    voiceToVoiceMs: Percentiles;
    endOfTurnAndFinalMs: Percentiles;
    turnMs: Percentiles;
    ttsFirstByteMs: Percentiles;
  };
  overhead: { turns: number; ms: Percentiles; floorMs: Percentiles };
  concurrency: {
    calls: number;
    turns: number;
    overheadMs: Percentiles;
    workerCores: number;
    cpuMsPerCallSecond: number;
    rssMiB: number;
    rssMiBPerCall: number;
  }[];
  idleRssMiB: number;
  /** Calls one vCPU carries at the largest count whose overhead p99 stays within 120 ms. */
  callsPerVcpu: number;
}

const frameBytes = 160;
const frameMs = 20;
const silence = Buffer.alloc(frameBytes, 0xff);
/** The frame the scripted recogniser takes as the end of an utterance. */
const endOfUtterance = Buffer.alloc(frameBytes, 0);
const ticksPerSecond = 100;
/** The agent's reply to the scripted question, cut as the worker cuts it: three pieces, three marks. */
const replyPieces = 3;

/** The worker child for one mode, on a fresh database: its address and pid once ready. */
async function startWorker(mode: 'builtin' | 'scripted', endpoint: string, tableName: string): Promise<{ child: ChildProcess; ready: MediaBenchReady }> {
  // CRITICAL: each call's backstop, which this runtime has no Scheduler for, would log an error.
  const child = fork(resolve(import.meta.dirname, 'voice-media-runtime.ts'), {
    env: { ...process.env, BENCH_DYNAMODB_ENDPOINT: endpoint, TABLE_NAME: tableName, BENCH_SPEECH: mode, POWERTOOLS_LOG_LEVEL: 'CRITICAL' },
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

  private constructor(socket: WebSocket) {
    this.socket = socket;
    socket.on('message', (data) => {
      const message = JSON.parse(data.toString()) as { event: string; mark?: { name: string } };
      if (message.event === 'media') {
        const at = performance.now();
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

  /**
   * The scripted question: the frame that ends the utterance, then the reply heard out. Resolves with the ms from
   * that frame sent to the reply's first audio received.
   */
  async ask(): Promise<number> {
    const played = this.marks(replyPieces);
    const audio = this.nextAudio();
    const sentAt = performance.now();
    this.frame(endOfUtterance);
    const latency = (await audio) - sentAt;
    await played;
    return latency;
  }
}

/** Sequential turns with speech that takes no time: frame sent → first audio received. */
async function overheadTurns(line: Line, turns: number): Promise<number[]> {
  const latencies: number[] = [];
  for (let turn = 0; turn < turns; turn += 1) latencies.push(await line.ask());
  return latencies;
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
async function concurrentCalls(ready: MediaBenchReady, calls: number, windowMs: number, askEveryMs: number) {
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
        latencies.push(await line.ask());
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

/** The built-in engines, one call of `turns` questions spoken in real time; the worker's split of each turn. */
async function builtinTurns(ready: MediaBenchReady, child: ChildProcess, turns: number): Promise<MediaTurnTiming[]> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of new BuiltinTextToSpeech().synthesize('Tell me the weather please.', { voiceId: 'en-us', language: 'en-US' })) chunks.push(chunk);
  const question = Buffer.concat(chunks);
  const line = await Line.open(ready, 0);
  let pending = Buffer.alloc(0);
  const clock = setInterval(() => {
    const frame = pending.length > 0 ? pending.subarray(0, frameBytes) : silence;
    pending = pending.subarray(Math.min(frameBytes, pending.length));
    line.frame(frame.length === frameBytes ? frame : Buffer.concat([frame, silence.subarray(frame.length)]));
  }, frameMs);
  for (let turn = 0; turn < turns; turn += 1) {
    // The reply is heard out (its marks come back as it is sent) before the next question.
    const played = line.marks(replyPieces);
    pending = Buffer.concat([silence, silence, question]);
    await played;
  }
  clearInterval(clock);
  line.socket.close();
  return (await askChild<{ timings: MediaTurnTiming[] }>(child, 'timings')).timings;
}

export async function measureVoiceMedia(log: (line: string) => void): Promise<VoiceMediaResult> {
  const loadAverageAtStart = loadavg();
  const builtinDatabase = await startLocalDatabase({ tableName: 'bench-voice-media-builtin' });
  let builtin: VoiceMediaResult['builtin'];
  try {
    const { child, ready } = await startWorker('builtin', builtinDatabase.endpoint, builtinDatabase.tableName);
    log('voice-media: 10 questions spoken with eSpeak NG in real time to the worker with the built-in engines');
    const timings = (await builtinTurns(ready, child, 11)).slice(1);
    child.send('stop');
    builtin = {
      turns: timings.length,
      voiceToVoiceMs: percentiles(timings.map((timing) => timing.firstAudioAt - timing.speechEndedAt)),
      endOfTurnAndFinalMs: percentiles(timings.map((timing) => timing.finalAt - timing.speechEndedAt)),
      turnMs: percentiles(timings.map((timing) => timing.firstPieceAt - timing.finalAt)),
      ttsFirstByteMs: percentiles(timings.map((timing) => timing.firstAudioAt - timing.firstPieceAt)),
    };
  } finally {
    await builtinDatabase.stop();
  }

  const database = await startLocalDatabase({ tableName: 'bench-voice-media' });
  try {
    const { child, ready } = await startWorker('scripted', database.endpoint, database.tableName);
    const idleRssMiB = processUsage(ready.workerPid).rssMiB;
    log('voice-media: our overhead, 200 turns of speech that takes no time, beside a bare WebSocket round trip');
    const line = await Line.open(ready, 0);
    await overheadTurns(line, 20);
    const overheadMs = await overheadTurns(line, 200);
    line.socket.close();
    const floorMs = await transportFloor(200);
    const concurrency: VoiceMediaResult['concurrency'] = [];
    for (const calls of [10, 25, 50, 100]) {
      log(`voice-media: ${calls} concurrent calls for 20 s, a question every 4 s each`);
      const run = await concurrentCalls(ready, calls, 20_000, 4_000);
      concurrency.push({
        calls,
        turns: run.turns,
        overheadMs: percentiles(run.latencies),
        workerCores: run.workerCores,
        cpuMsPerCallSecond: run.cpuMsPerCallSecond,
        rssMiB: run.rssMiB,
        rssMiBPerCall: (run.rssMiB - idleRssMiB) / calls,
      });
    }
    child.send('stop');
    const within = concurrency.filter((run) => run.overheadMs.p99 <= overheadP99TargetMs);
    const best = within.at(-1);
    return {
      loadAverageAtStart,
      builtin,
      overhead: { turns: overheadMs.length, ms: percentiles(overheadMs), floorMs: percentiles(floorMs) },
      concurrency,
      idleRssMiB,
      callsPerVcpu: best ? best.calls / Math.max(best.workerCores, 1e-3) : 0,
    };
  } finally {
    await database.stop();
  }
}

const overheadP50TargetMs = 40;
const overheadP99TargetMs = 120;
const callsPerVcpuGoal = 50;

export function voiceMediaChecks(result: VoiceMediaResult): Check[] {
  return [
    { figure: 'media worker: our overhead of a turn, p50', value: result.overhead.ms.p50, unit: 'ms', target: overheadP50TargetMs, comparison: '<=', pass: result.overhead.ms.p50 <= overheadP50TargetMs },
    { figure: 'media worker: our overhead of a turn, p99', value: result.overhead.ms.p99, unit: 'ms', target: overheadP99TargetMs, comparison: '<=', pass: result.overhead.ms.p99 <= overheadP99TargetMs },
    { figure: 'media worker: concurrent calls per vCPU at that overhead', value: result.callsPerVcpu, unit: 'calls', target: callsPerVcpuGoal, comparison: '>=', pass: result.callsPerVcpu >= callsPerVcpuGoal },
  ];
}

const f = (value: number) => value.toFixed(1);

export function voiceMediaReport(result: VoiceMediaResult): string[] {
  const { builtin, overhead } = result;
  return [
    `voice-media (load average at start ${result.loadAverageAtStart.map((value) => value.toFixed(2)).join(' ')})`,
    `  built-in engines, ${builtin.turns} turns: voice-to-voice p50 ${f(builtin.voiceToVoiceMs.p50)} ms, p99 ${f(builtin.voiceToVoiceMs.p99)} ms = end of turn + STT final p50 ${f(builtin.endOfTurnAndFinalMs.p50)} ms + turn p50 ${f(builtin.turnMs.p50)} ms + TTS first byte p50 ${f(builtin.ttsFirstByteMs.p50)} ms`,
    `  our overhead, ${overhead.turns} turns: p50 ${f(overhead.ms.p50)} ms, p99 ${f(overhead.ms.p99)} ms (targets ${overheadP50TargetMs} / ${overheadP99TargetMs}); floor (bare WebSocket round trip) p50 ${f(overhead.floorMs.p50)} ms, p99 ${f(overhead.floorMs.p99)} ms`,
    ...result.concurrency.map(
      (run) =>
        `  ${run.calls} concurrent calls: ${run.turns} turns, overhead p50 ${f(run.overheadMs.p50)} ms, p99 ${f(run.overheadMs.p99)} ms; worker ${run.workerCores.toFixed(2)} cores (${f(run.cpuMsPerCallSecond)} ms CPU per call-second), ${f(run.rssMiB)} MiB (${f(run.rssMiBPerCall)} MiB a call over ${f(result.idleRssMiB)} idle)`,
    ),
    `  calls per vCPU at overhead p99 ≤ ${overheadP99TargetMs} ms: ${f(result.callsPerVcpu)} (goal ≥ ${callsPerVcpuGoal})`,
  ];
}
