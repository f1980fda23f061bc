/**
 * What `npm start` costs while nothing happens, beside its floor, DynamoDB Local alone: CPU (share of one core)
 * and resident memory of the runtime's process and of DynamoDB Local's, idle after the start, idle again after a
 * run of chat sessions and once that run's execution environments have ended, and the time from the start to the
 * first `/health` 200. Read from /proc (Linux).
 * `npm run bench -- idle` runs it alone (bench/run.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startLocalDatabase } from '../infra/local/environment.ts';
import { freePort } from '../infra/local/free-port.ts';
import type { Check } from './report.ts';

const repoRoot = resolve(import.meta.dirname, '..');
/** Settling time after the start (or after the run) before idle is measured, and how long it is measured. */
const settleMs = 5_000;
const sampleMs = 10_000;
/** Past `npm start`'s idle end of execution environments (30 s), for the last sample. */
const environmentsEndedMs = 35_000;
const sessions = 40;
const turnsPerSession = 5;
const apiKey = 'apk_bench_idle_key_0123456789';
/** The run measures the runtime, not a plan: limits and quotas stay on, with limits the run never reaches. */
const benchPlans = JSON.stringify({
  free: { name: 'Bench', quotas: { chat_messages: null, voice_seconds: null, knowledge_chunks: null }, concurrentCalls: 1_000, requestsPerSecond: 1_000_000, burst: 1_000_000 },
});

/** The targets of issue 26 for the runtime process. */
export const idleTargets = { cpuShare: 0.02, rssIdleMiB: 200, rssAfterLoadMiB: 512, startupOverFloorMs: 3_000 };

interface ProcessFigures {
  /** Share of one core, over the sample. */
  cpu: number;
  rssMiB: number;
}

export interface IdleResults {
  floor: { startMs: number; idle: ProcessFigures };
  runtime: {
    startToHealthMs: number;
    idle: { runtime: ProcessFigures; database: ProcessFigures };
    afterLoad: { runtime: ProcessFigures; database: ProcessFigures; turns: number };
    /** Idle again once the run's execution environments have ended. */
    afterEnvironmentsEnded: { runtime: ProcessFigures; database: ProcessFigures };
  };
  loadAverage: { start: number; end: number };
}

/** utime + stime of a process, in milliseconds (/proc counts ticks of 10 ms). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function rssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((entry) => entry.startsWith('VmRSS:')) as string;
  return Math.round(Number(line.split(/\s+/)[1]) / 1024);
}

/** The java process among a process's descendants (DynamoDB Local runs beneath a shell watchdog). */
function javaBeneath(pid: number): number | undefined {
  const parents = new Map<number, number>();
  const names = new Map<number, string>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      names.set(Number(entry), stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')));
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // Gone while we looked.
    }
  }
  const descends = (candidate: number): boolean => {
    for (let parent = parents.get(candidate); parent !== undefined && parent > 1; parent = parents.get(parent)) if (parent === pid) return true;
    return false;
  };
  return [...names].find(([candidate, name]) => name === 'java' && descends(candidate))?.[0];
}

async function sampleIdle(pids: number[]): Promise<ProcessFigures[]> {
  const before = pids.map(cpuMs);
  const started = performance.now();
  await new Promise((wake) => setTimeout(wake, sampleMs));
  const elapsed = performance.now() - started;
  return pids.map((pid, index) => ({ cpu: Math.round(((cpuMs(pid) - (before[index] as number)) / elapsed) * 1000) / 1000, rssMiB: rssMiB(pid) }));
}

async function api(baseUrl: string, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as Record<string, unknown>;
}

/** Chat sessions of a few turns each, four at a time, each closed at the end (analysis, events, metering follow). */
async function runSessions(baseUrl: string): Promise<number> {
  const agent = await api(baseUrl, 'POST', '/v2/chat/agents', { fullName: 'Idle bench', description: 'Bench', role: 'You answer briefly.' });
  let turns = 0;
  const session = async () => {
    const created = await api(baseUrl, 'POST', '/v1/chat/chat/sessions', { agentId: agent.id });
    for (let turn = 0; turn < turnsPerSession; turn += 1) {
      await api(baseUrl, 'POST', `/v1/chat/chat/sessions/${created.id as string}/messages`, { content: `Hello ${turn}`, stream: false });
      turns += 1;
    }
    await api(baseUrl, 'PATCH', `/v1/chat/chat/sessions/${created.id as string}/close`, {});
  };
  for (let index = 0; index < sessions; index += 4) await Promise.all([session(), session(), session(), session()]);
  return turns;
}

async function waitForHealth(child: ChildProcess, port: number): Promise<void> {
  for (;;) {
    if (child.exitCode !== null) throw new Error(`npm start exited with ${child.exitCode} before /health answered`);
    const healthy = await fetch(`http://127.0.0.1:${port}/health`).then((response) => response.ok, () => false);
    if (healthy) return;
    await new Promise((wake) => setTimeout(wake, 25));
  }
}

export async function measureIdle(log: (line: string) => void): Promise<IdleResults> {
  const loadAverageAtStart = loadavg()[0] as number;
  log(`idle: DynamoDB Local alone, then npm start, each left ${settleMs / 1000} s and measured ${sampleMs / 1000} s idle; then ${sessions} sessions of ${turnsPerSession} turns and idle again`);
  const floorDir = mkdtempSync(join(tmpdir(), 'bench-idle-floor-'));
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-idle-'));
  try {
    const floorStarted = performance.now();
    const database = await startLocalDatabase({ dataDir: floorDir });
    const floorStartMs = Math.round(performance.now() - floorStarted);
    const floorPid = javaBeneath(process.pid) as number;
    await new Promise((wake) => setTimeout(wake, settleMs));
    const [floorIdle] = await sampleIdle([floorPid]);
    await database.stop();

    const port = await freePort();
    const started = performance.now();
    const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', 'infra/local/main.ts'], {
      cwd: repoRoot,
      env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), INIT_ORG_ID: 'bench-idle', INIT_API_KEY: apiKey, POWERTOOLS_LOG_LEVEL: 'WARN', PLANS: benchPlans },
      stdio: 'ignore',
    });
    const exited = once(child, 'exit');
    try {
      await waitForHealth(child, port);
      const startToHealthMs = Math.round(performance.now() - started);
      const pids = [child.pid as number, javaBeneath(child.pid as number) as number];
      await new Promise((wake) => setTimeout(wake, settleMs));
      const [runtimeIdle, databaseIdle] = (await sampleIdle(pids)) as [ProcessFigures, ProcessFigures];
      const turns = await runSessions(`http://127.0.0.1:${port}`);
      await new Promise((wake) => setTimeout(wake, settleMs));
      const [runtimeAfter, databaseAfter] = (await sampleIdle(pids)) as [ProcessFigures, ProcessFigures];
      await new Promise((wake) => setTimeout(wake, environmentsEndedMs - sampleMs - settleMs));
      const [runtimeEnded, databaseEnded] = (await sampleIdle(pids)) as [ProcessFigures, ProcessFigures];
      return {
        floor: { startMs: floorStartMs, idle: floorIdle as ProcessFigures },
        runtime: {
          startToHealthMs,
          idle: { runtime: runtimeIdle, database: databaseIdle },
          afterLoad: { runtime: runtimeAfter, database: databaseAfter, turns },
          afterEnvironmentsEnded: { runtime: runtimeEnded, database: databaseEnded },
        },
        loadAverage: { start: loadAverageAtStart, end: loadavg()[0] as number },
      };
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  } finally {
    rmSync(floorDir, { recursive: true, force: true });
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export function idleChecks(results: IdleResults): Check[] {
  const { runtime, floor } = results;
  const check = (figure: string, value: number, unit: string, target: number): Check => ({ figure, value, unit, target, comparison: '<=', pass: value <= target });
  return [
    check('npm start idle after start: runtime CPU (share of a core)', runtime.idle.runtime.cpu, 'core', idleTargets.cpuShare),
    check('npm start idle after a run: runtime CPU (share of a core)', runtime.afterLoad.runtime.cpu, 'core', idleTargets.cpuShare),
    check('npm start idle after start: runtime RSS', runtime.idle.runtime.rssMiB, 'MiB', idleTargets.rssIdleMiB),
    check('npm start idle after a run: runtime RSS', runtime.afterLoad.runtime.rssMiB, 'MiB', idleTargets.rssAfterLoadMiB),
    check('npm start idle after a run, its execution environments ended: runtime RSS', runtime.afterEnvironmentsEnded.runtime.rssMiB, 'MiB', idleTargets.rssAfterLoadMiB),
    check('npm start: start to first /health 200', runtime.startToHealthMs, 'ms', floor.startMs + idleTargets.startupOverFloorMs),
  ];
}

export function idleReport(results: IdleResults): string[] {
  const { floor, runtime } = results;
  const figures = (figuresOf: ProcessFigures) => `CPU ${(figuresOf.cpu * 100).toFixed(1)} % of a core, RSS ${figuresOf.rssMiB} MiB`;
  return [
    '',
    `Idle: npm start with no traffic, beside DynamoDB Local alone (bench/idle.ts; targets: < ${idleTargets.cpuShare * 100} % of a core, RSS <= ${idleTargets.rssIdleMiB} MiB idle and <= ${idleTargets.rssAfterLoadMiB} MiB after load, first 200 within ${idleTargets.startupOverFloorMs / 1000} s of the floor's start)`,
    `   DynamoDB Local alone: started in ${floor.startMs} ms; idle ${figures(floor.idle)}`,
    `   npm start: first /health 200 after ${runtime.startToHealthMs} ms (+${runtime.startToHealthMs - floor.startMs} ms over the floor's start)`,
    `   idle after start: runtime ${figures(runtime.idle.runtime)}; its DynamoDB Local ${figures(runtime.idle.database)}`,
    `   idle after ${runtime.afterLoad.turns} turns: runtime ${figures(runtime.afterLoad.runtime)}; its DynamoDB Local ${figures(runtime.afterLoad.database)}`,
    `   and ${environmentsEndedMs / 1000} s later (execution environments ended): runtime ${figures(runtime.afterEnvironmentsEnded.runtime)}; its DynamoDB Local ${figures(runtime.afterEnvironmentsEnded.database)}`,
    `   Load average ${results.loadAverage.start.toFixed(1)} at the start, ${results.loadAverage.end.toFixed(1)} at the end.`,
  ];
}
