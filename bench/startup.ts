/**
 * How long `npm start` takes to answer `/health`, beside its floor: DynamoDB Local's own start on the same kind of
 * data directory, which `npm start` waits for before anything else can run. A first start (empty DATA_DIR: table
 * created, organization and key made) and a restart (the same DATA_DIR), each run a few times for a median.
 * `npm run bench` runs it; `node bench/startup.ts` runs it alone.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startLocalDatabase } from '../infra/local/environment.ts';
import { freePort } from '../infra/local/free-port.ts';
import type { Check } from './report.ts';

const repoRoot = resolve(import.meta.dirname, '..');
const runs = 3;
/** What `npm start` may add to DynamoDB Local's start (issue 25). */
export const startupBudgetMs = 5_000;

export interface StartupResults {
  /** Milliseconds, one per run. */
  floor: { firstMs: number[]; restartMs: number[] };
  npmStart: { firstMs: number[]; restartMs: number[] };
  loadAverage: { start: number; end: number };
}

/** Starts `npm start`'s entry on `dataDir` and a free port; the time until `/health` answers 200, then stops it. */
async function timeToHealth(dataDir: string): Promise<number> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', 'infra/local/main.ts'], {
    cwd: repoRoot,
    env: { ...process.env, DATA_DIR: dataDir, PORT: String(port) },
    stdio: 'ignore',
  });
  const exited = once(child, 'exit');
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`npm start exited with ${child.exitCode} before /health answered`);
      const healthy = await fetch(`http://127.0.0.1:${port}/health`).then((response) => response.ok, () => false);
      if (healthy) return Math.round(performance.now() - started);
      await new Promise((wake) => setTimeout(wake, 25));
    }
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

/** DynamoDB Local alone on `dataDir`, started as `npm start` starts it; the time until it answers. */
async function databaseStart(dataDir: string): Promise<number> {
  const started = performance.now();
  const database = await startLocalDatabase({ dataDir });
  const elapsed = Math.round(performance.now() - started);
  await database.stop();
  return elapsed;
}

export async function measureStartup(log: (line: string) => void): Promise<StartupResults> {
  log(`start-up: npm start until /health answers, beside DynamoDB Local's own start, first start and restart, ${runs} runs each`);
  const results: StartupResults = { floor: { firstMs: [], restartMs: [] }, npmStart: { firstMs: [], restartMs: [] }, loadAverage: { start: loadavg()[0] as number, end: 0 } };
  for (let run = 0; run < runs; run += 1) {
    const floorDir = mkdtempSync(join(tmpdir(), 'bench-startup-floor-'));
    const startDir = mkdtempSync(join(tmpdir(), 'bench-startup-'));
    try {
      results.floor.firstMs.push(await databaseStart(floorDir));
      results.floor.restartMs.push(await databaseStart(floorDir));
      results.npmStart.firstMs.push(await timeToHealth(startDir));
      results.npmStart.restartMs.push(await timeToHealth(startDir));
    } finally {
      rmSync(floorDir, { recursive: true, force: true });
      rmSync(startDir, { recursive: true, force: true });
    }
  }
  results.loadAverage.end = loadavg()[0] as number;
  return results;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

export function startupChecks(results: StartupResults): Check[] {
  const within = (figure: string, startMs: number[], floorMs: number[]): Check => {
    const value = median(startMs);
    const target = median(floorMs) + startupBudgetMs;
    return { figure, value, unit: 'ms', target, comparison: '<=', pass: value <= target };
  };
  return [
    within('npm start, first start: /health answers (median)', results.npmStart.firstMs, results.floor.firstMs),
    within('npm start, restart: /health answers (median)', results.npmStart.restartMs, results.floor.restartMs),
  ];
}

export function startupReport(results: StartupResults): string[] {
  const line = (name: string, start: number[], floor: number[]) =>
    `   ${name}: ${median(start)} ms (runs ${start.join(', ')}), DynamoDB Local alone ${median(floor)} ms (runs ${floor.join(', ')}): +${median(start) - median(floor)} ms`;
  return [
    '',
    `Start-up: npm start until /health answers, beside DynamoDB Local's own start (bench/startup.ts; budget: the floor + ${startupBudgetMs / 1000} s)`,
    line('first start (empty DATA_DIR)', results.npmStart.firstMs, results.floor.firstMs),
    line('restart (same DATA_DIR)', results.npmStart.restartMs, results.floor.restartMs),
    `   Load average ${results.loadAverage.start.toFixed(1)} at the start, ${results.loadAverage.end.toFixed(1)} at the end.`,
  ];
}

if (import.meta.main) {
  const results = await measureStartup((line) => console.log(`[bench] ${line}`));
  console.log(startupReport(results).join('\n'));
  console.log(JSON.stringify(startupChecks(results), null, 2));
}
