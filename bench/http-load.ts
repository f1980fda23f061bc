import type { AddressInfo } from 'node:net';
import { Worker } from 'node:worker_threads';
import { cpuShare, cpuSnapshot, type CpuShare } from './cpu.ts';
import type { LoadOptions, LoadResult } from './load-worker.ts';

export type { LoadResult } from './load-worker.ts';

export interface LoadRun {
  concurrency: number;
  warmupMs: number;
  durationMs: number;
}

export interface LocalRuntimeResult {
  route: string;
  runs: (LoadRun & { result: LoadResult; cpu?: CpuShare })[];
}

/** Caps each phase of each run, on top of its duration. */
const maxRequestsPerPhase = 500_000;

/**
 * The local runtime in this process against an in-memory DynamoDB Local, loaded from a worker thread: one org
 * with a '*' key, one agent, then `GET /v1/chat/agents/{id}` for each run. Everything is stopped before it returns.
 */
export async function measureLocalRuntime(runs: readonly LoadRun[], log: (line: string) => void): Promise<LocalRuntimeResult> {
  // Before any handler module (and its logger) loads.
  process.env.POWERTOOLS_LOG_LEVEL = 'WARN';
  const [{ startLocalDatabase, useLocalDatabase }, { createLocalServer }, { routeGroups }, { runtime }, { issueApiKey }] = await Promise.all([
    import('../infra/local/environment.ts'),
    import('../infra/local/server.ts'),
    import('../functions/route-groups.ts'),
    import('../shared/runtime.ts'),
    import('../shared/identity/api-keys.ts'),
  ]);

  log('starting DynamoDB Local (in memory)');
  const database = await startLocalDatabase({});
  const stopOnSignal = () => void database.stop().finally(() => process.exit(130));
  process.once('SIGINT', stopOnSignal);
  process.once('SIGTERM', stopOnSignal);
  const { server, preload } = createLocalServer(routeGroups);
  try {
    useLocalDatabase(database);
    await preload();
    await new Promise<void>((resolveListen, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolveListen);
    });
    const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    const deps = runtime();
    const orgId = crypto.randomUUID();
    await deps.orgs.ensure({ id: orgId, name: 'bench', createdAt: deps.clock.now().toISOString() });
    const { key } = await issueApiKey(deps, orgId, { name: 'bench', scopes: ['*'] });
    const created = await fetch(`${baseUrl}/v2/chat/agents`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ fullName: 'Bench agent', description: 'Created by npm run bench', role: 'Answers benchmark requests' }),
    });
    const agent = (await created.json()) as { id?: string };
    if (created.status !== 201 || !agent.id) throw new Error(`POST /v2/chat/agents answered ${created.status}: ${JSON.stringify(agent)}`);

    const route = 'GET /v1/chat/agents/{id}';
    const results: LocalRuntimeResult['runs'] = [];
    for (const run of runs) {
      log(`${route} at concurrency ${run.concurrency}: ${run.warmupMs / 1000} s warm-up, ${run.durationMs / 1000} s measured`);
      const { result, cpu } = await inWorker({
        url: `${baseUrl}/v1/chat/agents/${agent.id}`,
        headers: { 'x-api-key': key },
        concurrency: run.concurrency,
        warmupMs: run.warmupMs,
        durationMs: run.durationMs,
        maxRequests: maxRequestsPerPhase,
      });
      results.push({ ...run, result, ...(cpu ? { cpu } : {}) });
    }
    return { route, runs: results };
  } finally {
    server.closeAllConnections();
    await new Promise((resolveClose) => server.close(resolveClose));
    await database.stop();
    process.off('SIGINT', stopOnSignal);
    process.off('SIGTERM', stopOnSignal);
  }
}

type WorkerMessage = { measuring: true } | { ok: true; result: LoadResult } | { ok: false; error: string };

/** Runs one load in a worker thread; the CPU split is taken over its measured phase. */
function inWorker(options: LoadOptions): Promise<{ result: LoadResult; cpu: CpuShare | undefined }> {
  const worker = new Worker(new URL('./load-worker.ts', import.meta.url), { workerData: options });
  // The worker ends its own phases; this is the backstop should it hang.
  const limitMs = options.warmupMs + options.durationMs + 30_000;
  let timer: NodeJS.Timeout | undefined;
  let measuring: ReturnType<typeof cpuSnapshot>;
  return new Promise<{ result: LoadResult; cpu: CpuShare | undefined }>((resolveRun, reject) => {
    timer = setTimeout(() => reject(new Error(`load generator still running after ${limitMs} ms`)), limitMs);
    worker.on('message', (message: WorkerMessage) => {
      if ('measuring' in message) measuring = cpuSnapshot();
      else if (message.ok) resolveRun({ result: message.result, cpu: cpuShare(measuring, cpuSnapshot()) });
      else reject(new Error(message.error));
    });
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`load generator exited with ${code} before reporting`)));
  }).finally(() => {
    clearTimeout(timer);
    void worker.terminate();
  });
}
