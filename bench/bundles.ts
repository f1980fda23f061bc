import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { build, type Metafile } from 'esbuild';
import { lambdaBundling } from '../infra/bundling.ts';

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
  /** The built `index.mjs` (source map excluded from every figure). */
  file: string;
  bytes: number;
  gzipBytes: number;
  buildMs: number;
  /** Largest contributors by bytes in the minified output. */
  topInputs: InputShare[];
  topPackages: InputShare[];
}

/** Builds every entry with exactly the stack's esbuild options, one `<outDir>/<name>/index.mjs` each (like CDK). */
export async function buildBundles(groups: readonly LambdaEntry[], outDir: string): Promise<BundleResult[]> {
  const results: BundleResult[] = [];
  for (const group of groups) {
    const outfile = join(outDir, group.name.replace(/[^\w.-]+/g, '-'), 'index.mjs');
    const started = performance.now();
    const { metafile } = await build({
      ...lambdaBundling,
      entryPoints: [join(repoRoot, group.entry)],
      outfile,
      absWorkingDir: repoRoot,
      metafile: true,
      logLevel: 'warning',
    });
    const buildMs = performance.now() - started;
    const code = readFileSync(outfile);
    const inputs = outputInputs(metafile, outfile);
    results.push({
      group: group.name,
      entry: group.entry,
      file: outfile,
      bytes: code.length,
      gzipBytes: gzipSync(code, { level: 9 }).length,
      buildMs,
      topInputs: top(inputs, 10),
      topPackages: top(byPackage(inputs), 10),
    });
  }
  return results;
}

function outputInputs(metafile: Metafile, outfile: string): InputShare[] {
  const output = Object.entries(metafile.outputs).find(([path]) => resolve(repoRoot, path) === outfile)?.[1];
  if (!output) throw new Error(`esbuild's metafile does not list ${outfile}`);
  return Object.entries(output.inputs).map(([name, { bytesInOutput }]) => ({ name, bytes: bytesInOutput }));
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
