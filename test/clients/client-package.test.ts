/**
 * The typed client as a user installs it: `npm pack` of clients/typescript (its prepack builds dist/), the tarball
 * installed offline into a directory outside the repository, its example run by the system's Node (not the
 * project's Node 24), its types checked by a consumer without Node's types, and its ESM bundled for a browser.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiVersion } from '../../shared/platform/http/openapi.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { repoRoot } from '../support/local-process.ts';

const run = promisify(execFile);
const clientDir = join(repoRoot, 'clients/typescript');
type Manifest = { name: string; version: string; engines: { node: string }; dependencies: Record<string, string>; devDependencies: Record<string, string> };
const manifestOf = (dir: string): Manifest => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
const client = manifestOf(clientDir);

/** The client's dependencies and theirs, as the repository has them installed (where its own tests run them). */
function dependencyDirs(names: string[], found = new Set<string>()): string[] {
  for (const name of names) {
    if (found.has(name)) continue;
    found.add(name);
    dependencyDirs(Object.keys(manifestOf(join(repoRoot, 'node_modules', name)).dependencies ?? {}), found);
  }
  return [...found].map((name) => join(repoRoot, 'node_modules', name));
}

/** The first `node` on PATH outside node_modules: the machine's own, not the project's devDependency. */
function systemNode(): string {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir.includes('node_modules')) continue;
    if (existsSync(join(dir, 'node'))) return join(dir, 'node');
  }
  throw new Error('No node on PATH outside node_modules: the example needs the system Node (20 or later).');
}

let api: TestApi;
let work: string;
let packed: string[];

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'client-package-'));
  const tarballs = join(work, 'tarballs');
  const project = join(work, 'project');
  const cache = ['--cache', join(work, 'npm-cache')];
  mkdirSync(tarballs);
  mkdirSync(project);
  api = await startApi({ EVENT_STREAM_POLL_MS: '50' }, { streamPoller: true });
  // The client's prepack builds dist/; its dependencies are packed as installed, without their scripts.
  const [{ stdout }] = await Promise.all([
    run('npm', ['pack', clientDir, '--pack-destination', tarballs, '--json', ...cache], { cwd: repoRoot }),
    run('npm', ['pack', ...dependencyDirs(Object.keys(client.dependencies)), '--pack-destination', tarballs, '--ignore-scripts', ...cache], { cwd: repoRoot }),
  ]);
  packed = (JSON.parse(stdout.slice(stdout.indexOf('['))) as { files: { path: string }[] }[])[0]!.files.map((file) => file.path).sort();
  // Offline, as on a machine without the registry: every range the client declares must be met by a packed tarball.
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'quickstart', private: true, type: 'module' }));
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', ...cache, ...readdirSync(tarballs).map((file) => join(tarballs, file))], { cwd: project });
}, 240_000);
afterAll(async () => {
  await api?.close();
  rmSync(work, { recursive: true, force: true });
});

describe('the typed client as an npm package (@agent-platform/client)', () => {
  it('packs the built JavaScript and its types, not the TypeScript sources', () => {
    expect(packed).toEqual(['dist/index.d.ts', 'dist/index.js', 'dist/schema.d.ts', 'dist/schema.js', 'package.json']);
  });

  it('is versioned as the API it describes, and declares the dependency ranges the repository tests it with', () => {
    const root = manifestOf(repoRoot);
    expect(client.version, "the version of /openapi.json's info").toBe(apiVersion);
    for (const [name, range] of Object.entries(client.dependencies)) expect({ name, range }).toEqual({ name, range: root.devDependencies[name] });
  });

  it('runs its quickstart example, in plain JavaScript, on the system Node', { timeout: 60_000 }, async () => {
    const node = systemNode();
    const { stdout: version } = await run(node, ['--version']);
    expect(Number(/^v(\d+)/.exec(version)![1]), `${node} ${version.trim()}`).toBeGreaterThanOrEqual(Number(/\d+/.exec(client.engines.node)![0]));
    const { key } = await api.newOrg();
    const example = join(work, 'project', 'quickstart.mjs');
    writeFileSync(example, readFileSync(join(clientDir, 'examples/quickstart.mjs')));
    const { stdout } = await run(node, [example], {
      cwd: join(work, 'project'),
      env: { PATH: process.env.PATH, AGENT_PLATFORM_API_URL: api.baseUrl, AGENT_PLATFORM_API_KEY: key },
      timeout: 50_000,
    });
    const [reply, ...events] = stdout.trimEnd().split('\n');
    expect(reply).toMatch(/^You said: "Hello!"\./);
    // In the log's order, close to time order: the two messages of one turn may come either way round.
    expect(events.sort()).toEqual(['message.added: ASSISTANT', 'message.added: USER']);
  });

  it('gives a TypeScript consumer its types without Node.js types (a browser project)', { timeout: 60_000 }, async () => {
    const project = join(work, 'project');
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { target: 'es2022', lib: ['es2022', 'dom'], types: [], module: 'nodenext', strict: true, noEmit: true }, files: ['consumer.ts'] }),
    );
    writeFileSync(
      join(project, 'consumer.ts'),
      [
        "import { ApiError, createApiClient, type Agent } from '@agent-platform/client';",
        "const api = createApiClient({ baseUrl: 'http://127.0.0.1:3000', apiKey: 'apk_x' });",
        "const { data, error } = await api.POST('/v2/chat/agents', { body: { fullName: 'A', description: 'B', role: 'C' } });",
        'if (error) throw new ApiError(error);',
        'const agent: Agent = data;',
        'export const name: string = agent.fullName;',
        '// @ts-expect-error a path the API does not have',
        "await api.GET('/v1/chat/nowhere');",
        '',
      ].join('\n'),
    );
    await expect(run(join(repoRoot, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.json'], { cwd: project })).resolves.toBeDefined();
  });

  it('bundles for the browser: nothing it imports needs Node.js', async () => {
    const bundled = await build({
      stdin: { contents: "export * from '@agent-platform/client';", resolveDir: join(work, 'project') },
      bundle: true,
      platform: 'browser',
      format: 'esm',
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    const packages = new Set(Object.keys(bundled.metafile.inputs).flatMap((input) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input)?.[1] ?? []));
    expect([...packages].sort()).toEqual([client.name, ...Object.keys(client.dependencies)].sort());
  });
});
