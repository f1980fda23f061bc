/**
 * The whole cost of a turn (issue 26, docs/performance.md): `npm start`'s entry (infra/local/main.ts: the API, the
 * table stream consumers, the queues and their functions, the tickers, in one process) as a child process on a
 * DATA_DIR of its own, on a DynamoDB Local this bench starts as `npm start` starts it (persisted in
 * DATA_DIR/dynamodb, so that its java process's CPU and memory are read apart), behind a counting proxy; the model
 * is the stub OpenAI-compatible server, which answers at once; sessions of 5 turns. The runtime starts twice:
 * - the counted run writes down every DynamoDB, SQS and EventBridge request (COST_ACCOUNTING_FILE: DynamoDB's units
 *   as AWS bills them) and waits for idle after each turn, so that what a turn does during its HTTP request
 *   (synchronous) is told from what it sets off afterwards (asynchronous);
 * - the measured run writes nothing down: CPU of every process until idle, time to first text, throughput, memory,
 *   idle CPU, start-up, and its proxy's count of requests per turn when turns run back to back.
 * Beside them, floors from the same run: the SDK floor (a turn's three essential DynamoDB calls), DynamoDB Local's
 * own start, idle memory and CPU. `npm run bench -- whole-turn` runs this section alone (bench/run.ts).
 */
import { spawn, fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { campaignQueue, queueConsumers, scheduledFunctions, usageRollupQueue } from '../functions/consumers.ts';
import { startLocalDatabase } from '../infra/local/environment.ts';
import { freePort } from '../infra/local/free-port.ts';
import { costAccountingVariable, type CostRecord } from '../shared/platform/cost-accounting.ts';
import { startOpenAIStub, type OpenAIStub } from '../test/support/openai-stub.ts';
import { readCostRecords } from './cost-model.ts';
import { processCpuMs, processTree } from './cpu.ts';
import { startDynamoDbProxy, type ProxiedCall } from './dynamodb-proxy.ts';
import type { Check } from './report.ts';
import { measureSdkFloor, type SdkFloorResult } from './sdk-floor.ts';
import { createBenchAgents, lastUserText, nonStreamedLoad, openSession, percentiles, processRssMb, startToolServer, streamTurn, type Percentiles } from './turns.ts';

const repoRoot = resolve(import.meta.dirname, '..');
const turnsPerSession = 5;
/** BENCH_TURNS and BENCH_LOAD_MS shorten a run (as for the other turn benchmarks); the figures reported use the defaults. */
const measuredTurns = Number(process.env.BENCH_TURNS ?? 100);
const countedTurns = Math.min(measuredTurns, 20);
const toolTurns = Math.min(measuredTurns, 50);
const loadDurationMs = Number(process.env.BENCH_LOAD_MS ?? 10_000);
const loadConcurrency = 16;
/** Idle: no DynamoDB table request (the stream poller's reads aside) for this long, and CPU back at its idle level. */
const quietMs = 2_000;
/** How far above the runtime's idle CPU after start its CPU may be, over the quiet window, and still be idle. */
const idleMarginOfACore = 0.02;
/** A runtime that never gets that quiet is taken as idle after this long (counted in `idleTimeouts`). */
const idleDeadlineMs = 30_000;
const idleWindowMs = 5_000;
const streamOperations = new Set(['GetRecords', 'GetShardIterator', 'DescribeStream', 'ListStreams']);
/**
 * Work that runs whatever the traffic, not a turn's: schedules (every minute on AWS; the campaign tick every 5 s
 * locally) and the usage roll-up (one per organization and period, delayed up to a minute).
 */
const periodicQueues = new Set([campaignQueue.name, usageRollupQueue.name]);
const periodicFunctions = new Set([...scheduledFunctions.map((scheduled) => scheduled.name), ...queueConsumers.filter((consumer) => periodicQueues.has(consumer.queue.name)).map((consumer) => consumer.name)]);
/** A periodic function's request, its queue's polls, or the local machinery's own (the TTL sweeper's scans: free on AWS). */
function periodic(record: CostRecord): boolean {
  if (record.function !== undefined) return periodicFunctions.has(record.function);
  return record.kind === 'dynamodb' || (record.kind === 'sqs' && periodicQueues.has(record.queue) && record.caller === 'event-source-mapping');
}

const budgetSchema = z.object({
  turn: z.object({ syncRequests: z.number(), syncWriteUnits: z.number(), asyncRequests: z.number(), asyncWriteUnits: z.number() }),
  cpuMsPerTurn: z.number(),
  nonStreamedTurnsPerSecond: z.number(),
  nonStreamedOver2s: z.number(),
  idleCpuShareOfACore: z.number(),
  idleRssMiB: z.number(),
  afterRunRssMiB: z.number(),
  startOverDatabaseMs: z.number(),
  peer: z.object({ firstTextP50Ms: z.number(), firstTextP99Ms: z.number(), toolFirstTextP50Ms: z.number() }),
});
export type Budget = z.infer<typeof budgetSchema>;
export const budget: Budget = budgetSchema.parse(JSON.parse(readFileSync(resolve(import.meta.dirname, 'budget.json'), 'utf8')));

/** What one turn does on one side of its response, averaged over the counted turns. */
export interface TurnShare {
  requests: number;
  operations: Record<string, number>;
  /** DynamoDB requests by the function that made them. */
  functions: Record<string, number>;
  readUnits: number;
  writeUnits: number;
  eventBridgeEvents: number;
  sqsMessagesSent: number;
  sqsRequests: number;
}

/** The runtime (main.ts and any process it starts) and DynamoDB Local. */
export interface ByProcess {
  runtime: number;
  database: number;
}

export interface WholeTurnResult {
  turnsPerSession: number;
  counted: { turns: number; sync: TurnShare; async: TurnShare; idleTimeouts: number };
  measured: {
    turns: number;
    cpuMsPerTurn: ByProcess;
    /**
     * What the runtime and DynamoDB Local would have used idle over the same time, per turn (part of cpuMsPerTurn):
     * at the lower of their idle levels after start and after the run (the first may still hold start-up work).
     */
    idleCpuMsPerTurn: number;
    /**
     * Every DynamoDB table request over the measured turns, counted at the proxy, per turn: turns back to back, so
     * the consumers get several turns' records a batch and caches stay warm (fewer than a turn alone).
     */
    requestsPerTurn: number;
    firstTextMs: Percentiles;
    toolTurns: number;
    toolFirstTextMs: Percentiles;
    nonStreamed: Awaited<ReturnType<typeof nonStreamedLoad>>;
    idleTimeouts: number;
    /** Lines the runtime logged at WARN or ERROR during the run. */
    warnings: number;
  };
  /** From spawning main.ts, DynamoDB Local already up (its own start is the floor's), until /health answers 200. */
  runtimeStartMs: number;
  rssMiB: { idle: ByProcess; afterRun: ByProcess };
  idleCpuShare: { afterStart: ByProcess; afterRun: ByProcess };
  floor: {
    sdk: SdkFloorResult;
    sdkUnits: { requests: number; readUnits: number; writeUnits: number };
    database: { startMs: number; idleRssMiB: number; idleCpuShare: number };
  };
  loadAverage: { start: number; end: number; cores: number };
}

export async function measureWholeTurn(log: (line: string) => void): Promise<WholeTurnResult> {
  const loadAtStart = loadavg()[0] as number;
  const stub = await startOpenAIStub({
    record: false,
    keepAliveTimeoutMs: 600_000,
    toolCall: (body) => (lastUserText(body).includes('LOOKUP') ? { name: 'LOOKUP', arguments: { q: 'x' } } : undefined),
  });
  const toolServer = await startToolServer();
  try {
    log(`whole turn, counted: npm start's runtime writing down every request, ${countedTurns} turns in sessions of ${turnsPerSession}, each followed by a wait for idle`);
    const counted = await withDatabase(async (database) => {
      const runtime = await startRuntime(database, stub, toolServer.url, true);
      try {
        return await countTurns(runtime);
      } finally {
        await runtime.stop();
      }
    });
    log(`whole turn, measured: ${measuredTurns} streamed turns, ${toolTurns} tool turns, ${loadDurationMs / 1000} s of non-streamed turns at c=${loadConcurrency}, idle before and after`);
    const measured = await withDatabase(async (database) => {
      const [databaseIdleShare = 0] = await idleShares([database.pids]);
      const databaseIdleRssMiB = sumOver(database.pids, processRssMb);
      const runtime = await startRuntime(database, stub, toolServer.url, false);
      let figures: Awaited<ReturnType<typeof measureRun>>;
      try {
        figures = await measureRun(runtime, log);
      } finally {
        await runtime.stop();
      }
      log('whole turn: the SDK floor on the same DynamoDB Local');
      const sdk = await measureSdkFloor(database.endpoint, database.tableName, database.pids);
      const sdkUnits = await sdkFloorUnits(database.endpoint, database.tableName);
      return { ...figures, floor: { sdk, sdkUnits, database: { startMs: database.startMs, idleRssMiB: databaseIdleRssMiB, idleCpuShare: databaseIdleShare } } };
    });
    return {
      turnsPerSession,
      counted,
      measured: measured.measured,
      runtimeStartMs: measured.runtimeStartMs,
      rssMiB: measured.rssMiB,
      idleCpuShare: measured.idleCpuShare,
      floor: measured.floor,
      loadAverage: { start: loadAtStart, end: loadavg()[0] as number, cores: cpus().length },
    };
  } finally {
    await stub.close();
    await new Promise((closed) => toolServer.server.close(closed));
  }
}

interface BenchDatabase {
  endpoint: string;
  tableName: string;
  dataDir: string;
  /** DynamoDB Local's processes (its watchdog shell and java). */
  pids: number[];
  startMs: number;
}

/** DynamoDB Local as `npm start` starts it (on DATA_DIR/dynamodb), in a DATA_DIR of its own, removed afterwards. */
async function withDatabase<T>(use: (database: BenchDatabase) => Promise<T>): Promise<T> {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-whole-turn-'));
  const before = new Set(processTree(process.pid));
  const started = performance.now();
  const database = await startLocalDatabase({ dataDir });
  const startMs = performance.now() - started;
  try {
    const pids = processTree(process.pid).filter((pid) => !before.has(pid));
    return await use({ endpoint: database.endpoint, tableName: database.tableName, dataDir, pids, startMs });
  } finally {
    await database.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

interface Runtime {
  baseUrl: string;
  key: string;
  toolUrl: string;
  pid: number;
  database: BenchDatabase;
  calls: ProxiedCall[];
  /** The counted run's written-down requests since the last call. */
  takeRecords(): CostRecord[];
  startMs: number;
  warnings(): number;
  idleCores: number;
  stop(): Promise<void>;
}

/** infra/local/main.ts on the database, through a counting proxy; resolves once /health has answered 200. */
async function startRuntime(database: BenchDatabase, stub: OpenAIStub, toolUrl: string, counted: boolean): Promise<Runtime> {
  const proxy = await startDynamoDbProxy(database.endpoint);
  const accountingFile = join(database.dataDir, 'requests.jsonl');
  writeFileSync(accountingFile, '');
  const port = await freePort();
  const key = `bench-whole-turn-${crypto.randomUUID()}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATA_DIR: database.dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    DYNAMODB_ENDPOINT: proxy.endpoint,
    INIT_ORG_ID: 'bench-whole-turn',
    INIT_API_KEY: key,
    OPENAI_COMPATIBLE_BASE_URL: stub.baseUrl,
    OPENAI_COMPATIBLE_MODELS: 'stub-model',
    LOOPBACK_EGRESS_PORTS: `${new URL(stub.baseUrl).port},${new URL(toolUrl).port}`,
    POWERTOOLS_LOG_LEVEL: 'WARN',
    ...(counted ? { [costAccountingVariable]: accountingFile } : {}),
  };
  // As `npm start` would be started: its table, secrets key and accounting are its own.
  for (const name of ['TABLE_NAME', 'SECRETS_KEY_FILE', ...(counted ? [] : [costAccountingVariable])]) delete env[name];
  const started = performance.now();
  const child: ChildProcess = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', 'infra/local/main.ts'], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = once(child, 'exit');
  let warnings = 0;
  const output: string[] = [];
  for (const stream of [child.stdout, child.stderr]) {
    stream?.setEncoding('utf8').on('data', (text: string) => {
      for (const line of text.split('\n').filter(Boolean)) {
        output.push(line);
        if (/"level":"(WARN|ERROR)"/.test(line)) warnings += 1;
      }
    });
  }
  const baseUrl = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
    await proxy.close();
  };
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`npm start exited with ${child.exitCode} before /health answered:\n${output.slice(-20).join('\n')}`);
      if (await fetch(`${baseUrl}/health`).then((response) => response.ok, () => false)) break;
      await new Promise((wake) => setTimeout(wake, 25));
    }
  } catch (error) {
    await stop();
    throw error;
  }
  const startMs = performance.now() - started;
  let offset = 0;
  const runtime: Runtime = {
    baseUrl,
    key,
    toolUrl,
    pid: child.pid as number,
    database,
    calls: proxy.calls,
    takeRecords: () => {
      const { records, end } = readCostRecords(accountingFile, offset);
      offset = end;
      return records;
    },
    startMs,
    warnings: () => warnings,
    idleCores: 0,
    stop,
  };
  return runtime;
}

/** A figure (CPU milliseconds so far, RSS) summed over the runtime's process tree and over DynamoDB Local's processes. */
function byProcess(runtime: Runtime, figure: (pid: number) => number): ByProcess {
  return { runtime: sumOver(processTree(runtime.pid), figure), database: sumOver(runtime.database.pids, figure) };
}

const sumOver = (pids: readonly number[], figure: (pid: number) => number) => pids.reduce((total, pid) => total + figure(pid), 0);

const cpuNow = (runtime: Runtime) => byProcess(runtime, processCpuMs);
const rssNow = (runtime: Runtime) => byProcess(runtime, processRssMb);

const sleep = (ms: number) => new Promise((wake) => setTimeout(wake, ms));

/** The share of a core each group of processes uses over `idleWindowMs`, measured from 5 s after now (a start, or the end of the run). */
async function idleShares(groups: readonly (readonly number[])[]): Promise<number[]> {
  const cpu = (pids: readonly number[]) => sumOver(pids, processCpuMs);
  await sleep(5_000);
  const before = groups.map(cpu);
  const started = performance.now();
  await sleep(idleWindowMs);
  const elapsed = performance.now() - started;
  return groups.map((pids, index) => (cpu(pids) - (before[index] as number)) / elapsed);
}

async function idleCpu(runtime: Runtime): Promise<ByProcess> {
  const [runtimeShare = 0, databaseShare = 0] = await idleShares([processTree(runtime.pid), runtime.database.pids]);
  return { runtime: runtimeShare, database: databaseShare };
}

/**
 * Waits until the runtime is idle: no DynamoDB table request at the proxy (and, when counted, nothing written
 * down) for `quietMs`, with the runtime's and DynamoDB Local's CPU over that window within `idleMarginOfACore` of
 * their idle level after start (when `checkCpu`). Resolves with the CPU read when the quiet began (the quiet
 * window itself is idle time, not the turns'), and whether the deadline passed first.
 */
async function untilIdle(runtime: Runtime, checkCpu: boolean): Promise<{ cpu: ByProcess; at: number; timedOut: boolean }> {
  const deadline = performance.now() + idleDeadlineMs;
  const samples: { at: number; cpu: ByProcess }[] = [];
  let quietSince = performance.now();
  let seenCalls = 0;
  let recordsSize = -1;
  for (;;) {
    const now = performance.now();
    samples.push({ at: now, cpu: cpuNow(runtime) });
    for (const call of runtime.calls.slice(seenCalls)) if (!streamOperations.has(call.operation)) quietSince = Math.max(quietSince, call.end);
    seenCalls = runtime.calls.length;
    const size = readFileSync(join(runtime.database.dataDir, 'requests.jsonl')).length;
    if (size !== recordsSize) {
      recordsSize = size;
      quietSince = now;
    }
    const quietFor = now - quietSince;
    const startOfQuiet = samples.find((sample) => sample.at >= quietSince) ?? (samples.at(-1) as (typeof samples)[number]);
    if (quietFor >= quietMs) {
      const windowStart = samples.find((sample) => sample.at >= now - quietMs) ?? startOfQuiet;
      const latest = samples.at(-1) as (typeof samples)[number];
      const cores = (latest.cpu.runtime + latest.cpu.database - windowStart.cpu.runtime - windowStart.cpu.database) / Math.max(1, latest.at - windowStart.at);
      if (!checkCpu || cores <= runtime.idleCores + idleMarginOfACore) return { ...startOfQuiet, timedOut: false };
    }
    if (now > deadline) return { ...startOfQuiet, timedOut: true };
    await sleep(100);
  }
}

/** Turns one at a time, each followed by a wait for idle; sync is what happened during its HTTP request. */
async function countTurns(runtime: Runtime): Promise<WholeTurnResult['counted']> {
  const { agentId } = await createBenchAgents(runtime.baseUrl, runtime.key, runtime.toolUrl);
  let idleTimeouts = 0;
  const settle = async () => {
    if ((await untilIdle(runtime, false)).timedOut) idleTimeouts += 1;
  };
  // Warm-up: every function loads its modules and opens its connections.
  const warmup = await openSession(runtime.baseUrl, runtime.key, agentId);
  for (let turn = 0; turn < turnsPerSession; turn += 1) await streamTurn(runtime.baseUrl, runtime.key, warmup, 'hello there');
  await settle();
  const sync: CostRecord[] = [];
  const background: CostRecord[] = [];
  let sessionId = '';
  for (let turn = 0; turn < countedTurns; turn += 1) {
    if (turn % turnsPerSession === 0) {
      sessionId = await openSession(runtime.baseUrl, runtime.key, agentId);
      await settle();
    }
    runtime.takeRecords();
    const sent = Date.now();
    await streamTurn(runtime.baseUrl, runtime.key, sessionId, 'hello there');
    const answered = Date.now();
    await settle();
    for (const record of runtime.takeRecords().filter((record) => !periodic(record))) ((record.at ?? 0) >= sent && (record.at ?? 0) <= answered ? sync : background).push(record);
  }
  return { turns: countedTurns, sync: shareOf(sync, countedTurns), async: shareOf(background, countedTurns), idleTimeouts };
}

function shareOf(records: readonly CostRecord[], turns: number): TurnShare {
  const share: TurnShare = { requests: 0, operations: {}, functions: {}, readUnits: 0, writeUnits: 0, eventBridgeEvents: 0, sqsMessagesSent: 0, sqsRequests: 0 };
  for (const record of records) {
    if (record.kind === 'dynamodb') {
      share.requests += 1;
      share.operations[record.operation] = (share.operations[record.operation] ?? 0) + 1;
      const caller = record.function ?? 'none';
      share.functions[caller] = (share.functions[caller] ?? 0) + 1;
      share.readUnits += record.readUnits;
      share.writeUnits += record.writeUnits;
    } else if (record.kind === 'eventbridge') share.eventBridgeEvents += record.entryBytes.length;
    else if (record.kind === 'sqs') {
      share.sqsRequests += 1;
      if (record.operation.startsWith('SendMessage')) share.sqsMessagesSent += record.entryBytes.length;
    }
  }
  const per = (value: number) => value / turns;
  const perEntry = (counts: Record<string, number>) => Object.fromEntries(Object.entries(counts).map(([name, count]) => [name, per(count)]));
  return {
    requests: per(share.requests),
    operations: perEntry(share.operations),
    functions: perEntry(share.functions),
    readUnits: per(share.readUnits),
    writeUnits: per(share.writeUnits),
    eventBridgeEvents: per(share.eventBridgeEvents),
    sqsMessagesSent: per(share.sqsMessagesSent),
    sqsRequests: per(share.sqsRequests),
  };
}

/** The measured run: idle after start, streamed turns until idle, tool turns, the non-streamed load, idle after. */
async function measureRun(runtime: Runtime, log: (line: string) => void) {
  const idleAfterStart = await idleCpu(runtime);
  runtime.idleCores = idleAfterStart.runtime + idleAfterStart.database;
  const rssIdle = rssNow(runtime);
  const { agentId, toolAgentId } = await createBenchAgents(runtime.baseUrl, runtime.key, runtime.toolUrl);
  let idleTimeouts = 0;
  const settle = async () => {
    const idle = await untilIdle(runtime, true);
    if (idle.timedOut) idleTimeouts += 1;
    return idle;
  };
  const turns = async (agent: string, count: number, content: string) => {
    const firstText: number[] = [];
    let sessionId = '';
    for (let turn = 0; turn < count; turn += 1) {
      if (turn % turnsPerSession === 0) sessionId = await openSession(runtime.baseUrl, runtime.key, agent);
      const timing = await streamTurn(runtime.baseUrl, runtime.key, sessionId, content);
      firstText.push(timing.firstDelta - timing.start);
    }
    return firstText;
  };
  await turns(agentId, 2 * turnsPerSession, 'hello there');
  await turns(toolAgentId, turnsPerSession, 'LOOKUP please');
  await settle();

  log(`whole turn: ${measuredTurns} streamed turns, one at a time, then until idle`);
  const callsBefore = runtime.calls.length;
  const cpuBefore = cpuNow(runtime);
  const turnsFrom = performance.now();
  const firstText = await turns(agentId, measuredTurns, 'hello there');
  const { cpu: cpuAtIdle, at: idleFrom } = await settle();
  const requests = runtime.calls.slice(callsBefore).filter((call) => !streamOperations.has(call.operation)).length;

  log(`whole turn: ${toolTurns} turns with one HTTP tool call`);
  const toolFirstText = await turns(toolAgentId, toolTurns, 'LOOKUP please');
  await settle();

  log(`whole turn: non-streamed turns at c=${loadConcurrency}, 2 s warm-up, ${loadDurationMs / 1000} s measured`);
  const nonStreamed = await nonStreamedLoad(runtime.baseUrl, runtime.key, agentId, { concurrency: loadConcurrency, warmupMs: 2_000, durationMs: loadDurationMs, sessionTurns: turnsPerSession });
  await settle();
  const rssAfterRun = rssNow(runtime);
  const idleAfterRun = await idleCpu(runtime);
  return {
    measured: {
      turns: measuredTurns,
      cpuMsPerTurn: { runtime: (cpuAtIdle.runtime - cpuBefore.runtime) / measuredTurns, database: (cpuAtIdle.database - cpuBefore.database) / measuredTurns },
      idleCpuMsPerTurn: (Math.min(runtime.idleCores, idleAfterRun.runtime + idleAfterRun.database) * (idleFrom - turnsFrom)) / measuredTurns,
      requestsPerTurn: requests / measuredTurns,
      firstTextMs: percentiles(firstText),
      toolTurns,
      toolFirstTextMs: percentiles(toolFirstText),
      nonStreamed,
      idleTimeouts,
      warnings: runtime.warnings(),
    },
    runtimeStartMs: runtime.startMs,
    rssMiB: { idle: rssIdle, afterRun: rssAfterRun },
    idleCpuShare: { afterStart: idleAfterStart, afterRun: idleAfterRun },
  };
}

/** The SDK floor's turn counted as the platform's are (COST_ACCOUNTING_FILE): its requests and units. */
async function sdkFloorUnits(endpoint: string, tableName: string): Promise<WholeTurnResult['floor']['sdkUnits']> {
  const directory = mkdtempSync(join(tmpdir(), 'bench-whole-turn-floor-'));
  const file = join(directory, 'requests.jsonl');
  writeFileSync(file, '');
  const child = fork(resolve(import.meta.dirname, 'sdk-floor-server.ts'), {
    env: { ...process.env, DYNAMODB_ENDPOINT: endpoint, TABLE_NAME: tableName, [costAccountingVariable]: file },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    const port = await new Promise<number>((done) => child.once('message', (message: { port: number }) => done(message.port)));
    const turns = 10;
    for (let turn = 0; turn < turns; turn += 1) await (await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: '{}' })).arrayBuffer();
    const records = () => readCostRecords(file).records;
    // A transaction is written down once it has been read back to size it.
    const deadline = performance.now() + idleDeadlineMs;
    while (records().filter((record) => record.kind === 'dynamodb' && record.operation === 'TransactWriteItems').length < turns) {
      if (performance.now() > deadline) throw new Error('the SDK floor\'s transactions were not written down within 30 s');
      await sleep(50);
    }
    // Its set-up's writes (the items it reads) came before the turns: only the last 3 requests of each turn count.
    const share = shareOf(records().filter((record) => record.kind === 'dynamodb').slice(-3 * turns), turns);
    return { requests: share.requests, readUnits: share.readUnits, writeUnits: share.writeUnits };
  } finally {
    child.kill('SIGTERM');
    rmSync(directory, { recursive: true, force: true });
  }
}

/** The budget (bench/budget.json) against the figures: a turn's requests and write units, CPU, throughput, idle, memory, start. */
export function wholeTurnChecks(result: WholeTurnResult): Check[] {
  const round = (value: number) => Math.round(value * 100) / 100;
  const atMost = (figure: string, value: number, unit: string, target: number): Check => ({ figure, value: round(value), unit, target, comparison: '<=', pass: value <= target });
  const { sync, async: background } = result.counted;
  const { measured } = result;
  const cpu = measured.cpuMsPerTurn.runtime + measured.cpuMsPerTurn.database;
  const idle = (share: ByProcess) => share.runtime + share.database;
  return [
    atMost('whole turn: DynamoDB requests, synchronous', sync.requests, '', budget.turn.syncRequests),
    atMost('whole turn: DynamoDB write units, synchronous', sync.writeUnits, 'WU', budget.turn.syncWriteUnits),
    atMost('whole turn: DynamoDB requests, asynchronous', background.requests, '', budget.turn.asyncRequests),
    atMost('whole turn: DynamoDB write units, asynchronous', background.writeUnits, 'WU', budget.turn.asyncWriteUnits),
    { figure: 'whole turn: CPU per turn, runtime + DynamoDB Local, until idle', value: round(cpu), unit: 'ms', target: budget.cpuMsPerTurn, pass: cpu < budget.cpuMsPerTurn },
    {
      figure: `whole turn: non-streamed turns/s at c=${measured.nonStreamed.concurrency}, none over 2 s`,
      value: round(measured.nonStreamed.turnsPerSecond),
      unit: '/s',
      target: budget.nonStreamedTurnsPerSecond,
      comparison: '>=',
      pass: measured.nonStreamed.turnsPerSecond >= budget.nonStreamedTurnsPerSecond && measured.nonStreamed.over2s <= budget.nonStreamedOver2s && measured.nonStreamed.errors === 0,
    },
    atMost('whole turn: idle CPU 5 s after start, runtime + DynamoDB Local', idle(result.idleCpuShare.afterStart), 'of a core', budget.idleCpuShareOfACore),
    atMost('whole turn: idle CPU after the run, runtime + DynamoDB Local', idle(result.idleCpuShare.afterRun), 'of a core', budget.idleCpuShareOfACore),
    atMost('whole turn: runtime RSS idle after start', result.rssMiB.idle.runtime, 'MiB', budget.idleRssMiB),
    atMost('whole turn: runtime RSS after the run', result.rssMiB.afterRun.runtime, 'MiB', budget.afterRunRssMiB),
    atMost('whole turn: start to first 200 beyond DynamoDB Local\'s own start', result.runtimeStartMs, 'ms', budget.startOverDatabaseMs),
  ];
}

/** The report's section: the table, each figure beside its target and its floor from the same run. */
export function wholeTurnReport(result: WholeTurnResult): string[] {
  const { sync, async: background } = result.counted;
  const { measured, floor } = result;
  const fixed = (value: number, digits = 1) => value.toFixed(digits);
  const percent = (share: number) => `${(share * 100).toFixed(1)} %`;
  const counts = (entries: Record<string, number>) =>
    Object.entries(entries)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, count]) => `${name} ${fixed(count)}`)
      .join(', ') || 'none';
  const operations = (share: TurnShare) => counts(share.operations);
  const functions = (share: TurnShare) => counts(share.functions);
  const sdkCpu = floor.sdk.cpuMsPerRequest + (floor.sdk.databaseCpuMsPerRequest ?? 0);
  const load = measured.nonStreamed;
  const rows: string[][] = [
    ['DynamoDB requests per turn, synchronous', `≤ ${budget.turn.syncRequests}`, fixed(floor.sdkUnits.requests), `${fixed(sync.requests)} (${operations(sync)})`],
    ['DynamoDB requests per turn, asynchronous', `≤ ${budget.turn.asyncRequests}`, '0', `${fixed(background.requests)} (${operations(background)})`],
    ['  by function, sync / async', '', '', `${functions(sync)} / ${functions(background)}`],
    ['  all, turns back to back (the measured run, at the proxy; periodic ones too)', '', '', fixed(measured.requestsPerTurn)],
    ['write units per turn, sync / async', `≤ ${budget.turn.syncWriteUnits} / ≤ ${budget.turn.asyncWriteUnits}`, `${fixed(floor.sdkUnits.writeUnits)} / 0`, `${fixed(sync.writeUnits)} / ${fixed(background.writeUnits)}`],
    ['read units per turn, sync / async', '', `${fixed(floor.sdkUnits.readUnits)} / 0`, `${fixed(sync.readUnits)} / ${fixed(background.readUnits)}`],
    ['EventBridge events per turn, sync / async', '', '0', `${fixed(sync.eventBridgeEvents)} / ${fixed(background.eventBridgeEvents)}`],
    ['SQS messages sent per turn, sync / async (SQS requests)', '', '0', `${fixed(sync.sqsMessagesSent)} / ${fixed(background.sqsMessagesSent)} (${fixed(sync.sqsRequests + background.sqsRequests)})`],
    [
      'CPU per turn until idle, runtime + DynamoDB Local',
      `< ${budget.cpuMsPerTurn} ms`,
      `${fixed(sdkCpu)} ms (${fixed(floor.sdk.cpuMsPerRequest)} + ${fixed(floor.sdk.databaseCpuMsPerRequest ?? 0)})`,
      `${fixed(measured.cpuMsPerTurn.runtime + measured.cpuMsPerTurn.database)} ms (${fixed(measured.cpuMsPerTurn.runtime)} + ${fixed(measured.cpuMsPerTurn.database)})`,
    ],
    ['  of which the idle level over the same time (the lower of after start and after the run)', '', '', `${fixed(measured.idleCpuMsPerTurn)} ms`],
    [
      'streamed turn, time to first text p50 / p99',
      `peer ${budget.peer.firstTextP50Ms} / ${budget.peer.firstTextP99Ms} ms`,
      `${fixed(floor.sdk.readsAloneP50Ms)} ms (two reads)`,
      `${fixed(measured.firstTextMs.p50)} / ${fixed(measured.firstTextMs.p99)} ms`,
    ],
    ['tool turn (HTTP tool), first text p50', `peer ${budget.peer.toolFirstTextP50Ms} ms`, '', `${fixed(measured.toolFirstTextMs.p50)} ms`],
    [
      `non-streamed turns/s at c=${load.concurrency} (over 2 s; p99)`,
      `≥ ${budget.nonStreamedTurnsPerSecond}, ${budget.nonStreamedOver2s} over 2 s`,
      `${fixed(floor.sdk.requestsPerSecond, 0)}/s`,
      `${fixed(load.turnsPerSecond)} (${load.over2s} over 2 s, ${load.errors} errors; p99 ${fixed(load.p99Ms, 0)} ms)`,
    ],
    [
      'RSS idle after start / after the run, runtime (+ DynamoDB Local)',
      `≤ ${budget.idleRssMiB} / ≤ ${budget.afterRunRssMiB} MiB`,
      `${fixed(floor.database.idleRssMiB, 0)} MiB (DynamoDB Local alone)`,
      `${fixed(result.rssMiB.idle.runtime, 0)} / ${fixed(result.rssMiB.afterRun.runtime, 0)} MiB (+ ${fixed(result.rssMiB.idle.database, 0)} / ${fixed(result.rssMiB.afterRun.database, 0)})`,
    ],
    [
      'idle CPU 5 s after start / after the run, runtime + DynamoDB Local',
      `< ${percent(budget.idleCpuShareOfACore)}`,
      `${percent(floor.database.idleCpuShare)} (DynamoDB Local alone)`,
      `${percent(result.idleCpuShare.afterStart.runtime)} + ${percent(result.idleCpuShare.afterStart.database)} / ${percent(result.idleCpuShare.afterRun.runtime)} + ${percent(result.idleCpuShare.afterRun.database)}`,
    ],
    [
      'start to first 200 (DynamoDB Local, then the runtime on it)',
      `floor + ${budget.startOverDatabaseMs / 1000} s`,
      `${fixed(floor.database.startMs, 0)} ms`,
      `${fixed(floor.database.startMs + result.runtimeStartMs, 0)} ms (+${fixed(result.runtimeStartMs, 0)})`,
    ],
  ];
  const widths = [0, 1, 2].map((column) => Math.max(...rows.map((row) => (row[column] ?? '').length), ['figure', 'target', 'floor'][column]?.length ?? 0));
  const line = (cells: string[]) => `   ${cells.map((cell, column) => (column < 3 ? cell.padEnd(widths[column] as number) : cell)).join('  ')}`;
  return [
    '',
    `Whole turn: npm start's runtime (infra/local/main.ts) on DynamoDB Local, stub model, sessions of ${result.turnsPerSession} turns (bench/whole-turn.ts; budget bench/budget.json, docs/performance.md)`,
    line(['figure', 'target', 'floor', 'measured']),
    `   ${widths.map((width) => '-'.repeat(width)).join('  ')}  --------`,
    ...rows.map(line),
    `   Counted: ${result.counted.turns} turns, each waited for until idle (${result.counted.idleTimeouts} waits ran out). Measured: ${measured.turns} streamed turns, ${measured.toolTurns} tool turns, ` +
      `${load.allTurns} non-streamed turns; ${measured.idleTimeouts} waits for idle ran out; the runtime logged ${measured.warnings} warnings or errors.`,
    `   Load average ${result.loadAverage.start.toFixed(2)} at the start, ${result.loadAverage.end.toFixed(2)} at the end, on ${result.loadAverage.cores} cores: CPU figures count the processes' own time; latencies include waiting for a core.`,
  ];
}
