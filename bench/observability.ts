/**
 * What Powertools Metrics and Tracer add to the functions (docs/deploy.md#what-it-adds-to-the-functions): the
 * bundle bytes of a function of the request path (chat-messages, which bundles both) and of a consumer
 * (webhook-delivery, which bundles Metrics only), each built as the stack builds it and again with one package
 * replaced by an empty stand-in; and the init time of the platform's metrics and tracing modules, tracing off and
 * on, as the main thread's CPU time in 20 fresh processes each (wall time says little on a shared machine).
 * `npm run bench` runs it; `node bench/observability.ts` runs it alone.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build, type Plugin } from 'esbuild';
import { lambdaBundling } from '../infra/bundling.ts';
import { measureInitTimes, type InitTimeResult } from './init-time.ts';
import type { Check } from './report.ts';

const repoRoot = resolve(import.meta.dirname, '..');
const runs = 20;
/** The budget of each package, per function: bytes in its bundle, and init time. */
export const observabilityBudget = { bytes: 30 * 1024, initMs: 10 } as const;

type Package = 'metrics' | 'tracer';
/** Stand-ins with the members the platform uses, and nothing behind them. */
const standIns: Record<Package, string> = {
  metrics: 'export class Metrics { addMetric() { return this; } hasStoredMetrics() { return false; } publishStoredMetrics() { return this; } serializeMetrics() { return {}; } clearMetrics() {} }',
  tracer: 'export class Tracer {}',
};

function without(replaced: Package | undefined): Plugin {
  return {
    name: 'powertools-stand-in',
    setup(builder) {
      builder.onResolve({ filter: /^@aws-lambda-powertools\/(metrics|tracer)$/ }, (args) => {
        const name = args.path.split('/')[1] as Package;
        return name === replaced ? { path: name, namespace: 'stand-in' } : undefined;
      });
      builder.onLoad({ filter: /.*/, namespace: 'stand-in' }, (args) => ({ contents: standIns[args.path as Package], loader: 'js' }));
    },
  };
}

async function bundle(outDir: string, name: string, source: { entry: string } | { contents: string }, replaced?: Package): Promise<{ file: string; bytes: number }> {
  const file = join(outDir, name, 'index.mjs');
  await build({
    ...lambdaBundling,
    ...('entry' in source ? { entryPoints: [join(repoRoot, source.entry)] } : { stdin: { contents: source.contents, resolveDir: import.meta.dirname, loader: 'ts' } }),
    outfile: file,
    absWorkingDir: repoRoot,
    plugins: [without(replaced)],
    logLevel: 'warning',
  });
  return { file, bytes: readFileSync(file).length };
}

export interface BundleCost {
  fn: string;
  package: Package;
  /** Bytes of the minified bundle the package adds (0 when the function does not bundle it). */
  bytes: number;
}

/**
 * Init time a package adds: the main thread's CPU time while a fresh process imports a bundle of what every function
 * loads anyway (the logger, the DynamoDB client) and the platform's module using the package, less that of the
 * first alone; median and fastest of the runs, and the whole process's (all threads, median).
 */
export interface InitCost {
  ms: number;
  fastestMs: number;
  allThreadsMs: number;
}

export interface ObservabilityResults {
  bundles: BundleCost[];
  init: {
    /** `shared/platform/metrics.ts`: Powertools Metrics, constructed at init. */
    metrics: InitCost;
    /** `shared/platform/tracing.ts` with the tracer's import bundled but not run: locally, in tests, on untraced functions. */
    tracingOff: InitCost;
    /** The same where the stack traces (X-Ray active, POWERTOOLS_TRACE_ENABLED=true): the tracer loads and patches HTTP. */
    tracingOn: InitCost;
  };
}

const functions = [
  { name: 'chat-messages', entry: 'functions/chat-messages/handler.ts' },
  { name: 'webhook-delivery', entry: 'functions/webhook-delivery/handler.ts' },
];

/** What every function loads anyway: the logger and the DynamoDB client (with node:http and node:https). */
const base = "import { logger } from '../shared/platform/logger.ts'; import { createDocumentClient } from '../shared/platform/store/dynamo.ts'; logger.debug('init', { client: typeof createDocumentClient });";
const probes = {
  base,
  metrics: `${base} import { emfMetrics, flushMetrics } from '../shared/platform/metrics.ts'; emfMetrics.add({ name: 'Init', unit: 'Count', description: '' }, 1); flushMetrics();`,
  tracing: `${base} import { startTracing } from '../shared/platform/tracing.ts'; await startTracing(() => import('@aws-lambda-powertools/tracer'));`,
};
/** What a function the stack traces has in its environment (Lambda sets the first two). */
const tracedEnvironment = { AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x', AWS_LAMBDA_FUNCTION_NAME: 'bench', POWERTOOLS_TRACE_ENABLED: 'true' };

export async function measureObservability(log: (line: string) => void): Promise<ObservabilityResults> {
  const outDir = mkdtempSync(join(tmpdir(), 'bench-observability-'));
  try {
    log(`observability: ${functions.map((fn) => fn.name).join(' and ')} built with and without Powertools Metrics and Tracer; init of each module, ${runs} imports each`);
    const bundles: BundleCost[] = [];
    for (const fn of functions) {
      const full = await bundle(outDir, `${fn.name}-full`, fn);
      for (const replaced of ['metrics', 'tracer'] as const) bundles.push({ fn: fn.name, package: replaced, bytes: full.bytes - (await bundle(outDir, `${fn.name}-${replaced}`, fn, replaced)).bytes });
    }
    const files = Object.fromEntries(await Promise.all(Object.entries(probes).map(async ([name, contents]) => [name, (await bundle(outDir, `probe-${name}`, { contents })).file] as const)));
    const off = await measureInitTimes(['base', 'metrics', 'tracing'].map((group) => ({ group, file: files[group] as string })), [{ name: 'off', execArgv: [] }], runs);
    const on = await measureInitTimes(['base', 'tracing'].map((group) => ({ group, file: files[group] as string })), [{ name: 'on', execArgv: [], env: tracedEnvironment }], runs);
    const time = (results: InitTimeResult[], group: string) => results.find((result) => result.group === group)!;
    const init = {
      metrics: initAdded(time(off, 'metrics'), time(off, 'base')),
      tracingOff: initAdded(time(off, 'tracing'), time(off, 'base')),
      tracingOn: initAdded(time(on, 'tracing'), time(on, 'base')),
    };
    for (const cost of bundles) log(`observability: ${cost.package} adds ${(cost.bytes / 1024).toFixed(1)} KB to ${cost.fn}`);
    for (const [name, cost] of Object.entries(init)) log(`observability: ${name} adds ${describeInit(cost)} of init`);
    return { bundles, init };
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
}

/**
 * Metrics stays within the budget everywhere; the tracer costs no more than the budget where tracing is off, and no
 * byte outside the request path. Its bytes on the request path and its load where tracing is on are reported, not
 * held to the budget: the X-Ray SDK is CommonJS and cannot be trimmed (docs/deploy.md#what-it-adds-to-the-functions).
 */
export function observabilityChecks(results: ObservabilityResults): Check[] {
  const atMost = (figure: string, value: number, unit: string, target: number): Check => ({ figure, value, unit, target, comparison: '<=', pass: value <= target });
  return [
    ...results.bundles.flatMap((cost) => {
      if (cost.package === 'metrics') return [atMost(`metrics: bytes added to ${cost.fn}`, cost.bytes, 'B', observabilityBudget.bytes)];
      // The tracer belongs to the request path alone: a consumer bundles none of it.
      return cost.fn === 'webhook-delivery' ? [atMost(`tracer: bytes added to ${cost.fn}`, cost.bytes, 'B', 0)] : [];
    }),
    atMost('metrics: init added (main thread CPU)', results.init.metrics.ms, 'ms', observabilityBudget.initMs),
    atMost('tracer, tracing off: init added (main thread CPU)', results.init.tracingOff.ms, 'ms', observabilityBudget.initMs),
  ];
}

/** The report's lines for this section. */
export function observabilityReport(results: ObservabilityResults): string[] {
  return [
    '',
    `Operations: what Powertools Metrics and Tracer add (bench/observability.ts; budget ${observabilityBudget.bytes / 1024} KB and ${observabilityBudget.initMs} ms each)`,
    ...results.bundles.map((cost) => `   ${cost.package}: ${(cost.bytes / 1024).toFixed(1)} KB of ${cost.fn}'s bundle`),
    `   init, metrics: ${describeInit(results.init.metrics)}`,
    `   init, tracer where tracing is off: ${describeInit(results.init.tracingOff)}`,
    `   init, tracer where tracing is on: ${describeInit(results.init.tracingOn)}`,
  ];
}

function initAdded(withIt: InitTimeResult, withoutIt: InitTimeResult): InitCost {
  return {
    ms: round(withIt.importThreadCpuMs.median - withoutIt.importThreadCpuMs.median),
    fastestMs: round(withIt.importThreadCpuMs.min - withoutIt.importThreadCpuMs.min),
    allThreadsMs: round(withIt.importCpuMs.median - withoutIt.importCpuMs.median),
  };
}

const describeInit = (init: InitCost) => `${init.ms} ms of main-thread CPU (fastest run ${init.fastestMs} ms; all threads ${init.allThreadsMs} ms)`;

const round = (value: number) => Math.round(value * 10) / 10;

if (import.meta.main) {
  const results = await measureObservability((line) => console.log(`[bench] ${line}`));
  console.log(JSON.stringify({ results, checks: observabilityChecks(results) }, null, 2));
}
