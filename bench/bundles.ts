import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Metafile } from 'esbuild';
import type { LambdaFunction } from '../functions/lambda-functions.ts';
import { bundleEntryFile, bundleFunction } from '../infra/bundling.ts';
import type { InitTimeResult } from './init-time.ts';
import { table, type Check } from './report.ts';

const repoRoot = resolve(import.meta.dirname, '..');

export interface InputShare {
  /** A source file (relative to the repository) or an npm package name. */
  name: string;
  bytes: number;
}

/** A Lambda function's handler module: a route group or a table stream consumer. */
export interface LambdaEntry {
  name: string;
  /** Relative to the repository root. */
  entry: string;
}

export interface BundleResult {
  /** The route group's (or consumer's) name. */
  group: string;
  entry: string;
  /** The built `index.mjs` (source maps excluded from every figure). */
  file: string;
  /** What a cold start loads: `index.mjs` and the chunks it imports statically. */
  bytes: number;
  gzipBytes: number;
  /** Every file deployed, the chunks of dynamic imports too (what a code path loads when it first runs). */
  totalBytes: number;
  buildMs: number;
  /** Largest contributors by bytes in the minified output. */
  topInputs: InputShare[];
  topPackages: InputShare[];
}

/** Builds every entry exactly as the stack does (infra/bundling.ts), into `<outDir>/<name>/`. */
export async function buildBundles(groups: readonly LambdaEntry[], outDir: string): Promise<BundleResult[]> {
  const results: BundleResult[] = [];
  for (const group of groups) {
    const directory = join(outDir, group.name.replace(/[^\w.-]+/g, '-'));
    const outfile = join(directory, bundleEntryFile);
    const started = performance.now();
    const metafile = await bundleFunction(join(repoRoot, group.entry), directory, repoRoot);
    const buildMs = performance.now() - started;
    const loaded = loadedAtInit(metafile, outfile);
    const code = Buffer.concat(loaded.map((file) => readFileSync(resolve(repoRoot, file))));
    const inputs = loaded.flatMap((file) => outputInputs(metafile, file));
    results.push({
      group: group.name,
      entry: group.entry,
      file: outfile,
      bytes: code.length,
      gzipBytes: gzipSync(code, { level: 9 }).length,
      totalBytes: Object.entries(metafile.outputs).reduce((sum, [file, output]) => sum + (file.endsWith('.map') ? 0 : output.bytes), 0),
      buildMs,
      topInputs: top(inputs, 10),
      topPackages: top(byPackage(inputs), 10),
    });
  }
  return results;
}

/** The entry's output file and the chunks it imports statically, transitively (as metafile paths). */
export function loadedAtInit(metafile: Metafile, outfile: string): string[] {
  const entry = Object.keys(metafile.outputs).find((path) => resolve(repoRoot, path) === outfile);
  if (!entry) throw new Error(`esbuild's metafile does not list ${outfile}`);
  const loaded = new Set([entry]);
  for (const file of loaded) {
    for (const { path, kind } of metafile.outputs[file]?.imports ?? []) if (kind === 'import-statement' && path in metafile.outputs) loaded.add(path);
  }
  return [...loaded];
}

export function outputInputs(metafile: Metafile, file: string): InputShare[] {
  return Object.entries(metafile.outputs[file]?.inputs ?? {}).map(([name, { bytesInOutput }]) => ({ name, bytes: bytesInOutput }));
}

/** Sums inputs per npm package (`@scope/name` or `name`, the innermost node_modules wins); our own code is `(app)`. */
function byPackage(inputs: InputShare[]): InputShare[] {
  const totals = new Map<string, number>();
  for (const input of inputs) {
    const match = /.*node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input.name);
    const name = match ? (match[1] as string) : '(app)';
    totals.set(name, (totals.get(name) ?? 0) + input.bytes);
  }
  return [...totals].map(([name, bytes]) => ({ name, bytes }));
}

const top = (shares: InputShare[], count: number): InputShare[] => [...shares].sort((a, b) => b.bytes - a.bytes).slice(0, count);

/** Bundles, init and memory (issue 26; docs/performance.md#bundles-init-and-memory). */
export const bundleTargets = {
  /** What a cold start loads of a function that runs no model, at most the SDK floor's plus this. */
  aboveFloorBytes: 150_000,
  /** What a cold start loads of a function that calls models. */
  modelFunctionBytes: 800_000,
  /** Module init, the main thread's CPU time (decision 421), at most the SDK floor's plus this. */
  initAboveFloorMs: 20,
  /** A function's memory on Lambda is at least this many times its measured peak RSS. */
  memoryHeadroom: 2,
};

/** The variant of the init times the checks read: the stack's NODE_OPTIONS. */
export const checkedInitVariant = 'source maps';

/** The floor's name among the bundles: the DynamoDB client and lib-dynamodb alone (bench/sdk-floor-handler.ts). */
export const sdkFloor: LambdaEntry = { name: 'sdk-floor', entry: 'bench/sdk-floor-handler.ts' };

/** What one function is held to, beside the floor measured in the same run. */
export function bundleChecks(bundles: readonly BundleResult[], initTime: readonly InitTimeResult[], functions: readonly LambdaFunction[]): Check[] {
  const floorBundle = bundles.find((bundle) => bundle.group === sdkFloor.name);
  const floorInit = initTime.find((init) => init.group === sdkFloor.name && init.variant === checkedInitVariant);
  if (!floorBundle || !floorInit) throw new Error('the SDK floor was not measured');
  const checks: Check[] = [];
  for (const fn of functions) {
    const bundle = bundles.find((candidate) => candidate.group === fn.name);
    const inits = initTime.filter((init) => init.group === fn.name);
    const init = inits.find((candidate) => candidate.variant === checkedInitVariant);
    if (!bundle || !init) throw new Error(`${fn.name} was not measured`);
    const bytesTarget = fn.runsModels ? bundleTargets.modelFunctionBytes : floorBundle.bytes + bundleTargets.aboveFloorBytes;
    checks.push({ figure: `bundle ${fn.name}: loaded at init`, value: bundle.bytes, unit: 'B', target: bytesTarget, comparison: '<=', pass: bundle.bytes <= bytesTarget });
    const initTarget = round(floorInit.importThreadCpuMs.median + bundleTargets.initAboveFloorMs);
    const initMs = round(init.importThreadCpuMs.median);
    checks.push({ figure: `init ${fn.name}: main-thread CPU ms (${checkedInitVariant})`, value: initMs, unit: 'ms', target: initTarget, comparison: '<=', pass: initMs <= initTarget });
    const peak = Math.max(...inits.map((candidate) => candidate.peakRssMb.max));
    const memoryFloor = Math.ceil(peak * bundleTargets.memoryHeadroom);
    checks.push({ figure: `memory ${fn.name}: declared MB`, value: fn.memoryMb, unit: 'MB', target: memoryFloor, comparison: '>=', pass: fn.memoryMb >= memoryFloor });
    // Importing a handler must neither open a socket nor leave anything that keeps the process alive.
    const sideEffects = inits.reduce((sum, candidate) => sum + candidate.connects + candidate.stuck, 0);
    checks.push({ figure: `init ${fn.name}: sockets opened + runs not exiting`, value: sideEffects, unit: '', target: 0, pass: sideEffects === 0 });
  }
  return checks;
}

/** Sections 1 and 2 of the report: each function's bundle, init and memory beside the floor's. */
export function bundleReport(bundles: readonly BundleResult[], initTime: readonly InitTimeResult[], functions: readonly LambdaFunction[]): string[] {
  const floor = bundles.find((bundle) => bundle.group === sdkFloor.name);
  const kb = (bytes: number) => (bytes / 1000).toFixed(1);
  const lines = [
    `1. Lambda bundles as the stack builds them (infra/bundling.ts: minified ESM split at each dynamic import; source maps not counted). ` +
      `Loaded at init: index.mjs and the chunks it imports. Target: the SDK floor's + ${kb(bundleTargets.aboveFloorBytes)} KB, ` +
      `${kb(bundleTargets.modelFunctionBytes)} KB for a function that calls models`,
    table(
      ['function', 'models', 'init KB', 'init gzip KB', 'all files KB', 'target KB', 'largest packages at init'],
      bundles.map((bundle) => {
        const fn = functions.find((candidate) => candidate.name === bundle.group);
        const target = fn === undefined ? '(floor)' : kb(fn.runsModels ? bundleTargets.modelFunctionBytes : (floor?.bytes ?? 0) + bundleTargets.aboveFloorBytes);
        const packages = bundle.topPackages.slice(0, 3).map((pkg) => `${pkg.name} ${kb(pkg.bytes)}`).join(', ');
        return [bundle.group, fn?.runsModels ? 'yes' : '', kb(bundle.bytes), kb(bundle.gzipBytes), kb(bundle.totalBytes), target, packages];
      }),
    ),
    '',
    `2. Module init: median of ${initTime[0]?.runs ?? 0} fresh processes importing each bundle (TABLE_NAME set); peak RSS after the import (Node included). ` +
      `Target: main-thread CPU ≤ the SDK floor's + ${bundleTargets.initAboveFloorMs} ms (${checkedInitVariant}); memory ≥ ${bundleTargets.memoryHeadroom} × peak RSS`,
    table(
      ['function', 'variant', 'import ms', 'min', 'main-thread CPU ms', 'all threads CPU ms', 'peak RSS MiB', 'memory MB', 'sockets'],
      initTime.map((init) => [
        init.group,
        init.variant,
        init.importMs.median.toFixed(1),
        init.importMs.min.toFixed(1),
        init.importThreadCpuMs.median.toFixed(1),
        init.importCpuMs.median.toFixed(1),
        init.peakRssMb.max.toFixed(0),
        String(functions.find((candidate) => candidate.name === init.group)?.memoryMb ?? '-'),
        String(init.connects),
      ]),
    ),
  ];
  return lines;
}

const round = (value: number) => Math.round(value * 100) / 100;
