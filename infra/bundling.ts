import { readFile } from 'node:fs/promises';
import { spawnSync } from 'node:child_process';
import { build, type BuildOptions, type Metafile, type Plugin } from 'esbuild';

/** The esbuild options of every Lambda bundle (CDK stack and `npm run bench`): minified ESM, AWS SDK v3 included, linked source maps. */
export const lambdaBundling = {
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node24',
  minify: true,
  // Linked, not external: the functions run with NODE_OPTIONS=--enable-source-maps, which needs the sourceMappingURL comment.
  sourcemap: 'linked',
  mainFields: ['module', 'main'],
  // CommonJS dependencies bundled into ESM still call `require`.
  banner: { js: "import { createRequire } from 'module'; const require = createRequire(import.meta.url);" },
  // Nothing external: Lambda's own AWS SDK version is not pinned, so we bundle the one we tested.
  external: [],
} satisfies BuildOptions;

/**
 * The AI SDK's providers import zod as `import { z } from "zod/v4"`. From a chunk of its own (a provider loaded on
 * first use), that binding makes esbuild build zod's whole namespace, every locale included (about 350 KB), into the
 * chunk every function loads at init. The same code as a namespace import (`import * as z`) tree-shakes.
 */
const zodNamespaceImports: Plugin = {
  name: 'zod-namespace-imports',
  setup(builder) {
    builder.onLoad({ filter: /[\\/]node_modules[\\/]@ai-sdk[\\/][^\\/]+[\\/]dist[\\/].*\.js$/ }, async ({ path }) => ({
      contents: (await readFile(path, 'utf8')).replace(/import \{ z(?: as (\w+))? \} from "zod\/v4";/g, (_, alias?: string) => `import * as ${alias ?? 'z'} from "zod/v4";`),
      loader: 'js',
    }));
  },
};

/** The handler file inside a function's bundle directory (the stack's handler is `index.handler`). */
export const bundleEntryFile = 'index.mjs';

/**
 * A function's bundle as deployed: `index.mjs` with what every invocation needs, and one file per code path behind
 * a dynamic `import()` (a model provider, PDF parsing, Stripe), loaded only when that path first runs (decision 420).
 */
const splitBundle = (entry: string, outdir: string, absWorkingDir: string) =>
  ({
    ...lambdaBundling,
    entryPoints: [{ in: entry, out: 'index' }],
    outdir,
    outExtension: { '.js': '.mjs' },
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    absWorkingDir,
    metafile: true,
    logLevel: 'warning',
    plugins: [zodNamespaceImports],
  }) satisfies BuildOptions;

/** Bundles a handler into `outdir` as the stack deploys it (`npm run bench`, and this file run as a script). */
export async function bundleFunction(entry: string, outdir: string, absWorkingDir: string): Promise<Metafile> {
  return (await build(splitBundle(entry, outdir, absWorkingDir))).metafile;
}

/**
 * The same build for the synth, whose local bundling is synchronous: esbuild's synchronous API takes no plugins, so
 * it runs this file in a child process.
 */
export function bundleFunctionSync(entry: string, outdir: string, absWorkingDir: string): void {
  const child = spawnSync(process.execPath, [import.meta.filename, entry, outdir, absWorkingDir], { stdio: 'inherit' });
  if (child.status !== 0) throw new Error(`bundling ${entry} failed (exit ${child.status ?? child.signal})`);
}

if (import.meta.main) {
  const [entry, outdir, absWorkingDir] = process.argv.slice(2) as [string, string, string];
  await bundleFunction(entry, outdir, absWorkingDir);
}
