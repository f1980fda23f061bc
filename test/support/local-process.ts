/**
 * The local runtime as a user runs it, in child processes: `node infra/local/main.ts` (or `npm start`) on a
 * temporary DATA_DIR with its own persisted DynamoDB Local.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { providerAddressVariables } from '../../infra/local/environment.ts';

export const repoRoot = resolve(import.meta.dirname, '../..');
const mainScript = join('infra', 'local', 'main.ts');

const started = new Set<ChildProcess>();
const tempDirs: string[] = [];

/**
 * This process's environment without anything that would point a child at another database, identity or provider
 * (a provider address this process set would win over the child's own simulators).
 */
export function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) {
    if (/^(DYNAMODB_ENDPOINT|TABLE_NAME|DATA_DIR|PORT|HOST|INIT_ORG_ID|INIT_API_KEY|AGENT_PLATFORM_API_KEY|API_KEY|JWT_.*|MAX_BODY_BYTES|SECRETS_.*|KMS_ENDPOINT)$/.test(name)) delete env[name];
  }
  for (const name of providerAddressVariables) delete env[name];
  return { ...env, POWERTOOLS_LOG_LEVEL: 'WARN', ...extra };
}

/**
 * Runs a command (node by default) in its own process group, so cleanup can also reach the DynamoDB Local it starts;
 * from the repository unless `options.cwd` says otherwise, with stdin closed unless `options.stdin` is `pipe`.
 */
export function spawnInGroup(
  args: string[],
  env: NodeJS.ProcessEnv,
  command: string = process.execPath,
  options: { cwd?: string; stdin?: 'ignore' | 'pipe' } = {},
): ChildProcess {
  const child = spawn(command, args, { cwd: options.cwd ?? repoRoot, env, stdio: [options.stdin ?? 'ignore', 'pipe', 'pipe'], detached: true });
  started.add(child);
  child.once('exit', () => started.delete(child));
  return child;
}

export function isRunning(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** Whether any process (the child or something it started) is left in the child's process group. */
export function groupAlive(child: ChildProcess): boolean {
  try {
    process.kill(-(child.pid as number), 0);
    return true;
  } catch {
    return false;
  }
}

export function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-(child.pid as number), signal);
  } catch {
    // Already gone.
  }
}

export function waitForExit(child: ChildProcess, timeoutMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null } | 'timeout'> {
  if (!isRunning(child)) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolveExit) => {
    const timer = setTimeout(() => resolveExit('timeout'), timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolveExit({ code, signal });
    });
  });
}

export async function waitForGroupToEnd(child: ChildProcess, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (groupAlive(child)) {
    if (Date.now() > deadline) return false;
    await new Promise((resolveWait) => setTimeout(resolveWait, 100));
  }
  return true;
}

export interface RunningServer {
  child: ChildProcess;
  baseUrl: string;
  output(): { stdout: string; stderr: string };
}

/** Starts the local runtime as `node infra/local/main.ts`, or through `npm start` as a user types it; resolves once it serves. */
export async function startServer(env: NodeJS.ProcessEnv, port: number, options: { viaNpm?: boolean } = {}): Promise<RunningServer> {
  const child = options.viaNpm ? spawnInGroup(['start'], env, 'npm') : spawnInGroup([mainScript], env);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk) => (stdout += chunk));
  child.stderr?.on('data', (chunk) => (stderr += chunk));
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (!isRunning(child)) throw new Error(`server exited (${child.exitCode ?? child.signalCode}) before serving: ${stderr}${stdout}`);
    if (Date.now() > deadline) throw new Error(`server did not answer /health within 60 s: ${stderr}${stdout}`);
    try {
      // A loaded machine may take seconds to answer: a slow answer still says it serves.
      const health = await fetch(`${baseUrl}/health`, { signal: AbortSignal.timeout(5_000) });
      // The listening message is written just before /health can answer; wait until it has arrived too.
      if (health.status === 200 && stdout.includes('Agent platform API on')) break;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolveWait) => setTimeout(resolveWait, 150));
  }
  return { child, baseUrl, output: () => ({ stdout, stderr }) };
}

/** SIGTERM to the server process alone, as a container runtime sends it. */
export async function stopServer(server: RunningServer): Promise<{ code: number | null; signal: NodeJS.Signals | null } | 'timeout'> {
  server.child.kill('SIGTERM');
  return waitForExit(server.child, 10_000);
}

/**
 * A request to the server, as JSON. A 429 is sent again after its Retry-After, as `npm run smoke` does: the
 * organization's plan limits the requests a second, and a test's burst of reads can reach it.
 */
export async function call(server: RunningServer, method: string, path: string, options: { key?: string; body?: unknown } = {}) {
  const headers: Record<string, string> = {};
  if (options.key) headers['x-api-key'] = options.key;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  for (let attempt = 1; ; attempt += 1) {
    const response = await fetch(server.baseUrl + path, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      // A backstop: a busy machine may take long to answer, a hung server never does.
      signal: AbortSignal.timeout(60_000),
    });
    const text = await response.text();
    if (response.status === 429 && attempt < 5) {
      await new Promise((resolve) => setTimeout(resolve, Number(response.headers.get('retry-after') ?? 1) * 1000));
      continue;
    }
    return { status: response.status, body: text ? JSON.parse(text) : undefined, text };
  }
}

export function tempDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'agent-platform-local-'));
  tempDirs.push(dir);
  return dir;
}

/** Ends every child still running (with what it started) and removes the temporary data directories. */
export async function stopEverything(): Promise<void> {
  const leftovers = [...started];
  for (const child of leftovers) killGroup(child, 'SIGTERM');
  await Promise.all(
    leftovers.map(async (child) => {
      if (!(await waitForGroupToEnd(child, 5_000))) killGroup(child, 'SIGKILL');
    }),
  );
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
}


/** The DynamoDB Local processes (java) running on a data directory, found by their command line. */
export function dynamoDbLocalPids(dataDir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let commandLine = '';
    try {
      commandLine = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    const args = commandLine.split('\0');
    if (args[0]?.endsWith('java') && args.includes('LoopbackDynamoDbLocal') && args.some((arg) => arg.startsWith(dataDir))) {
      pids.push(Number(entry));
    }
  }
  return pids;
}

/** Waits until no DynamoDB Local runs on the data directory; false if one still does after `timeoutMs`. */
export async function waitForDynamoDbLocalToEnd(dataDir: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (dynamoDbLocalPids(dataDir).length > 0) {
    if (Date.now() > deadline) return false;
    await new Promise((resolveWait) => setTimeout(resolveWait, 100));
  }
  return true;
}

/**
 * The HTTP API alone in a child process (test/support/serve-api.ts) against the test table through `databaseUrl`
 * (a proxy in front of DynamoDB Local, for tests that kill or slow the process's database); resolves once it listens.
 */
export async function startApiProcess(databaseUrl: string, tableName: string, secretsKeyFile: string): Promise<{ child: ChildProcess; baseUrl: string }> {
  const child = spawnInGroup(
    ['test/support/serve-api.ts'],
    childEnv({
      DYNAMODB_ENDPOINT: databaseUrl,
      TABLE_NAME: tableName,
      SECRETS_KEY_FILE: secretsKeyFile,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
    }),
  );
  let stdout = '';
  child.stdout?.on('data', (chunk) => (stdout += chunk));
  while (!/listening (\d+)/.test(stdout)) {
    if (!isRunning(child)) throw new Error(`the API process exited before listening: ${stdout}`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 50));
  }
  return { child, baseUrl: `http://127.0.0.1:${/listening (\d+)/.exec(stdout)?.[1]}` };
}
