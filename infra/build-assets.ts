import { copyFileSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';

/**
 * Builds what the edge function serves beside its code (functions/edge/assets/, deployed as `assets/`): Scalar's
 * standalone reference bundle, the bootstrap that points it at /openapi.json, the playground, and CHANGELOG.md.
 * Run by `npm install` and by the test setup; nothing is fetched at run time, so the pages work offline.
 */
const root = resolve(import.meta.dirname, '..');
const pages = join(root, 'functions/edge/pages');
export const assetsDirectory = join(root, 'functions/edge/assets');

export async function buildAssets(): Promise<void> {
  mkdirSync(assetsDirectory, { recursive: true });
  copyFileSync(join(root, 'node_modules/@scalar/api-reference/dist/browser/standalone.js'), join(assetsDirectory, 'scalar.js'));
  copyFileSync(join(root, 'CHANGELOG.md'), join(assetsDirectory, 'CHANGELOG.md'));
  copyFileSync(join(pages, 'playground.css'), join(assetsDirectory, 'playground.css'));
  await build({
    entryPoints: { docs: join(pages, 'docs.ts'), playground: join(pages, 'playground.ts'), 'microphone-worklet': join(pages, 'microphone-worklet.ts') },
    outdir: assetsDirectory,
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    logLevel: 'warning',
  });
}

if (import.meta.main) await buildAssets();
