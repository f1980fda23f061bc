/**
 * A deployment that runs no media worker (`mediaWorker` off, no MEDIA_WORKER_URL): what needs one is refused when it
 * is asked for, with a code that says why, rather than failing once the session exists.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startApi, type TestApi } from '../support/api.ts';

let api: TestApi;
beforeAll(async () => {
  delete process.env.MEDIA_WORKER_URL;
  api = await startApi();
});
afterAll(() => api?.close());

describe('a deployment without a media worker', () => {
  it('refuses a voice session (422 MEDIA_WORKER_NOT_CONFIGURED) and opens no session', async () => {
    const { key } = await api.newOrg();
    const agent = await api.request('POST', '/v2/chat/agents', {
      key,
      body: { fullName: 'Vox', description: 'Talks', role: 'You talk.', voiceEnabled: true, voicePipelineMode: 'pipeline' },
    });
    expect(agent.status, agent.text).toBe(201);

    const refused = await api.request('POST', '/v1/chat/voice/sessions', { key, body: { agentId: agent.body.id }, headers: { 'idempotency-key': crypto.randomUUID() } });
    expectError(refused, 422, 'MEDIA_WORKER_NOT_CONFIGURED');
    expect(refused.body.error.message).toContain('media worker');
    const sessions = await api.request('GET', '/v1/chat/chat/sessions?platform=WEB', { key });
    expect(sessions.body.data).toEqual([]);
  });
});
