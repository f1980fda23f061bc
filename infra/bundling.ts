import type { BuildOptions } from 'esbuild';

/** Every function's memory (and so its CPU share); `npm run bench` prices measured durations with it (docs/deploy.md#cost). */
export const functionMemoryMb = 1024;

/** The esbuild options of every Lambda bundle (CDK stack and `npm run bench`): one minified ESM file, AWS SDK v3 included, linked source map. */
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
