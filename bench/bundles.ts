import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Metafile } from 'esbuild';
import { bundleEntryFile, bundleFunction } from '../infra/bundling.ts';

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
function loadedAtInit(metafile: Metafile, outfile: string): string[] {
  const entry = Object.keys(metafile.outputs).find((path) => resolve(repoRoot, path) === outfile);
  if (!entry) throw new Error(`esbuild's metafile does not list ${outfile}`);
  const loaded = new Set([entry]);
  for (const file of loaded) {
    for (const { path, kind } of metafile.outputs[file]?.imports ?? []) if (kind === 'import-statement' && path in metafile.outputs) loaded.add(path);
  }
  return [...loaded];
}

function outputInputs(metafile: Metafile, file: string): InputShare[] {
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
