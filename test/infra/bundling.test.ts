/**
 * The functions' bundles as the stack builds them (infra/bundling.ts): what a cold start loads, and that it loads.
 * A package behind a dynamic `import()` must sit in a chunk of its own, outside what `index.mjs` imports statically.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lambdaFunctions } from '../../functions/lambda-functions.ts';
import { bundleEntryFile, bundleFunction } from '../../infra/bundling.ts';
import { loadedAtInit, outputInputs } from '../../bench/bundles.ts';
import { measureInitTimes } from '../../bench/init-time.ts';

const repoRoot = resolve(import.meta.dirname, '../..');
const outDir = mkdtempSync(join(tmpdir(), 'bundling-test-'));
afterAll(() => rmSync(outDir, { recursive: true, force: true }));

interface Built {
  file: string;
  /** Bytes in the files a cold start loads, by npm package. */
  atInit: Map<string, number>;
  /** Bytes in every file, by npm package. */
  anywhere: Map<string, number>;
}

const built = new Map<string, Built>();

async function build(name: string): Promise<Built> {
  const fn = lambdaFunctions.find((candidate) => candidate.name === name)!;
  const directory = join(outDir, name);
  const metafile = await bundleFunction(join(repoRoot, fn.entry), directory, repoRoot);
  const byPackage = (files: string[]) => {
    const totals = new Map<string, number>();
    for (const input of files.flatMap((file) => outputInputs(metafile, file))) {
      const pkg = /.*node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input.name)?.[1] ?? '(app)';
      totals.set(pkg, (totals.get(pkg) ?? 0) + input.bytes);
    }
    return totals;
  };
  const file = join(directory, bundleEntryFile);
  const atInit = byPackage(loadedAtInit(metafile, file));
  const anywhere = byPackage(Object.keys(metafile.outputs).filter((output) => !output.endsWith('.map')));
  return { file, atInit, anywhere };
}

beforeAll(async () => {
  for (const name of ['chat-messages', 'knowledge-ingestion', 'whatsapp-numbers']) built.set(name, await build(name));
});

describe('a function bundle', () => {
  it('loads the model providers, ajv, jose and the X-Ray SDK only on first use: chat-messages ships them, its cold start loads none', () => {
    const { atInit, anywhere } = built.get('chat-messages')!;
    for (const pkg of ['@ai-sdk/openai-compatible', '@ai-sdk/amazon-bedrock', '@ai-sdk/anthropic', 'ajv', 'aws-xray-sdk-core', 'jose']) {
      expect(anywhere.get(pkg), pkg).toBeGreaterThan(0);
      expect(atInit.get(pkg), pkg).toBeUndefined();
    }
  });

  it('loads PDF.js only for a PDF and the HTML reader only for HTML: the ingestion function\'s cold start does without them', () => {
    const { atInit, anywhere } = built.get('knowledge-ingestion')!;
    for (const pkg of ['unpdf', 'linkedom', '@mozilla/readability']) {
      expect(anywhere.get(pkg), pkg).toBeGreaterThan(0);
      expect(atInit.get(pkg), pkg).toBeUndefined();
    }
  });

  it('keeps zod\'s locales out of the init chunk, though the providers\' chunks use zod too', () => {
    for (const name of ['chat-messages', 'whatsapp-numbers']) {
      // zod whole, every locale, is about 450 KB; the schemas the code uses about 110 KB.
      expect(built.get(name)!.atInit.get('zod'), name).toBeLessThan(150_000);
    }
  });

  it('imports in a fresh process, with no socket opened and nothing left running', async () => {
    const bundles = [...built].map(([group, { file }]) => ({ group, file }));
    // A process still there after a minute has something keeping it alive; a busy machine takes seconds at most.
    const results = await measureInitTimes(bundles, [{ name: 'source maps', execArgv: ['--enable-source-maps'] }], 1, 60_000);
    for (const result of results) expect({ group: result.group, connects: result.connects, stuck: result.stuck }).toEqual({ group: result.group, connects: 0, stuck: 0 });
  });
});
