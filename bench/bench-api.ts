/**
 * For benchmark child processes: the API of the local runtime on the database the parent names, with an
 * organization and a full-access key of its own, and a timer of sequential GETs.
 */
import type { AddressInfo } from 'node:net';
import { routeGroups } from '../functions/route-groups.ts';
import { useLocalDatabase } from '../infra/local/environment.ts';
import { createLocalServer } from '../infra/local/server.ts';
import { issueApiKey } from '../shared/identity/api-keys.ts';
import { runtime } from '../shared/runtime.ts';

/** Sequential GETs timed after this many that warm the process up. */
const warmupRequests = 20;

/** A new organization with a full-access key, and a caller of the API at `baseUrl` that answers its JSON (or `{}`). */
export async function benchOrganization(deps: ReturnType<typeof runtime>, baseUrl: string) {
  const orgId = crypto.randomUUID();
  await deps.orgs.ensure({ id: orgId, name: 'bench', createdAt: new Date().toISOString() });
  const { key } = await issueApiKey(deps, orgId, { name: 'bench', scopes: ['*'] });

  async function call<Body = Record<string, any>>(method: string, path: string, body?: unknown): Promise<Body> {
    const response = await fetch(baseUrl + path, {
      method,
      headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return (response.status === 204 ? {} : await response.json()) as Body;
  }

  return { orgId, key, call };
}

export async function startBenchApi() {
  useLocalDatabase({ endpoint: process.env.BENCH_DYNAMODB_ENDPOINT as string, tableName: process.env.TABLE_NAME as string });
  const { server, preload } = createLocalServer(routeGroups);
  await preload();
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const deps = runtime();
  const { orgId, key, call } = await benchOrganization(deps, baseUrl);

  /** Latencies (ms) of `requests` GETs of `path`, one at a time. */
  async function timed(path: string, requests: number): Promise<number[]> {
    const latencies: number[] = [];
    for (let index = 0; index < requests + warmupRequests; index += 1) {
      const started = performance.now();
      const response = await fetch(baseUrl + path, { headers: { 'x-api-key': key } });
      await response.arrayBuffer();
      if (response.status !== 200) throw new Error(`GET ${path}: ${response.status}`);
      if (index >= warmupRequests) latencies.push(performance.now() - started);
    }
    return latencies;
  }

  return { deps, orgId, call, timed, close: () => server.close() };
}
