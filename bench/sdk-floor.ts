import { fork } from 'node:child_process';
import { resolve } from 'node:path';
import { processCpuMs } from './cpu.ts';
import { percentiles } from './turns.ts';

export interface SdkFloorResult {
  concurrency: number;
  requestsPerSecond: number;
  cpuMsPerRequest: number;
  /** DynamoDB Local's CPU per request over the same window, when the caller names its processes. */
  databaseCpuMsPerRequest?: number;
  p50Ms: number;
  /** One client, the two reads before a turn's first delta, in sequence. */
  readsAloneP50Ms: number;
}

const concurrency = 16;
const warmupMs = 3_000;
const durationMs = 10_000;

/**
 * Context for the turn targets: requests/s and CPU per request of `sdk-floor-server.ts`, which makes a turn's three
 * DynamoDB calls with the AWS SDK and does nothing else, at the turn load's concurrency; and, with one client, the
 * latency of the two reads a turn makes before its first delta (HTTP to the floor server included).
 */
export async function measureSdkFloor(dynamodbEndpoint: string, tableName: string, databasePids: readonly number[] = []): Promise<SdkFloorResult> {
  const child = fork(resolve(import.meta.dirname, 'sdk-floor-server.ts'), {
    env: { ...process.env, DYNAMODB_ENDPOINT: dynamodbEndpoint, TABLE_NAME: tableName },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    const port = await new Promise<number>((done) => child.once('message', (message: { port: number }) => done(message.port)));
    const url = `http://127.0.0.1:${port}/`;
    const started = performance.now();
    const measureFrom = started + warmupMs;
    const stopAt = measureFrom + durationMs;
    const latencies: number[] = [];
    let cpuBefore = Number.NaN;
    let databaseCpuBefore = 0;
    const databaseCpuMs = () => databasePids.reduce((total, pid) => total + processCpuMs(pid), 0);
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() < stopAt) {
          const start = performance.now();
          if (start >= measureFrom && Number.isNaN(cpuBefore)) {
            cpuBefore = processCpuMs(child.pid as number);
            databaseCpuBefore = databaseCpuMs();
          }
          await (await fetch(url, { method: 'POST', body: '{}' })).arrayBuffer();
          if (start >= measureFrom) latencies.push(performance.now() - start);
        }
      }),
    );
    const cpuMs = processCpuMs(child.pid as number) - cpuBefore;
    const databaseCpuPerRequest = (databaseCpuMs() - databaseCpuBefore) / latencies.length;
    const reads: number[] = [];
    for (let index = 0; index < 300; index += 1) {
      const start = performance.now();
      await (await fetch(`${url}reads`, { method: 'POST', body: '{}' })).arrayBuffer();
      if (index >= 100) reads.push(performance.now() - start);
    }
    return {
      concurrency,
      requestsPerSecond: latencies.length / (durationMs / 1000),
      cpuMsPerRequest: cpuMs / latencies.length,
      ...(databasePids.length ? { databaseCpuMsPerRequest: databaseCpuPerRequest } : {}),
      p50Ms: percentiles(latencies).p50,
      readsAloneP50Ms: percentiles(reads).p50,
    };
  } finally {
    child.kill('SIGTERM');
  }
}
