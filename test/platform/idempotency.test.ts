import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

const agentBody = { fullName: 'Idempotent Agent', description: 'created once', role: 'You are helpful.' };

const newIdempotencyKey = () => `test-${crypto.randomUUID()}`;

async function agentIds(key: string): Promise<string[]> {
  const response = await api.request('GET', '/v1/chat/agents?limit=100', { key });
  expect(response.status).toBe(200);
  return response.body.data.map((agent: { id: string }) => agent.id);
}

describe('Idempotency-Key on POST /v2/chat/agents', () => {
  it('replays the first response to a repeat with the same body and creates one agent', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const headers = { 'idempotency-key': newIdempotencyKey() };

    // Act
    const first = await api.request('POST', '/v2/chat/agents', { key, body: agentBody, headers });
    const second = await api.request('POST', '/v2/chat/agents', { key, body: agentBody, headers });

    // Assess
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.body).toEqual(first.body);
    expect(second.body.id).toBe(first.body.id);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.headers.get('content-type')).toMatch(/^application\/json/);
    expect(second.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'));
    expect(await agentIds(key)).toEqual([first.body.id]);
  });

  it('creates a new agent for each request without the header', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const first = await api.request('POST', '/v2/chat/agents', { key, body: agentBody });
    const second = await api.request('POST', '/v2/chat/agents', { key, body: agentBody });

    // Assess
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.body.id).not.toBe(first.body.id);
    expect((await agentIds(key)).sort()).toEqual([first.body.id, second.body.id].sort());
  });

  it('answers 409 IDEMPOTENCY_KEY_REUSED when the key comes back with a different body', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const headers = { 'idempotency-key': newIdempotencyKey() };
    const first = await api.request('POST', '/v2/chat/agents', { key, body: agentBody, headers });
    expect(first.status).toBe(201);

    // Act
    const reused = await api.request('POST', '/v2/chat/agents', { key, body: { ...agentBody, fullName: 'Someone Else' }, headers });

    // Assess
    expect(reused.status).toBe(409);
    expect(reused.body.error).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED', status: 409 });
    expect(reused.headers.get('idempotent-replayed')).toBeNull();
    expect(await agentIds(key)).toEqual([first.body.id]);
  });

  it('lets exactly one of ten concurrent requests with one key create the agent', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const headers = { 'idempotency-key': newIdempotencyKey() };

    // Act
    const responses = await Promise.all(
      Array.from({ length: 10 }, () => api.request('POST', '/v2/chat/agents', { key, body: agentBody, headers })),
    );

    // Assess
    const created = responses.filter((response) => response.status === 201);
    const inProgress = responses.filter((response) => response.status === 409);
    expect(created.length + inProgress.length).toBe(10);
    expect(created.length).toBeGreaterThanOrEqual(1);
    expect(new Set(created.map((response) => response.body.id)).size).toBe(1);
    for (const response of inProgress) expect(response.body.error.code).toBe('IDEMPOTENCY_IN_PROGRESS');
    const originals = created.filter((response) => response.headers.get('idempotent-replayed') !== 'true');
    expect(originals).toHaveLength(1);
    const ids = await agentIds(key);
    expect(ids).toEqual([created[0]?.body.id]);

    const later = await api.request('POST', '/v2/chat/agents', { key, body: agentBody, headers });
    expect(later.status).toBe(201);
    expect(later.body.id).toBe(ids[0]);
    expect(later.headers.get('idempotent-replayed')).toBe('true');
  });

  it('does not burn the key on a request that fails validation', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const headers = { 'idempotency-key': newIdempotencyKey() };
    const invalid = await api.request('POST', '/v2/chat/agents', { key, body: { ...agentBody, fullName: '' }, headers });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.code).toBe('VALIDATION_ERROR');

    // Act
    const valid = await api.request('POST', '/v2/chat/agents', { key, body: agentBody, headers });

    // Assess
    expect(valid.status).toBe(201);
    expect(valid.headers.get('idempotent-replayed')).toBeNull();
    expect(await agentIds(key)).toEqual([valid.body.id]);
  });

  it('does not burn the key on a request that fails inside the operation', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const headers = { 'idempotency-key': newIdempotencyKey() };
    // Passes the body schema, then the operation refuses it: voiceEnabled needs a voicePipelineMode.
    const refused = await api.request('POST', '/v2/chat/agents', { key, body: { ...agentBody, voiceEnabled: true }, headers });
    expect(refused.status).toBeGreaterThanOrEqual(400);
    expect(refused.status).toBeLessThan(500);

    // Act
    const retried = await api.request('POST', '/v2/chat/agents', { key, body: { ...agentBody, voiceEnabled: true }, headers });
    const fixed = await api.request('POST', '/v2/chat/agents', { key, body: agentBody, headers });

    // Assess
    expect(retried.status).toBe(refused.status);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(fixed.status).toBe(201);
    expect(await agentIds(key)).toEqual([fixed.body.id]);
  });

  it('keeps keys per organization: org B can use the same key string independently', async () => {
    // Prepare
    const orgA = await api.newOrg();
    const orgB = await api.newOrg();
    const headers = { 'idempotency-key': newIdempotencyKey() };
    const inA = await api.request('POST', '/v2/chat/agents', { key: orgA.key, body: agentBody, headers });
    expect(inA.status).toBe(201);

    // Act
    const sameBodyInB = await api.request('POST', '/v2/chat/agents', { key: orgB.key, body: agentBody, headers });
    const otherBodyInB = await api.request('POST', '/v2/chat/agents', {
      key: orgB.key,
      body: { ...agentBody, fullName: 'B Agent' },
      headers: { 'idempotency-key': `${headers['idempotency-key']}-b` },
    });

    // Assess
    expect(sameBodyInB.status).toBe(201);
    expect(sameBodyInB.headers.get('idempotent-replayed')).toBeNull();
    expect(sameBodyInB.body.id).not.toBe(inA.body.id);
    expect(sameBodyInB.body.orgId).toBe(orgB.orgId);
    expect(otherBodyInB.status).toBe(201);
    expect(await agentIds(orgA.key)).toEqual([inA.body.id]);
    expect((await agentIds(orgB.key)).sort()).toEqual([sameBodyInB.body.id, otherBodyInB.body.id].sort());
  });

  it.each([
    ['300 characters long', 'k'.repeat(300)],
    ['containing spaces', 'has some spaces'],
    ['containing a slash', 'a/b'],
  ])('answers 400 VALIDATION_ERROR to an Idempotency-Key %s, creating nothing', async (_label, value) => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('POST', '/v2/chat/agents', { key, body: agentBody, headers: { 'idempotency-key': value } });

    // Assess
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('VALIDATION_ERROR');
    expect(await agentIds(key)).toEqual([]);
  });

  it('accepts a 255-character key', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const headers = { 'idempotency-key': `${crypto.randomUUID()}${'k'.repeat(255 - 36)}` };

    // Act
    const first = await api.request('POST', '/v2/chat/agents', { key, body: agentBody, headers });
    const second = await api.request('POST', '/v2/chat/agents', { key, body: agentBody, headers });

    // Assess
    expect(first.status).toBe(201);
    expect(second.body.id).toBe(first.body.id);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
  });
});

describe('Idempotency-Key on POST /v1/chat/api-keys', () => {
  it('returns the same key on a replay instead of issuing a second one', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const headers = { 'idempotency-key': newIdempotencyKey() };
    const body = { name: 'replayed', scopes: ['agents:read'] };

    // Act
    const first = await api.request('POST', '/v1/chat/api-keys', { key, body, headers });
    const second = await api.request('POST', '/v1/chat/api-keys', { key, body, headers });

    // Assess
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.body.id).toBe(first.body.id);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    const listed = await api.request('GET', '/v1/chat/api-keys?limit=100', { key });
    expect(listed.body.data.filter((item: { name: string }) => item.name === 'replayed')).toHaveLength(1);
  });
});
