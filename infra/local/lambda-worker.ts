/**
 * A Lambda execution environment for the local runtime: a worker thread that loads one handler module once and
 * runs invocations in it. Being a thread, it can really die — killed by `crash()`, by the function's timeout, or by
 * an exception nothing caught — and what it was running fails; the next invocation starts a new one, as Lambda
 * starts a new environment. This module is both sides: the parent's handle and, in the worker, the runtime loop.
 */
import { randomUUID } from 'node:crypto';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isMainThread, parentPort, Worker, workerData, type MessagePort } from 'node:worker_threads';
import type { Context } from 'aws-lambda';
import type { SettingName } from '../../shared/platform/config.ts';
import { accountInvocation } from '../../shared/platform/cost-accounting.ts';
import { logger } from '../../shared/platform/logger.ts';
import { functionEnvironment } from './function-environment.ts';
import { localLambdaContext } from './lambda-context.ts';

const repoRoot = resolve(import.meta.dirname, '../..');
const environmentRole = 'local-lambda-environment';

interface EnvironmentData {
  role: typeof environmentRole;
  moduleUrl: string;
  /** The function's name in the stack's declarations (functions/consumers.ts). */
  name: string;
  functionName: string;
}

interface Invocation {
  id: string;
  event: unknown;
  awsRequestId: string;
  deadline: number;
}

interface SerializedError {
  name: string;
  message: string;
  stack?: string | undefined;
}

type FromEnvironment =
  | { kind: 'ready' }
  | { kind: 'load-failed'; error: string }
  | { kind: 'result'; id: string; result: unknown }
  | { kind: 'failed'; id: string; error: SerializedError };

/** The handler threw (or its promise rejected); the environment lives on. */
export class HandlerError extends Error {
  override name = 'HandlerError';

  constructor(error: SerializedError) {
    super(`${error.name}: ${error.message}`);
    if (error.stack) this.stack = error.stack;
  }
}

/** The environment could not load the handler, or ended mid-invocation; it has been logged already. */
export class EnvironmentError extends Error {
  override name = 'EnvironmentError';
}

export interface LocalFunction {
  /** Runs one invocation, in an idle environment or in a new one. */
  invoke(event: unknown): Promise<unknown>;
  /** Starts an environment ahead of the first invocation, so that a module that cannot load shows at once. */
  warm(): Promise<void>;
  /** Kills the environments mid-invocation, as if their host died: what they run fails. */
  crash(): Promise<void>;
  /** Kills the environments for good, quietly; later invocations fail. */
  stop(): Promise<void>;
}

interface Environment {
  ready: Promise<void>;
  run(event: unknown): Promise<unknown>;
  end(reason: string, level: 'warn' | 'error' | 'silent'): Promise<void>;
}

/**
 * As Lambda does, each invocation has an execution environment to itself: an idle one is reused, else another is
 * started. So invocations under way side by side (several pollers of one queue) do not share a thread, and one
 * that is slow, or that times out and takes its environment down, holds back or fails no other. With
 * `idleEndMs`, an environment that has had no invocation for that long ends, as Lambda ends idle environments, so
 * that what a burst started does not hold its memory for good; the next invocation starts a new one.
 *
 * @example
 * const delivery = createLocalFunction({ name: 'webhook-delivery', entry: 'functions/webhook-delivery/handler.ts', timeoutSeconds: 60 });
 * const response = await delivery.invoke(sqsEvent);
 */
export function createLocalFunction(definition: LocalFunctionDefinition, options: { idleEndMs?: number | undefined } = {}): LocalFunction {
  const moduleUrl = pathToFileURL(join(repoRoot, definition.entry)).href;
  const live = new Set<Environment>();
  const idle: Environment[] = [];
  const idleEnds = new Map<Environment, NodeJS.Timeout>();
  let stopped = false;

  /** Back among the idle ones (the last used is reused first, so the others stay idle and end). */
  function park(environment: Environment): void {
    idle.push(environment);
    if (options.idleEndMs === undefined) return;
    const timer = setTimeout(() => {
      idleEnds.delete(environment);
      const index = idle.indexOf(environment);
      if (index < 0) return;
      idle.splice(index, 1);
      void environment.end('ended after being idle', 'silent');
    }, options.idleEndMs);
    timer.unref();
    idleEnds.set(environment, timer);
  }

  function unpark(): Environment | undefined {
    const environment = idle.pop();
    if (environment) {
      clearTimeout(idleEnds.get(environment));
      idleEnds.delete(environment);
    }
    return environment;
  }

  function started(): Environment {
    if (stopped) throw new EnvironmentError(`${definition.name} is stopped`);
    const environment = startEnvironment(definition, moduleUrl, () => {
      live.delete(environment);
      const index = idle.indexOf(environment);
      if (index >= 0) idle.splice(index, 1);
    });
    live.add(environment);
    return environment;
  }

  return {
    async invoke(event) {
      const target = unpark() ?? started();
      try {
        await target.ready;
        return await target.run(event);
      } finally {
        if (live.has(target) && !stopped) park(target);
      }
    },
    warm: async () => {
      if (live.size > 0) return;
      const environment = started();
      park(environment);
      await environment.ready.catch(() => undefined);
    },
    crash: async () => {
      await Promise.all([...live].map((environment) => environment.end('terminated by crash()', 'warn')));
    },
    stop: async () => {
      stopped = true;
      for (const timer of idleEnds.values()) clearTimeout(timer);
      await Promise.all([...live].map((environment) => environment.end('stopped', 'silent')));
    },
  };
}

/** A function to run: its handler module and timeout, and the settings it reads (functions/settings.ts; all for test fixtures). */
export interface LocalFunctionDefinition {
  name: string;
  entry: string;
  timeoutSeconds: number;
  settings?: readonly SettingName[] | undefined;
}

function startEnvironment(
  definition: LocalFunctionDefinition,
  moduleUrl: string,
  onExit: () => void,
): Environment {
  const worker = new Worker(new URL(import.meta.url), {
    workerData: { role: environmentRole, moduleUrl, name: definition.name, functionName: `local-${definition.name}` } satisfies EnvironmentData,
    // Variables are fixed when the environment starts, as on Lambda, and hold the settings the function reads alone.
    env: functionEnvironment(definition.settings),
  });
  const pending = new Map<string, { resolve(result: unknown): void; reject(error: Error): void; timer: NodeJS.Timeout }>();
  let ending: { reason: string; level: 'warn' | 'error' | 'silent' } | undefined;
  let exited = false;
  const timeoutMs = definition.timeoutSeconds * 1000;

  async function end(reason: string, level: 'warn' | 'error' | 'silent'): Promise<void> {
    ending ??= { reason, level };
    await worker.terminate();
  }

  const ready = new Promise<void>((resolveReady, rejectReady) => {
    worker.on('message', (message: FromEnvironment) => {
      if (message.kind === 'ready') resolveReady();
      else if (message.kind === 'load-failed') void end(`cannot load ${definition.entry}: ${message.error}`, 'error');
      else {
        const invocation = pending.get(message.id);
        if (!invocation) return;
        pending.delete(message.id);
        clearTimeout(invocation.timer);
        if (message.kind === 'result') invocation.resolve(message.result);
        else invocation.reject(new HandlerError(message.error));
      }
    });
    worker.on('error', (error) => {
      ending ??= { reason: `died: ${error.stack ?? String(error)}`, level: 'error' };
    });
    worker.on('exit', (code) => {
      exited = true;
      onExit();
      const { reason, level } = ending ?? { reason: `exited with code ${code}`, level: 'error' as const };
      if (level !== 'silent') {
        logger[level](`${definition.name}: execution environment ${reason}`, { function: definition.name, invocationsFailed: pending.size });
      }
      for (const invocation of pending.values()) {
        clearTimeout(invocation.timer);
        invocation.reject(new EnvironmentError(`${definition.name}: execution environment ${reason}`));
      }
      pending.clear();
      rejectReady(new EnvironmentError(`${definition.name}: execution environment ${reason}`));
    });
  });
  ready.catch(() => undefined);

  return {
    ready,
    end,
    run: (event) =>
      new Promise((resolveRun, rejectRun) => {
        if (exited) {
          rejectRun(new EnvironmentError(`${definition.name}: execution environment ended`));
          return;
        }
        const id = randomUUID();
        // Lambda ends an invocation that outlives its timeout by ending its environment.
        const timer = setTimeout(() => void end(`timed out: Task timed out after ${definition.timeoutSeconds.toFixed(2)} seconds`, 'error'), timeoutMs);
        pending.set(id, { resolve: resolveRun, reject: rejectRun, timer });
        worker.postMessage({ id, event, awsRequestId: randomUUID(), deadline: Date.now() + timeoutMs } satisfies Invocation);
      }),
  };
}

/** Inside the worker: load the handler once, then run each invocation the parent sends. */
async function runEnvironment(data: EnvironmentData, port: MessagePort): Promise<void> {
  let handler: (event: unknown, context: Context) => Promise<unknown>;
  try {
    const module = (await import(data.moduleUrl)) as { handler?: unknown };
    if (typeof module.handler !== 'function') throw new Error('the module does not export a handler function');
    handler = module.handler as typeof handler;
  } catch (error) {
    port.postMessage({ kind: 'load-failed', error: error instanceof Error ? error.message : String(error) } satisfies FromEnvironment);
    return;
  }
  port.on('message', async (invocation: Invocation) => {
    try {
      const result = await accountInvocation(data.name, 'queue', () =>
        handler(invocation.event, localLambdaContext(data.functionName, invocation.awsRequestId, invocation.deadline)),
      );
      port.postMessage({ kind: 'result', id: invocation.id, result } satisfies FromEnvironment);
    } catch (error) {
      const { name, message, stack } = error instanceof Error ? error : new Error(String(error));
      port.postMessage({ kind: 'failed', id: invocation.id, error: { name, message, stack } } satisfies FromEnvironment);
    }
  });
  port.postMessage({ kind: 'ready' } satisfies FromEnvironment);
}

if (!isMainThread && parentPort && (workerData as Partial<EnvironmentData> | null)?.role === environmentRole) {
  void runEnvironment(workerData as EnvironmentData, parentPort);
}
