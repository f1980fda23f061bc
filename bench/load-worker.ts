/**
 * The load generator, run as a worker thread so that it does not share the server's event loop: `concurrency`
 * keep-alive connections each send one request after another, first for the warm-up, then for the measurement.
 */
import { Agent, request } from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';

export interface LoadOptions {
  url: string;
  headers: Record<string, string>;
  concurrency: number;
  warmupMs: number;
  durationMs: number;
  /** Hard cap on requests in the measured phase (and, separately, in the warm-up). */
  maxRequests: number;
}

export interface LoadResult {
  requests: number;
  errors: number;
  /** Count per status code, `network` for failed requests. */
  statuses: Record<string, number>;
  errorSamples: string[];
  elapsedMs: number;
  requestsPerSecond: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number; mean: number };
}

const requestTimeoutMs = 10_000;

async function run(options: LoadOptions): Promise<LoadResult> {
  const target = new URL(options.url);
  if (target.protocol !== 'http:' || target.hostname !== '127.0.0.1') throw new Error(`refusing to load ${options.url}: 127.0.0.1 only`);
  const agent = new Agent({ keepAlive: true, maxSockets: options.concurrency });
  try {
    await phase(agent, target, options, options.warmupMs);
    parentPort?.postMessage({ measuring: true });
    return await phase(agent, target, options, options.durationMs);
  } finally {
    agent.destroy();
  }
}

async function phase(agent: Agent, target: URL, options: LoadOptions, durationMs: number): Promise<LoadResult> {
  const latencies = new Float64Array(options.maxRequests);
  const statuses: Record<string, number> = {};
  const errorSamples: string[] = [];
  let sent = 0;
  let done = 0;
  let errors = 0;
  const started = performance.now();
  const deadline = started + durationMs;
  const loop = async () => {
    while (performance.now() < deadline && sent < options.maxRequests) {
      sent++;
      const t = performance.now();
      const outcome = await get(agent, target, options.headers);
      latencies[done++] = performance.now() - t;
      statuses[outcome.status] = (statuses[outcome.status] ?? 0) + 1;
      if (outcome.status !== '200') {
        errors++;
        if (errorSamples.length < 5) errorSamples.push(`${outcome.status} ${outcome.body.slice(0, 300)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, loop));
  const elapsedMs = performance.now() - started;
  const measured = latencies.subarray(0, done).sort();
  const at = (q: number) => measured[Math.min(done - 1, Math.ceil(q * done) - 1)] ?? 0;
  let sum = 0;
  for (const latency of measured) sum += latency;
  return {
    requests: done,
    errors,
    statuses,
    errorSamples,
    elapsedMs,
    requestsPerSecond: done / (elapsedMs / 1000),
    latencyMs: { p50: at(0.5), p90: at(0.9), p99: at(0.99), max: measured[done - 1] ?? 0, mean: done ? sum / done : 0 },
  };
}

function get(agent: Agent, target: URL, headers: Record<string, string>): Promise<{ status: string; body: string }> {
  return new Promise((resolveGet) => {
    const req = request(target, { method: 'GET', agent, headers, timeout: requestTimeoutMs }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolveGet({ status: String(response.statusCode), body: Buffer.concat(chunks).toString('utf8') }));
      response.on('error', (error) => resolveGet({ status: 'network', body: error.message }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${requestTimeoutMs} ms`)));
    req.on('error', (error) => resolveGet({ status: 'network', body: error.message }));
    req.end();
  });
}

if (parentPort) {
  const port = parentPort;
  run(workerData as LoadOptions).then(
    (result) => port.postMessage({ ok: true, result }),
    (error: Error) => port.postMessage({ ok: false, error: String(error?.stack ?? error) }),
  );
}
