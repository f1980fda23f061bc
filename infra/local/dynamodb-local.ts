import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from './free-port.ts';

/** AWS's DynamoDB Local, as shipped inside this npm package; pinned so every machine runs the same emulator. */
const simulatorPackage = 'amplify-dynamodb-simulator@2.9.30';
const repoRoot = resolve(import.meta.dirname, '../..');
export const emulatorDir = join(repoRoot, '.cache', 'dynamodb-local', simulatorPackage.replace('@', '-'));
/** Runs the jar's server on 127.0.0.1 only; compiled once into the cache (`compiledLauncher`). */
const loopbackLauncher = join(repoRoot, 'infra', 'local', 'LoopbackDynamoDbLocal.java');
/**
 * Measured on this emulator (decision 412): the client compiler alone and the serial collector halve DynamoDB
 * Local's start-up CPU and its CPU per request over thousands of requests, and take its idle RSS from about 300 MiB
 * to 165; a JVM with one client's short requests gains nothing from C2 or a parallel collector.
 */
const jvmOptions = ['-Xms64m', '-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC'];

/**
 * Fetches the DynamoDB Local jar with `npm pack` (just the package tarball, not its large dependency tree) into a
 * git-ignored cache; later starts need no network.
 */
export function ensureDynamoDbLocal(): string {
  const jar = join(emulatorDir, 'DynamoDBLocal.jar');
  if (existsSync(jar)) return jar;
  const work = mkdtempSync(join(tmpdir(), 'dynamodb-local-'));
  try {
    const pack = spawnSync('npm', ['pack', simulatorPackage, '--silent', '--pack-destination', work], { encoding: 'utf8' });
    if (pack.status !== 0) throw new Error(`npm pack ${simulatorPackage} failed: ${pack.stderr || pack.error?.message}`);
    const tarball = join(work, pack.stdout.trim().split('\n').pop() as string);
    const untar = spawnSync('tar', ['-xzf', tarball, '-C', work, 'package/emulator'], { encoding: 'utf8' });
    if (untar.status !== 0) throw new Error(`could not unpack ${tarball}: ${untar.stderr}`);
    mkdirSync(join(emulatorDir, '..'), { recursive: true });
    renameSync(join(work, 'package', 'emulator'), emulatorDir);
    return jar;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * The launcher's class, compiled on first use into the cache (by the `jdk.compiler` module, which the JRE packages
 * that ran it from source carry: no JDK needed), in a directory named by the source's hash so that an edited
 * launcher is compiled again. Run from source, `java` compiled it at every start: a second of CPU and 30 MiB more.
 */
function compiledLauncher(jar: string): string {
  const source = readFileSync(loopbackLauncher);
  const classDir = join(emulatorDir, `launcher-${createHash('sha256').update(source).digest('hex').slice(0, 16)}`);
  if (existsSync(join(classDir, 'LoopbackDynamoDbLocal.class'))) return classDir;
  // Compiled beside, then renamed: a start running at the same time never sees half a directory.
  const work = mkdtempSync(join(emulatorDir, 'launcher-compiling-'));
  try {
    const compile = spawnSync('java', ['-m', 'jdk.compiler/com.sun.tools.javac.Main', '-cp', classPath(jar), '-d', work, loopbackLauncher], { encoding: 'utf8' });
    if (compile.status !== 0) throw new Error(`Cannot compile ${loopbackLauncher}: ${compile.stderr || compile.error?.message}`);
    renameSync(work, classDir);
  } catch (error) {
    rmSync(work, { recursive: true, force: true });
    if (existsSync(join(classDir, 'LoopbackDynamoDbLocal.class'))) return classDir;
    throw error;
  }
  return classDir;
}

const classPath = (jar: string) => `${jar}:${join(emulatorDir, 'DynamoDBLocal_lib', '*')}`;

export function assertJavaAvailable(): void {
  const probe = spawnSync('java', ['-version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new Error('DynamoDB Local needs Java 11 or newer on PATH (e.g. apt-get install openjdk-17-jre-headless).');
  }
}

export interface DynamoDbLocal {
  endpoint: string;
  stop(): Promise<void>;
}

/**
 * Runs java beneath a shell that holds the read end of a pipe whose write end only this process has: when this
 * process goes, however it goes (a crash, `kill -9`), the pipe closes and the shell ends DynamoDB Local, so it is
 * never left running on the data files for a second instance to share. A background list reads /dev/null unless
 * told otherwise, hence the pipe on descriptor 3.
 */
const watchdogScript = `exec 3<&0 </dev/null
"$@" &
java=$!
{ while read -r _ <&3; do :; done; kill -TERM "$java" 2>/dev/null; } &
wait "$java"`;

/** Starts DynamoDB Local on a free port of 127.0.0.1 (and no other address): on disk under `dataDir`, or in memory without one. */
export async function startDynamoDbLocal(options: { dataDir?: string } = {}): Promise<DynamoDbLocal> {
  assertJavaAvailable();
  const jar = ensureDynamoDbLocal();
  const launcherClasses = compiledLauncher(jar);
  const port = await freePort();
  const storage = options.dataDir ? ['-dbPath', options.dataDir] : ['-inMemory'];
  if (options.dataDir) mkdirSync(options.dataDir, { recursive: true });
  const javaArgs = [
    ...jvmOptions,
    `-Djava.library.path=${join(emulatorDir, 'DynamoDBLocal_lib')}`,
    '-cp',
    `${classPath(jar)}:${launcherClasses}`,
    // Not `-jar`: the jar listens on every interface; this launcher binds it to 127.0.0.1 (the file says how).
    'LoopbackDynamoDbLocal',
    '-port',
    String(port),
    '-sharedDb',
    '-disableTelemetry',
    ...storage,
  ];
  const child = spawn('sh', ['-c', watchdogScript, 'dynamodb-local', 'java', ...javaArgs], {
    // Its working directory receives a metadata file; keep that inside the git-ignored cache.
    cwd: emulatorDir,
    stdio: ['pipe', 'pipe', 'pipe'],
    // Its own process group: a Ctrl-C meant for `npm start` reaches the runtime, which then stops it in order.
    detached: true,
  });
  const endpoint = `http://127.0.0.1:${port}`;
  await waitUntilServing(child, endpoint);
  return { endpoint, stop: () => stopChild(child) };
}

async function waitUntilServing(child: ChildProcess, endpoint: string): Promise<void> {
  let output = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`DynamoDB Local exited with ${child.exitCode}: ${output.trim()}`);
    try {
      // Any HTTP answer (DynamoDB Local says 400 to a bare GET) means it is accepting requests.
      await fetch(endpoint, { signal: AbortSignal.timeout(500) });
      child.stdout?.removeAllListeners('data');
      child.stderr?.removeAllListeners('data');
      child.stdout?.resume();
      child.stderr?.resume();
      return;
    } catch {
      await new Promise((resolveWait) => setTimeout(resolveWait, 100));
    }
  }
  killGroup(child, 'SIGKILL');
  throw new Error(`DynamoDB Local did not start within 30 s: ${output.trim()}`);
}

/** Closing the watchdog's pipe ends DynamoDB Local with SIGTERM, which closes its SQLite file cleanly; SIGKILL only if it hangs. */
function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolveStop) => {
    const force = setTimeout(() => killGroup(child, 'SIGKILL'), 5_000);
    child.once('exit', () => {
      clearTimeout(force);
      resolveStop();
    });
    child.stdin?.end();
  });
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-(child.pid as number), signal);
  } catch {
    // Already gone.
  }
}
