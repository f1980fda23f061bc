/**
 * Child process of the developer-pages benchmark: the API on the database the parent names, then GETs one at a
 * time of /openapi.json and of /health (the floor), and the gzipped size of what the pages load. Reports its figures
 * to the parent and exits.
 */
import { get } from 'node:http';
import type { AddressInfo } from 'node:net';
import { routeGroups } from '../functions/route-groups.ts';
import { useLocalDatabase } from '../infra/local/environment.ts';
import { createLocalServer } from '../infra/local/server.ts';
import type { DeveloperPagesResult } from './developer-pages.ts';
import { percentiles } from './turns.ts';

const requests = Number(process.env.BENCH_OPENAPI_REQUESTS ?? 500);

useLocalDatabase({ endpoint: process.env.BENCH_DYNAMODB_ENDPOINT as string, tableName: process.env.TABLE_NAME as string });
const { server, preload } = createLocalServer(routeGroups);
await preload();
await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

/** One GET; resolves with its duration to the last byte and the bytes received (compressed when asked). */
function timedGet(path: string, encoding = 'identity'): Promise<{ ms: number; bytes: number }> {
  const started = performance.now();
  return new Promise((done, fail) => {
    get(`${baseUrl}${path}`, { headers: { 'accept-encoding': encoding } }, (response) => {
      let bytes = 0;
      response.on('data', (chunk: Buffer) => (bytes += chunk.length));
      response.on('end', () => (response.statusCode === 200 ? done({ ms: performance.now() - started, bytes }) : fail(new Error(`${path} answered ${response.statusCode}`))));
    }).on('error', fail);
  });
}

async function series(path: string): Promise<number[]> {
  const durations: number[] = [];
  for (let index = 0; index < requests; index++) durations.push((await timedGet(path)).ms);
  return durations;
}

const first = await timedGet('/openapi.json');
// Warm the floor's route too, so that both series start from loaded handlers.
await timedGet('/health');
const openApi = await series('/openapi.json');
const floor = await series('/health');
const result: DeveloperPagesResult = {
  requests,
  firstOpenApiMs: first.ms,
  openApiMs: percentiles(openApi),
  openApiBytes: first.bytes,
  floorMs: percentiles(floor),
  playgroundJsGzipBytes: (await timedGet('/assets/playground.js', 'gzip')).bytes,
  docsJsGzipBytes: (await timedGet('/assets/scalar.js', 'gzip')).bytes + (await timedGet('/assets/docs.js', 'gzip')).bytes,
};
process.send?.(result, () => process.exit(0));
