import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

describe('GET /health', () => {
  it('answers ok without credentials, with a request id', async () => {
    const response = await api.request('GET', '/health');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ status: 'ok' });
    expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('unmatched requests', () => {
  it('answers 404 NOT_FOUND in the envelope for an unknown path', async () => {
    const response = await api.request('GET', '/v1/nothing-here');
    expect(response.status).toBe(404);
    expect(response.body.error).toMatchObject({ code: 'NOT_FOUND', status: 404 });
    expect(response.body.meta.requestId).toBe(response.headers.get('x-request-id'));
  });

  it('answers 405 with Allow for a known path and a wrong method', async () => {
    const response = await api.request('PUT', '/v1/chat/agents');
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET');
    expect(response.body.error.code).toBe('METHOD_NOT_ALLOWED');
  });
});
