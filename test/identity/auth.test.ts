import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiResponse, type TestApi } from '../support/api.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

const agentBody = { fullName: 'Auth Agent', description: 'checks credentials', role: 'You are helpful.' };

function expectUnauthorized(response: ApiResponse): void {
  expect(response.status).toBe(401);
  expect(response.body).toMatchObject({
    error: { code: 'UNAUTHORIZED', status: 401, message: expect.any(String) },
    meta: { requestId: response.headers.get('x-request-id') },
  });
}

interface ListedKey {
  id: string;
  prefix: string;
  lastUsedAt?: string;
}

async function listedKey(adminKey: string, key: string): Promise<ListedKey | undefined> {
  const response = await api.request<{ data: ListedKey[] }>('GET', '/v1/chat/api-keys?limit=100', { key: adminKey });
  expect(response.status).toBe(200);
  return response.body.data.find((item) => key.startsWith(item.prefix));
}

describe('requests without usable credentials', () => {
  it('answers 401 UNAUTHORIZED in the envelope when no credentials are sent', async () => {
    // Act
    const response = await api.request('GET', '/v1/chat/agents');

    // Assess
    expectUnauthorized(response);
  });

  it.each([
    ['a Basic scheme', 'Basic x'],
    ['Bearer with no token', 'Bearer'],
    ['Bearer followed by two tokens', 'Bearer abc def'],
    ['a bare token without a scheme', 'eyJhbGciOiJSUzI1NiJ9.e30.sig'],
  ])('answers 401 for a malformed Authorization header: %s', async (_label, authorization) => {
    // Act
    const response = await api.request('GET', '/v1/chat/agents', { headers: { authorization } });

    // Assess
    expectUnauthorized(response);
  });

  it('answers 401 to a well-formed API key that was never issued', async () => {
    // Prepare
    const unknown = `apk_${'A'.repeat(32)}`;

    // Act
    const response = await api.request('GET', '/v1/chat/agents', { key: unknown });

    // Assess
    expectUnauthorized(response);
  });

  it.each([
    ['empty', ''],
    ['short', 'abc'],
    ['garbage', '!!not a key at all!!'],
    ['far too long', 'k'.repeat(300)],
  ])('answers 401 to an x-api-key that is %s', async (_label, value) => {
    // Act
    const response = await api.request('GET', '/v1/chat/agents', { headers: { 'x-api-key': value } });

    // Assess
    expectUnauthorized(response);
  });

  it('does not accept a Bearer token when this deployment has no JWKS configured', async () => {
    // Act
    const response = await api.request('GET', '/v1/chat/agents', { token: 'eyJhbGciOiJSUzI1NiJ9.eyJvcmdfaWQiOiJ4In0.c2ln' });

    // Assess
    expectUnauthorized(response);
  });
});

describe('scopes', () => {
  it('answers 403 FORBIDDEN to a valid key that lacks the scope of the route', async () => {
    // Prepare
    const { key } = await api.newOrg(['agents:read']);

    // Act
    const write = await api.request('POST', '/v2/chat/agents', { key, body: agentBody });
    const read = await api.request('GET', '/v1/chat/agents', { key });

    // Assess
    expect(write.status).toBe(403);
    expect(write.body.error).toMatchObject({ code: 'FORBIDDEN', status: 403 });
    expect(read.status).toBe(200);
  });

  it('lets a write scope also read, but not manage keys', async () => {
    // Prepare
    const { key } = await api.newOrg(['agents:write']);

    // Act
    const created = await api.request('POST', '/v2/chat/agents', { key, body: agentBody });
    const listed = await api.request('GET', '/v1/chat/agents', { key });
    const keys = await api.request('GET', '/v1/chat/api-keys', { key });

    // Assess
    expect(created.status).toBe(201);
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((agent: { id: string }) => agent.id)).toEqual([created.body.id]);
    expect(keys.status).toBe(403);
    expect(keys.body.error.code).toBe('FORBIDDEN');
  });
});

describe('both headers present', () => {
  it('uses x-api-key and ignores a bad Authorization header', async () => {
    // Prepare
    const { orgId, key } = await api.newOrg();
    const created = await api.request('POST', '/v2/chat/agents', { key, body: agentBody });
    expect(created.status).toBe(201);

    // Act
    const response = await api.request('GET', '/v1/chat/agents', { key, headers: { authorization: 'Bearer not.a.valid-token' } });

    // Assess
    expect(response.status).toBe(200);
    expect(response.body.data).toHaveLength(1);
    expect(response.body.data[0]).toMatchObject({ id: created.body.id, orgId });
  });

  it('answers 401 for an unknown x-api-key even when an Authorization header is also sent', async () => {
    // Act
    const response = await api.request('GET', '/v1/chat/agents', {
      headers: { 'x-api-key': `apk_${'Z'.repeat(32)}`, authorization: 'Basic dXNlcjpwYXNz' },
    });

    // Assess
    expectUnauthorized(response);
  });
});

describe('lastUsedAt', () => {
  it('appears on the key listing once the key has been used, and is not rewritten within a minute', async () => {
    // Prepare
    const { orgId, key: adminKey } = await api.newOrg(['keys:manage']);
    const key = await api.newKey(orgId, ['agents:read']);
    const unused = await listedKey(adminKey, key);
    expect(unused).toBeDefined();
    expect(unused?.lastUsedAt).toBeUndefined();
    const before = Date.now();

    // Act
    const response = await api.request('GET', '/v1/chat/agents', { key });

    // Assess
    expect(response.status).toBe(200);
    const after = Date.now();
    await expect.poll(async () => (await listedKey(adminKey, key))?.lastUsedAt, { timeout: 60_000 }).toBeDefined();
    const firstUse = (await listedKey(adminKey, key))?.lastUsedAt as string;
    expect(firstUse).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
    expect(Date.parse(firstUse)).toBeGreaterThanOrEqual(before - 1_000);
    expect(Date.parse(firstUse)).toBeLessThanOrEqual(after + 1_000);

    await new Promise((resolve) => setTimeout(resolve, 20));
    expect((await api.request('GET', '/v1/chat/agents', { key })).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await listedKey(adminKey, key))?.lastUsedAt).toBe(firstUse);
  });
});

describe('reads that start before the key is confirmed', () => {
  it('still answer 401 the moment a key this process has seen is deleted, and never show the data', async () => {
    const { orgId, key } = await api.newOrg();
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Secret agent', description: 'd', role: 'r' } });
    const reader = await api.newKey(orgId, ['agents:read']);
    expect((await api.request('GET', `/v1/chat/agents/${agent.body.id}`, { key: reader })).status).toBe(200);
    const listed = await api.request('GET', '/v1/chat/api-keys?limit=100', { key });
    const readerId = listed.body.data.find((entry: { prefix: string }) => reader.startsWith(entry.prefix)).id;
    expect((await api.request('DELETE', `/v1/chat/api-keys/${readerId}`, { key })).status).toBe(204);
    for (const path of [`/v1/chat/agents/${agent.body.id}`, '/v1/chat/agents', `/v1/chat/agents/${crypto.randomUUID()}`]) {
      const refused = await api.request('GET', path, { key: reader });
      expect(refused.status, path).toBe(401);
      expect(refused.text).not.toContain('Secret agent');
    }
  });

  it('still refuse a remembered key without the scope with 403', async () => {
    const { orgId } = await api.newOrg();
    const agentsOnly = await api.newKey(orgId, ['agents:read']);
    expect((await api.request('GET', '/v1/chat/agents', { key: agentsOnly })).status).toBe(200);
    const refused = await api.request('GET', '/v1/chat/tools', { key: agentsOnly });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('FORBIDDEN');
  });
});
