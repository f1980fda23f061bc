/**
 * An open event stream holds its credential to the same rule as a new request: a deleted key or an expired token
 * ends it within EVENT_STREAM_REAUTHORIZE_MS (plus a poll), with an error event, instead of after up to 14 minutes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { startJwks, type TestJwks } from '../support/jwks.ts';
import { SseClient } from '../support/sse-client.ts';

const reauthorizeMs = 250;
let api: TestApi;
let jwks: TestJwks;

beforeAll(async () => {
  jwks = await startJwks();
  api = await startApi(
    {
      EVENT_STREAM_POLL_MS: '50',
      EVENT_STREAM_REAUTHORIZE_MS: String(reauthorizeMs),
      JWT_JWKS_URL: jwks.url,
      JWT_ISSUER: jwks.issuer,
      JWT_AUDIENCE: jwks.audience,
      JWT_CLOCK_TOLERANCE_SECONDS: '0',
    },
    { streamPoller: true },
  );
});
afterAll(async () => {
  await api.close();
  await jwks.close();
});

const streamUrl = () => `${api.baseUrl}/v1/chat/events/stream`;

async function openSession(key: string): Promise<void> {
  const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'A', description: 'A', role: 'A' } });
  expect((await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } })).status).toBe(201);
}

/** The stream's last block as the error event it must be, and that nothing follows it. */
async function expectEndedWith(stream: SseClient, code: string, withinMs: number): Promise<void> {
  await stream.waitFor((client) => client.blocks.some((block) => block.event === 'error'), withinMs);
  await stream.ended;
  const last = stream.blocks.at(-1);
  expect(last?.event).toBe('error');
  expect(last?.id).toBeUndefined();
  expect(JSON.parse(last?.data as string)).toMatchObject({ error: { code, status: 401 }, meta: { requestId: expect.any(String) } });
}

describe('an open event stream', () => {
  it('keeps streaming while its key stays valid', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const stream = await SseClient.open(streamUrl(), { 'x-api-key': key });

    // Act: several re-checks pass, then an event.
    await new Promise((resolve) => setTimeout(resolve, reauthorizeMs * 4));
    await openSession(key);

    // Assess
    await stream.waitFor((client) => client.events.some((block) => block.event === 'session.created'));
    expect(stream.blocks.some((block) => block.event === 'error')).toBe(false);
    stream.close();
  });

  it('ends with an UNAUTHORIZED error event soon after its key is deleted, and sends nothing after', async () => {
    // Prepare
    const { orgId, key: adminKey } = await api.newOrg();
    const streamKey = await api.newKey(orgId, ['chat:read']);
    const keys = await api.request('GET', '/v1/chat/api-keys', { key: adminKey });
    const streamKeyId = keys.body.data.find((item: { scopes: string[] }) => item.scopes.join() === 'chat:read').id;
    const stream = await SseClient.open(streamUrl(), { 'x-api-key': streamKey });
    await openSession(adminKey);
    await stream.waitFor((client) => client.events.some((block) => block.event === 'session.created'));

    // Act
    expect((await api.request('DELETE', `/v1/chat/api-keys/${streamKeyId}`, { key: adminKey })).status).toBe(204);
    const deletedAt = Date.now();

    // Assess: seconds at most on a busy machine, where a stream not checked again would run for minutes
    await expectEndedWith(stream, 'UNAUTHORIZED', 10_000);
    expect(Date.now() - deletedAt).toBeLessThan(reauthorizeMs + 5_000);
    const eventsAtEnd = stream.events.length;
    await openSession(adminKey);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(stream.events).toHaveLength(eventsAtEnd);
    expect((await fetch(streamUrl(), { headers: { 'x-api-key': streamKey } })).status).toBe(401);
  });

  it('ends with an UNAUTHORIZED error event once its bearer token expires', async () => {
    // Prepare
    // Valid long enough to open the stream on a busy machine
    const token = await jwks.sign({ org_id: crypto.randomUUID(), scope: 'chat:read' }, { expiresIn: 4 });
    const stream = await SseClient.open(streamUrl(), { authorization: `Bearer ${token}` });
    const openedAt = Date.now();

    // Act / Assess
    await expectEndedWith(stream, 'UNAUTHORIZED', 10_000);
    expect(Date.now() - openedAt).toBeGreaterThanOrEqual(1_000);
  });
});
