/**
 * Route aliases (docs/api-conventions.md#aliases): a path declared as an alias answers exactly what its route's own
 * path answers (body, errors, scope, tenant isolation), and /openapi.json lists it as an alias of that operation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { namedComponents, routeGroups } from '../../functions/route-groups.ts';
import { buildOpenApiDocument } from '../../shared/platform/http/openapi.ts';
import { routeKeysOf } from '../../shared/platform/http/route.ts';
import { startApi, type ApiResponse, type TestApi } from '../support/api.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

const declared = routeGroups.flatMap((group) => Object.entries(group.routes).map(([operation, route]) => ({ group, operation, route })));
const aliased = declared.filter(({ route }) => route.aliases?.length);

/** What a caller sees of an answer: its status and body, the error envelope without its per-request `meta`. */
const seen = (response: ApiResponse) => ({ status: response.status, body: response.body?.error ? { error: response.body.error } : response.body });

/** Asks `canonical`, then `alias`, with the same credentials, and expects the same answer. */
async function expectSameAnswer(method: string, canonical: string, alias: string, key: string, body?: unknown): Promise<ApiResponse> {
  const own = await api.request(method, canonical, { key, ...(body === undefined ? {} : { body }) });
  const other = await api.request(method, alias, { key, ...(body === undefined ? {} : { body }) });
  expect(seen(other), `${method} ${alias} beside ${canonical}`).toEqual(seen(own));
  return own;
}

describe('route aliases in the declarations', () => {
  it('exist where a reader looks next, never on a route with an Idempotency-Key, and never clash', () => {
    expect(aliased.map(({ route }) => `${route.method} ${route.aliases?.join(' ')}`)).toEqual(
      expect.arrayContaining(['GET /v2/chat/agents/{id}', 'GET /v2/chat/agents', 'GET /v1/chat/chat/sessions/{id}', 'GET /v1/chat/phone-numbers']),
    );
    expect(aliased.filter(({ route }) => route.idempotent).map(({ operation }) => operation)).toEqual([]);
    const keys = declared.flatMap(({ route }) => routeKeysOf(route));
    expect(keys.filter((key, index) => keys.indexOf(key) !== index)).toEqual([]);
  });
});

describe('route aliases in /openapi.json', () => {
  const document = buildOpenApiDocument(routeGroups, namedComponents) as { paths: Record<string, Record<string, Record<string, unknown>>> };

  it('lists each alias as an operation of its own, marked x-alias-of its route, with the same responses', () => {
    for (const { route } of aliased) {
      const own = document.paths[route.path]?.[route.method.toLowerCase()];
      expect(own, `${route.method} ${route.path}`).toBeDefined();
      for (const alias of route.aliases ?? []) {
        const operation = document.paths[alias]?.[route.method.toLowerCase()];
        expect(operation, `${route.method} ${alias}`).toMatchObject({
          'x-alias-of': own?.operationId,
          deprecated: false,
          summary: own?.summary,
          responses: own?.responses,
          'x-required-scope': own?.['x-required-scope'],
        });
        expect(operation?.description).toContain(`Alias of \`${route.method} ${route.path}\``);
        expect(operation?.operationId).not.toBe(own?.operationId);
      }
    }
  });

  it('keeps one operationId per operation', () => {
    const ids = Object.values(document.paths).flatMap((operations) => Object.values(operations).map((operation) => operation.operationId));
    expect(ids.filter((id, index) => ids.indexOf(id) !== index)).toEqual([]);
  });
});

describe('an alias answers as its route', () => {
  it('agents: the same agent, list, errors and tenant isolation under /v1 and /v2; a PATCH or DELETE through either', async () => {
    const owner = await api.newOrg();
    const stranger = await api.newOrg();
    const reader = await api.newKey(owner.orgId, ['chat:read']);
    const created = await api.request('POST', '/v2/chat/agents', { key: owner.key, body: { fullName: 'Ada', description: 'Support', role: 'You help.' } });
    expect(created.status, created.text).toBe(201);
    const id = created.body.id as string;

    expect((await expectSameAnswer('GET', `/v1/chat/agents/${id}`, `/v2/chat/agents/${id}`, owner.key)).body).toMatchObject({ id, fullName: 'Ada' });
    expect((await expectSameAnswer('GET', '/v1/chat/agents?limit=5', '/v2/chat/agents?limit=5', owner.key)).body.data).toHaveLength(1);
    expect((await expectSameAnswer('GET', `/v1/chat/agents/${id}`, `/v2/chat/agents/${id}`, stranger.key)).status).toBe(404);
    expect((await expectSameAnswer('GET', '/v1/chat/agents', '/v2/chat/agents', stranger.key)).body.data).toEqual([]);
    expect((await expectSameAnswer('GET', `/v1/chat/agents/${id}`, `/v2/chat/agents/${id}`, reader)).status).toBe(403);
    expect((await expectSameAnswer('GET', '/v1/chat/agents/not-an-agent', '/v2/chat/agents/not-an-agent', owner.key)).status).toBe(404);
    expect((await expectSameAnswer('GET', '/v1/chat/agents?sort=nope', '/v2/chat/agents?sort=nope', owner.key)).status).toBe(400);

    const patched = await api.request('PATCH', `/v1/chat/agents/${id}`, { key: owner.key, body: { fullName: 'Ada Lovelace' } });
    expect(patched.status, patched.text).toBe(200);
    expect((await api.request('GET', `/v2/chat/agents/${id}`, { key: owner.key })).body.fullName).toBe('Ada Lovelace');
    expect((await api.request('DELETE', `/v2/chat/agents/${id}`, { key: stranger.key })).status).toBe(404);
    expect((await api.request('DELETE', `/v2/chat/agents/${id}`, { key: owner.key })).status).toBe(204);
    expect((await expectSameAnswer('GET', `/v1/chat/agents/${id}`, `/v2/chat/agents/${id}`, owner.key)).status).toBe(404);
  });

  it('sessions: one session under /api/v1/chat/sessions/{id} and /v1/chat/chat/sessions/{id}, the list under both prefixes', async () => {
    const owner = await api.newOrg();
    const stranger = await api.newOrg();
    const agent = await api.request('POST', '/v2/chat/agents', { key: owner.key, body: { fullName: 'Ada', description: 'Support', role: 'You help.' } });
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key: owner.key, body: { agentId: agent.body.id } });
    expect(session.status, session.text).toBe(201);
    const id = session.body.id as string;

    expect((await expectSameAnswer('GET', `/api/v1/chat/sessions/${id}`, `/v1/chat/chat/sessions/${id}`, owner.key)).body).toMatchObject({ id });
    expect((await expectSameAnswer('GET', `/api/v1/chat/sessions/${id}`, `/v1/chat/chat/sessions/${id}`, stranger.key)).body.error.code).toBe('SESSION_NOT_FOUND');
    expect((await expectSameAnswer('GET', '/v1/chat/chat/sessions', '/api/v1/chat/sessions', owner.key)).body.data).toHaveLength(1);
    expect((await expectSameAnswer('GET', '/v1/chat/chat/sessions', '/api/v1/chat/sessions', stranger.key)).body.data).toEqual([]);
    expect((await expectSameAnswer('GET', `/v1/chat/sessions/${id}/recording`, `/v1/chat/chat/sessions/${id}/recording`, owner.key)).status).toBe(404);
  });

  it('phone numbers: the list and a number under /v1/chat/phone-numbers, in the spec\'s own shape', async () => {
    const owner = await api.newOrg();
    const listed = await expectSameAnswer('GET', '/api/v1/phone-numbers', '/v1/chat/phone-numbers', owner.key);
    expect(listed.status).toBe(200);
    expect(listed.body).toHaveProperty('items');
    expect((await expectSameAnswer('GET', '/api/v1/phone-numbers/pn_missing', '/v1/chat/phone-numbers/pn_missing', owner.key)).status).toBe(404);
  });
});
