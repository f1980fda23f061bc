import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type ApiResponse, type TestApi } from './support/api.ts';

let api: TestApi;
let key: string;
beforeAll(async () => {
  api = await startApi();
  ({ key } = await api.newOrg());
});
afterAll(() => api.close());

const agentBody = { fullName: 'Convention Agent', description: 'checks conventions', role: 'You are helpful.' };
const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The envelope exactly: no other fields at either level, details only when present. */
function expectEnvelope(response: ApiResponse, status: number, code: string): void {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  const body = response.body as Record<string, any>;
  expect(Object.keys(body).sort()).toEqual(['error', 'meta']);
  const errorKeys = Object.keys(body.error).sort();
  expect(errorKeys).toEqual(body.error.details === undefined ? ['code', 'message', 'status'] : ['code', 'details', 'message', 'status']);
  expect(Object.keys(body.meta).sort()).toEqual(['requestId', 'timestamp']);
  expect(body.error.code).toBe(code);
  expect(body.error.status).toBe(status);
  expect(typeof body.error.message).toBe('string');
  expect(body.error.message.length).toBeGreaterThan(0);
  if (body.error.details !== undefined) {
    expect(Array.isArray(body.error.details)).toBe(true);
    for (const detail of body.error.details) expect(detail).toEqual({ field: expect.any(String), message: expect.any(String) });
  }
  expect(body.meta.requestId).toBe(response.headers.get('x-request-id'));
  expect(body.meta.timestamp).toMatch(rfc3339);
  expect(Math.abs(Date.parse(body.meta.timestamp) - Date.now())).toBeLessThan(60_000);
  expectNoInternals(response.text);
}

function expectNoInternals(text: string): void {
  expect(text).not.toMatch(/\n\s+at /);
  expect(text).not.toMatch(/\bat .*\.(ts|js):\d+/);
  expect(text).not.toContain('node_modules');
  expect(text).not.toMatch(/\/work\/|file:\/\//);
  expect(text).not.toMatch(/"stack"/);
}

describe('x-request-id', () => {
  it('is on successful responses, a fresh id per request', async () => {
    // Act
    const first = await api.request('GET', '/v1/chat/agents', { key });
    const second = await api.request('GET', '/v1/chat/agents', { key });
    const created = await api.request('POST', '/v2/chat/agents', { key, body: agentBody });

    // Assess
    expect(first.status).toBe(200);
    expect(created.status).toBe(201);
    for (const response of [first, second, created]) expect(response.headers.get('x-request-id')).toMatch(uuid);
    expect(first.headers.get('x-request-id')).not.toBe(second.headers.get('x-request-id'));
  });

  it('is on a 204 with no body', async () => {
    // Prepare
    const created = await api.request('POST', '/v2/chat/agents', { key, body: agentBody });

    // Act
    const deleted = await api.request('DELETE', `/v1/chat/agents/${created.body.id}`, { key });

    // Assess
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect(deleted.headers.get('x-request-id')).toMatch(uuid);
  });

  it('is on every error response and equals meta.requestId', async () => {
    // Act
    const responses = await Promise.all([
      api.request('GET', '/v1/chat/agents'),
      api.request('GET', `/v1/chat/agents/${crypto.randomUUID()}`, { key }),
      api.request('POST', '/v2/chat/agents', { key, body: { fullName: '' } }),
      api.request('GET', '/v1/nowhere'),
    ]);

    // Assess
    expect(responses.map((response) => response.status)).toEqual([401, 404, 400, 404]);
    for (const response of responses) {
      expect(response.headers.get('x-request-id')).toMatch(uuid);
      expect(response.body.meta.requestId).toBe(response.headers.get('x-request-id'));
    }
  });
});

describe('request bodies', () => {
  it('answers 400 VALIDATION_ERROR to malformed JSON', async () => {
    // Act
    const response = await api.request('POST', '/v2/chat/agents', {
      key,
      rawBody: '{"fullName": "Broken",',
      headers: { 'content-type': 'application/json' },
    });

    // Assess
    expectEnvelope(response, 400, 'VALIDATION_ERROR');
    expect(response.text).not.toContain('Unexpected end');
  });

  it('answers 400 VALIDATION_ERROR to a missing body', async () => {
    // Act
    const response = await api.request('POST', '/v2/chat/agents', { key, headers: { 'content-type': 'application/json' } });

    // Assess
    expectEnvelope(response, 400, 'VALIDATION_ERROR');
  });

  it('answers 400 VALIDATION_ERROR with field details for an invalid body, and creates nothing', async () => {
    // Prepare
    const { key: ownKey } = await api.newOrg();

    // Act
    const response = await api.request('POST', '/v2/chat/agents', { key: ownKey, body: { ...agentBody, role: '   ', extra: 1 } });

    // Assess
    expectEnvelope(response, 400, 'VALIDATION_ERROR');
    const fields = (response.body.error.details as { field: string }[]).map((detail) => detail.field);
    expect(fields).toContain('role');
    expect((await api.request('GET', '/v1/chat/agents', { key: ownKey })).body.data).toEqual([]);
  });

  it('answers 413 PAYLOAD_TOO_LARGE to a body over 256 KiB, and accepts one just under', async () => {
    // Prepare
    const { key: ownKey } = await api.newOrg();
    const oversized = JSON.stringify({ ...agentBody, systemPrompt: 'x'.repeat(256 * 1024) });
    const padded = JSON.stringify(agentBody).replace(/}$/, `${' '.repeat(256 * 1024 - JSON.stringify(agentBody).length)}}`);

    // Act
    const tooLarge = await api.request('POST', '/v2/chat/agents', {
      key: ownKey,
      rawBody: oversized,
      headers: { 'content-type': 'application/json' },
    });
    const atLimit = await api.request('POST', '/v2/chat/agents', {
      key: ownKey,
      rawBody: padded,
      headers: { 'content-type': 'application/json' },
    });

    // Assess
    expect(Buffer.byteLength(padded)).toBe(256 * 1024);
    expectEnvelope(tooLarge, 413, 'PAYLOAD_TOO_LARGE');
    expect(atLimit.status).toBe(201);
    expect((await api.request('GET', '/v1/chat/agents', { key: ownKey })).body.pagination.total).toBe(1);
  });

  it('answers 415 UNSUPPORTED_MEDIA_TYPE to a text/plain body', async () => {
    // Act
    const response = await api.request('POST', '/v2/chat/agents', {
      key,
      rawBody: JSON.stringify(agentBody),
      headers: { 'content-type': 'text/plain' },
    });

    // Assess
    expectEnvelope(response, 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  it('accepts application/json with a charset parameter', async () => {
    // Act
    const response = await api.request('POST', '/v2/chat/agents', {
      key,
      rawBody: JSON.stringify(agentBody),
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });

    // Assess
    expect(response.status).toBe(201);
  });
});

describe('the error envelope', () => {
  it('has exactly the documented shape for every kind of error', async () => {
    // Prepare
    const { key: readOnly } = await api.newOrg(['agents:read']);

    // Act
    const unauthorized = await api.request('GET', '/v1/chat/agents', { key: 'apk_definitely-not-a-real-key-0000' });
    const forbidden = await api.request('POST', '/v2/chat/agents', { key: readOnly, body: agentBody });
    const notFound = await api.request('GET', `/v1/chat/agents/${crypto.randomUUID()}`, { key });
    const invalid = await api.request('POST', '/v2/chat/agents', { key, body: {} });
    const badQuery = await api.request('GET', '/v1/chat/agents?sort=bogus:sideways', { key });

    // Assess
    expectEnvelope(unauthorized, 401, 'UNAUTHORIZED');
    expectEnvelope(forbidden, 403, 'FORBIDDEN');
    expectEnvelope(notFound, 404, 'NOT_FOUND');
    expectEnvelope(invalid, 400, 'VALIDATION_ERROR');
    expect(invalid.body.error.details.length).toBeGreaterThan(0);
    expectEnvelope(badQuery, 400, 'VALIDATION_ERROR');
  });
});

describe('routing', () => {
  it('answers 404 NOT_FOUND in the envelope for an unknown route, with or without credentials', async () => {
    // Act
    const anonymous = await api.request('GET', '/v9/unknown/route');
    const authenticated = await api.request('POST', '/v1/chat/agents/extra/segments', { key, body: {} });

    // Assess
    expectEnvelope(anonymous, 404, 'NOT_FOUND');
    expectEnvelope(authenticated, 404, 'NOT_FOUND');
  });

  it('answers 405 METHOD_NOT_ALLOWED with Allow naming the methods of that path', async () => {
    // Act
    const onCollection = await api.request('DELETE', '/v1/chat/api-keys', { key });
    const onItem = await api.request('POST', `/v1/chat/agents/${crypto.randomUUID()}`, { key, body: agentBody });

    // Assess
    expectEnvelope(onCollection, 405, 'METHOD_NOT_ALLOWED');
    expect(onCollection.headers.get('allow')?.split(/,\s*/).sort()).toEqual(['GET', 'POST']);
    expectEnvelope(onItem, 405, 'METHOD_NOT_ALLOWED');
    expect(onItem.headers.get('allow')?.split(/,\s*/).sort()).toEqual(['DELETE', 'GET', 'PATCH']);
  });
});
