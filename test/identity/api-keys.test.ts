import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

const agentBody = { fullName: 'Key Agent', description: 'used by key tests', role: 'You are helpful.' };
const isoTimestamp = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

interface ListedKey {
  id: string;
  orgId: string;
  name: string;
  scopes: string[];
  prefix: string;
  createdAt: string;
}

describe('POST /v1/chat/api-keys', () => {
  it('answers 201 with the new key, shown this once, and its record', async () => {
    // Prepare
    const { orgId, key: adminKey } = await api.newOrg();

    // Act
    const response = await api.request('POST', '/v1/chat/api-keys', {
      key: adminKey,
      body: { name: 'ci pipeline', scopes: ['agents:read', 'agents:write'] },
    });

    // Assess
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({
      id: expect.any(String),
      orgId,
      name: 'ci pipeline',
      scopes: ['agents:read', 'agents:write'],
      prefix: expect.any(String),
      createdAt: expect.stringMatching(isoTimestamp),
    });
    const key: string = response.body.key;
    expect(key).toMatch(/^apk_[A-Za-z0-9_-]{32,}$/);
    expect(key.startsWith(response.body.prefix)).toBe(true);
    expect(response.body.prefix.length).toBeLessThan(key.length - 16);
    expect(response.text).not.toContain('keyHash');
  });

  it('gives a key that works within its scopes and gets 403 outside them', async () => {
    // Prepare
    const { key: adminKey } = await api.newOrg();
    const created = await api.request('POST', '/v1/chat/api-keys', {
      key: adminKey,
      body: { name: 'reader', scopes: ['agents:read'] },
    });
    expect(created.status).toBe(201);
    const key: string = created.body.key;

    // Act
    const read = await api.request('GET', '/v1/chat/agents', { key });
    const write = await api.request('POST', '/v2/chat/agents', { key, body: agentBody });
    const manage = await api.request('GET', '/v1/chat/api-keys', { key });

    // Assess
    expect(read.status).toBe(200);
    expect(write.status).toBe(403);
    expect(write.body.error.code).toBe('FORBIDDEN');
    expect(manage.status).toBe(403);
  });

  it('answers 400 VALIDATION_ERROR for an unknown scope name', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('POST', '/v1/chat/api-keys', { key, body: { name: 'bad', scopes: ['agents:everything'] } });

    // Assess
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('VALIDATION_ERROR');
    expect(response.body.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ field: expect.stringMatching(/^scopes/) })]));
  });

  it('answers 400 VALIDATION_ERROR for an empty scope list', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('POST', '/v1/chat/api-keys', { key, body: { name: 'none', scopes: [] } });

    // Assess
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('VALIDATION_ERROR');
  });

  it('answers 400 for a missing or blank name', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const missing = await api.request('POST', '/v1/chat/api-keys', { key, body: { scopes: ['agents:read'] } });
    const blank = await api.request('POST', '/v1/chat/api-keys', { key, body: { name: '   ', scopes: ['agents:read'] } });

    // Assess
    expect(missing.status).toBe(400);
    expect(blank.status).toBe(400);
  });
});

describe('scope escalation', () => {
  it('does not let a key create a key with scopes it lacks, but allows ones it holds', async () => {
    // Prepare
    const { orgId } = await api.newOrg();
    const limited = await api.newKey(orgId, ['agents:write', 'keys:manage']);

    // Act
    const everything = await api.request('POST', '/v1/chat/api-keys', { key: limited, body: { name: 'all', scopes: ['*'] } });
    const chat = await api.request('POST', '/v1/chat/api-keys', { key: limited, body: { name: 'chat', scopes: ['chat:write'] } });
    const mixed = await api.request('POST', '/v1/chat/api-keys', {
      key: limited,
      body: { name: 'mixed', scopes: ['agents:read', 'tools:write'] },
    });
    const reader = await api.request('POST', '/v1/chat/api-keys', { key: limited, body: { name: 'reader', scopes: ['agents:read'] } });

    // Assess
    for (const refused of [everything, chat, mixed]) {
      expect(refused.status).toBe(403);
      expect(refused.body.error).toMatchObject({ code: 'FORBIDDEN', status: 403 });
      expect(refused.body.key).toBeUndefined();
    }
    expect(reader.status).toBe(201);
    expect(reader.body.scopes).toEqual(['agents:read']);
    expect((await api.request('GET', '/v1/chat/agents', { key: reader.body.key })).status).toBe(200);
    const names = (await api.request('GET', '/v1/chat/api-keys?limit=100', { key: limited })).body.data.map((item: ListedKey) => item.name);
    expect(names).toContain('reader');
    expect(names).not.toContain('all');
    expect(names).not.toContain('chat');
    expect(names).not.toContain('mixed');
  });
});

describe('GET /v1/chat/api-keys', () => {
  it('pages through the keys and never shows a key or its hash', async () => {
    // Prepare
    const { key: adminKey } = await api.newOrg();
    const issued: string[] = [adminKey];
    for (const name of ['one', 'two', 'three', 'four']) {
      const created = await api.request('POST', '/v1/chat/api-keys', { key: adminKey, body: { name, scopes: ['agents:read'] } });
      expect(created.status).toBe(201);
      issued.push(created.body.key);
    }

    // Act
    const first = await api.request('GET', '/v1/chat/api-keys?limit=2&page=1', { key: adminKey });
    const second = await api.request('GET', '/v1/chat/api-keys?limit=2&page=2', { key: adminKey });
    const third = await api.request('GET', '/v1/chat/api-keys?limit=2&page=3', { key: adminKey });

    // Assess
    for (const page of [first, second, third]) {
      expect(page.status).toBe(200);
      expect(page.body.pagination).toMatchObject({ limit: 2, total: 5, totalPages: 3 });
      for (const secret of issued) {
        expect(page.text).not.toContain(secret);
        expect(page.text).not.toContain(createHash('sha256').update(secret).digest('hex'));
      }
      expect(page.text).not.toContain('keyHash');
      expect(page.text).not.toMatch(/"key"\s*:/);
      expect(page.text.toLowerCase()).not.toContain('hash');
    }
    expect(first.body.data).toHaveLength(2);
    expect(second.body.data).toHaveLength(2);
    expect(third.body.data).toHaveLength(1);
    const ids = [...first.body.data, ...second.body.data, ...third.body.data].map((item: ListedKey) => item.id);
    expect(new Set(ids).size).toBe(5);
    for (const item of first.body.data as ListedKey[]) {
      expect(Object.keys(item).sort()).toEqual(expect.arrayContaining(['createdAt', 'id', 'name', 'orgId', 'prefix', 'scopes']));
    }
  });

  it('clamps an out-of-range limit instead of answering 400', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('GET', '/v1/chat/api-keys?limit=1000&page=0', { key });

    // Assess
    expect(response.status).toBe(200);
    expect(response.body.pagination).toMatchObject({ page: 1, limit: 100, total: 1 });
  });
});

describe('DELETE /v1/chat/api-keys/{id}', () => {
  it('answers 204 and the very next request with that key is refused', async () => {
    // Prepare
    const { key: adminKey } = await api.newOrg();
    const created = await api.request('POST', '/v1/chat/api-keys', { key: adminKey, body: { name: 'doomed', scopes: ['agents:read'] } });
    expect((await api.request('GET', '/v1/chat/agents', { key: created.body.key })).status).toBe(200);

    // Act
    const deleted = await api.request('DELETE', `/v1/chat/api-keys/${created.body.id}`, { key: adminKey });
    const after = await api.request('GET', '/v1/chat/agents', { key: created.body.key });

    // Assess
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe('UNAUTHORIZED');
    const listed = await api.request('GET', '/v1/chat/api-keys?limit=100', { key: adminKey });
    expect(listed.body.data.map((item: ListedKey) => item.id)).not.toContain(created.body.id);
  });

  it('lets a key delete itself, effective immediately', async () => {
    // Prepare
    const { orgId } = await api.newOrg();
    const self = await api.newKey(orgId, ['keys:manage']);
    const listed = await api.request('GET', '/v1/chat/api-keys?limit=100', { key: self });
    const own = (listed.body.data as ListedKey[]).find((item) => self.startsWith(item.prefix)) as ListedKey;

    // Act
    const deleted = await api.request('DELETE', `/v1/chat/api-keys/${own.id}`, { key: self });
    const after = await api.request('GET', '/v1/chat/api-keys', { key: self });

    // Assess
    expect(deleted.status).toBe(204);
    expect(after.status).toBe(401);
  });

  it('answers 404 NOT_FOUND for an unknown id, and again for one already deleted', async () => {
    // Prepare
    const { key: adminKey } = await api.newOrg();
    const created = await api.request('POST', '/v1/chat/api-keys', { key: adminKey, body: { name: 'once', scopes: ['agents:read'] } });
    expect((await api.request('DELETE', `/v1/chat/api-keys/${created.body.id}`, { key: adminKey })).status).toBe(204);

    // Act
    const unknown = await api.request('DELETE', `/v1/chat/api-keys/${crypto.randomUUID()}`, { key: adminKey });
    const again = await api.request('DELETE', `/v1/chat/api-keys/${created.body.id}`, { key: adminKey });
    const malformed = await api.request('DELETE', '/v1/chat/api-keys/not-a-uuid', { key: adminKey });

    // Assess
    for (const response of [unknown, again, malformed]) {
      expect(response.status).toBe(404);
      expect(response.body.error.code).toBe('NOT_FOUND');
    }
  });
});

describe('organizations are kept apart', () => {
  it('does not let org B delete or see the keys of org A', async () => {
    // Prepare
    const orgA = await api.newOrg();
    const orgB = await api.newOrg();
    const keyOfA = await api.request('POST', '/v1/chat/api-keys', { key: orgA.key, body: { name: 'a-key', scopes: ['agents:read'] } });
    const keyOfB = await api.request('POST', '/v1/chat/api-keys', { key: orgB.key, body: { name: 'b-key', scopes: ['agents:read'] } });

    // Act
    const crossDelete = await api.request('DELETE', `/v1/chat/api-keys/${keyOfA.body.id}`, { key: orgB.key });
    const listA = await api.request('GET', '/v1/chat/api-keys?limit=100', { key: orgA.key });
    const listB = await api.request('GET', '/v1/chat/api-keys?limit=100', { key: orgB.key });

    // Assess
    expect(crossDelete.status).toBe(404);
    expect(crossDelete.body.error.code).toBe('NOT_FOUND');
    expect((await api.request('GET', '/v1/chat/agents', { key: keyOfA.body.key })).status).toBe(200);
    const idsA = (listA.body.data as ListedKey[]).map((item) => item.id);
    const idsB = (listB.body.data as ListedKey[]).map((item) => item.id);
    expect(idsA).toContain(keyOfA.body.id);
    expect(idsA).not.toContain(keyOfB.body.id);
    expect(idsB).toContain(keyOfB.body.id);
    expect(idsB).not.toContain(keyOfA.body.id);
    expect((listA.body.data as ListedKey[]).every((item) => item.orgId === orgA.orgId)).toBe(true);
    expect((listB.body.data as ListedKey[]).every((item) => item.orgId === orgB.orgId)).toBe(true);
    expect(listA.body.pagination.total).toBe(2);
    expect(listB.body.pagination.total).toBe(2);
  });
});
