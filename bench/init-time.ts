import { spawn } from 'node:child_process';
import { pathToFileURL } from 'node:url';

export interface InitVariant {
  name: string;
  /** Extra node flags for the child, e.g. the stack's NODE_OPTIONS. */
  execArgv: string[];
  /** Extra environment for the child, e.g. what a traced function has. */
  env?: Record<string, string>;
}

export interface InitTimeResult {
  group: string;
  variant: string;
  runs: number;
  /** `performance.now()` around `await import(bundle)` inside the child: the module-init time. */
  importMs: { median: number; min: number; max: number };
  /** `performance.now()` when the import finished, i.e. since the child process started (Node's own boot included). */
  /** CPU time of the child (all its threads) during the import: less sensitive than wall time to a busy machine. */
  importCpuMs: { median: number };
  /** CPU time of the child's main thread alone during the import: the module's own work, without GC or compiler threads. */
  importThreadCpuMs: { median: number; min: number };
  sinceStartMs: { median: number };
  /** The child's peak resident memory after the import (Node itself included, as Lambda's Max Memory Used is), MiB. */
  peakRssMb: { median: number; max: number };
  /** TCP connections opened while importing (must be 0: no network at init). */
  connects: number;
  /** Runs whose process did not exit by itself after the import (a timer or socket left open). */
  stuck: number;
}

/**
 * Runs in the child (`--input-type=module -e`): counts socket connects through diagnostics_channel, which is
 * already loaded by Node, and times the import alone. Like Lambda's Node.js runtime, it provides the
 * response-streaming global \`awslambda\` before loading the handler (streaming groups wrap theirs at import).
 */
const childScript = `
import { subscribe } from 'node:diagnostics_channel';
globalThis.awslambda ??= { streamifyResponse: (handler) => handler, HttpResponseStream: { from: (stream) => stream } };
let connects = 0;
subscribe('net.client.socket', () => connects++);
const cpu = process.cpuUsage();
const threadCpu = process.threadCpuUsage();
const t = performance.now();
await import(process.argv[1]);
const importMs = performance.now() - t;
const thread = process.threadCpuUsage(threadCpu);
const importThreadCpuMs = (thread.user + thread.system) / 1000;
const { user, system } = process.cpuUsage(cpu);
const importCpuMs = (user + system) / 1000;
const sinceStartMs = performance.now();
await new Promise((resolve) => setImmediate(resolve));
const peakRssMb = process.resourceUsage().maxRSS / 1024;
console.log(JSON.stringify({ importMs, importCpuMs, importThreadCpuMs, sinceStartMs, peakRssMb, connects }));
`;

/** What a Lambda has at init, minus credentials: the handlers must not need more to load. */
const childEnv = (tableName: string): NodeJS.ProcessEnv => ({
  TABLE_NAME: tableName,
  AWS_REGION: 'us-east-1',
  POWERTOOLS_SERVICE_NAME: 'agent-platform',
  PATH: process.env.PATH,
});

/**
 * Imports each bundle `runs` times per variant, each in a fresh `process.execPath`; runs are interleaved across
 * bundles. A process not gone `exitTimeoutMs` after it started counts as stuck (a test on a busy machine gives more).
 */
export async function measureInitTimes(
  bundles: readonly { group: string; file: string }[],
  variants: readonly InitVariant[],
  runs: number,
  exitTimeoutMs = 3_000,
): Promise<InitTimeResult[]> {
  const samples = new Map<
    string,
    { importMs: number[]; importCpuMs: number[]; importThreadCpuMs: number[]; sinceStartMs: number[]; peakRssMb: number[]; connects: number; stuck: number }
  >();
  const key = (group: string, variant: string) => `${group}\0${variant}`;
  for (let run = 0; run < runs; run++) {
    for (const bundle of bundles) {
      for (const variant of variants) {
        const sample = await importOnce(bundle.file, exitTimeoutMs, variant.execArgv, variant.env);
        let entry = samples.get(key(bundle.group, variant.name));
        if (!entry) samples.set(key(bundle.group, variant.name), (entry = { importMs: [], importCpuMs: [], importThreadCpuMs: [], sinceStartMs: [], peakRssMb: [], connects: 0, stuck: 0 }));
        entry.importMs.push(sample.importMs);
        entry.importCpuMs.push(sample.importCpuMs);
        entry.importThreadCpuMs.push(sample.importThreadCpuMs);
        entry.sinceStartMs.push(sample.sinceStartMs);
        entry.peakRssMb.push(sample.peakRssMb);
        entry.connects += sample.connects;
        if (sample.stuck) entry.stuck++;
      }
    }
  }
  return bundles.flatMap((bundle) =>
    variants.map((variant) => {
      const entry = samples.get(key(bundle.group, variant.name))!;
      return {
        group: bundle.group,
        variant: variant.name,
        runs,
        importMs: { median: median(entry.importMs), min: Math.min(...entry.importMs), max: Math.max(...entry.importMs) },
        importCpuMs: { median: median(entry.importCpuMs) },
        importThreadCpuMs: { median: median(entry.importThreadCpuMs), min: Math.min(...entry.importThreadCpuMs) },
        sinceStartMs: { median: median(entry.sinceStartMs) },
        peakRssMb: { median: median(entry.peakRssMb), max: Math.max(...entry.peakRssMb) },
        connects: entry.connects,
        stuck: entry.stuck,
      };
    }),
  );
}

interface Sample {
  importMs: number;
  importCpuMs: number;
  importThreadCpuMs: number;
  sinceStartMs: number;
  peakRssMb: number;
  connects: number;
  stuck: boolean;
}

function importOnce(file: string, exitTimeoutMs: number, execArgv: string[], env: Record<string, string> = {}): Promise<Sample> {
  return new Promise((resolveSample, reject) => {
    const child = spawn(process.execPath, [...execArgv, '--input-type=module', '-e', childScript, pathToFileURL(file).href], {
      env: { ...childEnv('bench'), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let stuck = false;
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => {
      stuck = true;
      child.kill('SIGKILL');
    }, exitTimeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      const line = stdout.trim().split('\n').pop() ?? '';
      try {
        const parsed = JSON.parse(line) as Omit<Sample, 'stuck'>;
        if (code !== 0 && !stuck) throw new Error(`exit code ${code}`);
        resolveSample({ ...parsed, stuck });
      } catch (error) {
        reject(new Error(`importing ${file} failed (${(error as Error).message}): ${readable(stderr || stdout)}`));
      }
    });
  });
}

/** A child's output without the minified source line Node prints above an uncaught error. */
const readable = (output: string) =>
  output
    .trim()
    .split('\n')
    .map((line) => (line.length > 300 ? `${line.slice(0, 300)}…` : line))
    .join('\n');

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}
