import type { AddressInfo } from 'node:net';
import { expect, inject } from 'vitest';
import type { Scope } from '../../shared/auth/scopes.ts';
import type { Config } from '../../shared/config.ts';

export interface ApiResponse<Body = any> {
  status: number;
  headers: Headers;
  body: Body;
  text: string;
}

export interface RequestOptions {
  key?: string;
  token?: string;
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, string>;
}

export interface TestApi {
  baseUrl: string;
  request<Body = any>(method: string, path: string, options?: RequestOptions): Promise<ApiResponse<Body>>;
  /** A fresh organization with one key holding `scopes` (all by default). */
  newOrg(scopes?: Scope[]): Promise<{ orgId: string; key: string }>;
  /** Another key of an existing organization. */
  newKey(orgId: string, scopes: Scope[]): Promise<string>;
  close(): Promise<void>;
}

/**
 * Starts the local runtime in this test process, on a free port, against the run's DynamoDB Local. `env` is
 * applied before the handlers read their configuration, so each test file can configure its own API.
 */
export async function startApi(
  env: Record<string, string> = {},
  options: { ttlSweepIntervalMs?: number; streamPoller?: boolean } = {},
): Promise<TestApi> {
  Object.assign(process.env, env);
  const [{ useLocalDatabase }, { createLocalServer }, { routeGroups }, { runtime }, { issueApiKey }] = await Promise.all([
    import('../../infra/local/environment.ts'),
    import('../../infra/local/server.ts'),
    import('../../functions/route-groups.ts'),
    import('../../shared/runtime.ts'),
    import('../../shared/domain/api-keys.ts'),
  ]);
  useLocalDatabase({ endpoint: inject('dynamodbEndpoint'), tableName: inject('tableName') });
  const { server } = createLocalServer(routeGroups);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const deps = runtime();
  const sweeper =
    options.ttlSweepIntervalMs === undefined
      ? undefined
      : await startSweeper(deps.config, inject('tableName'), options.ttlSweepIntervalMs);
  const poller = options.streamPoller ? await startPoller(inject('dynamodbEndpoint'), inject('tableName')) : undefined;

  const newKey = async (orgId: string, scopes: Scope[]) => (await issueApiKey(deps, orgId, { name: 'test', scopes })).key;

  return {
    baseUrl,
    async request(method, path, options = {}) {
      const headers: Record<string, string> = { ...options.headers };
      if (options.key) headers['x-api-key'] = options.key;
      if (options.token) headers.authorization = `Bearer ${options.token}`;
      let body: string | undefined = options.rawBody;
      if (options.body !== undefined) {
        body = JSON.stringify(options.body);
        headers['content-type'] ??= 'application/json';
      }
      const response = await fetch(baseUrl + path, { method, headers, body });
      const text = await response.text();
      let parsed: unknown = undefined;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined;
      }
      return { status: response.status, headers: response.headers, body: parsed as any, text };
    },
    async newOrg(scopes = ['*']) {
      const orgId = crypto.randomUUID();
      await deps.orgs.ensure({ id: orgId, name: 'test org', createdAt: new Date().toISOString() });
      return { orgId, key: await newKey(orgId, scopes) };
    },
    newKey,
    close: async () => {
      await poller?.stop();
      await new Promise<void>((resolve) => {
        sweeper?.stop();
        server.closeAllConnections();
        server.close(() => resolve());
      });
    },
  };
}

/** The local runtime's TTL sweeper, for tests of what happens when DynamoDB deletes expired items. */
async function startSweeper(config: Config, tableName: string, intervalMs: number) {
  const [{ startTtlSweeper }, { tableStreamConsumers }, { createDocumentClient }] = await Promise.all([
    import('../../infra/local/ttl-sweeper.ts'),
    import('../../functions/consumers.ts'),
    import('../../shared/store/dynamo.ts'),
  ]);
  return startTtlSweeper({ client: createDocumentClient(config), tableName, consumers: tableStreamConsumers, intervalMs });
}

/** The local runtime's stream poller: hands new outbox and message items to the event relay, as Lambda would. */
async function startPoller(endpoint: string, tableName: string) {
  const [{ startStreamPoller }, { tableStreamConsumers }] = await Promise.all([
    import('../../infra/local/stream-poller.ts'),
    import('../../functions/consumers.ts'),
  ]);
  return startStreamPoller({ endpoint, tableName, consumers: tableStreamConsumers, idleDelayMs: 10 });
}

/** Asserts an error envelope: status, stable code, and (when given) that the details name the field. */
export function expectError(response: ApiResponse, status: number, code: string, field?: string): void {
  expect(response.status, response.text).toBe(status);
  expect(response.body.error).toMatchObject({ code, status });
  if (field !== undefined) expect(response.body.error.details.map((detail: { field: string }) => detail.field)).toContain(field);
}
