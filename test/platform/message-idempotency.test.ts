/**
 * `Idempotency-Key` on sending a message (docs/sessions.md#idempotent-sends): a retry of a send whose answer was
 * lost (a gateway timeout, a dropped connection) gets the stored reply again, streamed or not, and the session
 * holds the message once. Through the API on DynamoDB Local.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { replyDeltas } from '../support/sse.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

async function newSession(key: string): Promise<string> {
  const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Helper', description: 'Helps', role: 'You help.' } });
  expect(agent.status).toBe(201);
  const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
  expect(session.status).toBe(201);
  return session.body.id as string;
}

const send = (key: string, sessionId: string, body: Record<string, unknown>, idempotencyKey: string) =>
  api.request('POST', `/v1/chat/chat/sessions/${sessionId}/messages`, { key, body, headers: { 'idempotency-key': idempotencyKey } });

async function history(key: string, sessionId: string): Promise<{ id: string; role: string; content: string }[]> {
  const response = await api.request('GET', `/api/v1/chat/sessions/${sessionId}/messages`, { key });
  expect(response.status).toBe(200);
  return response.body.data;
}

describe('POST /v1/chat/chat/sessions/{id}/messages with an Idempotency-Key', () => {
  it('answers a repeated non-streamed send with the same reply, and stores the message once', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const sessionId = await newSession(key);
    const idempotencyKey = crypto.randomUUID();

    // Act
    const first = await send(key, sessionId, { content: 'Hello once', stream: false }, idempotencyKey);
    const retry = await send(key, sessionId, { content: 'Hello once', stream: false }, idempotencyKey);

    // Assess
    expect(first.status, first.text).toBe(200);
    expect(retry.status, retry.text).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body).toEqual(first.body);
    expect((await history(key, sessionId)).map((message) => [message.id, message.role])).toEqual([
      [first.body.userMessage.id, 'USER'],
      [first.body.assistantMessage.id, 'ASSISTANT'],
    ]);
  });

  it('replays a streamed reply as the same events, and stores the message once', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const sessionId = await newSession(key);
    const idempotencyKey = crypto.randomUUID();

    // Act
    const first = await send(key, sessionId, { content: 'Stream once' }, idempotencyKey);
    const retry = await send(key, sessionId, { content: 'Stream once' }, idempotencyKey);

    // Assess
    expect(first.status, first.text).toBe(200);
    expect(retry.status, retry.text).toBe(200);
    expect(retry.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.text).toBe(first.text);
    const reply = replyDeltas(first.text);
    const stored = await history(key, sessionId);
    expect(stored.map((message) => message.role)).toEqual(['USER', 'ASSISTANT']);
    expect(stored[1]).toMatchObject({ id: reply[0]?.id, content: reply.map((event) => event.delta).join('') });
  });

  it('runs one of concurrent sends with one key; the others are told it is in progress or get its reply', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const sessionId = await newSession(key);
    const idempotencyKey = crypto.randomUUID();

    // Act
    const responses = await Promise.all(Array.from({ length: 4 }, () => send(key, sessionId, { content: 'Concurrent', stream: false }, idempotencyKey)));

    // Assess
    const ran = responses.filter((response) => response.status === 200 && response.headers.get('idempotent-replayed') === null);
    expect(ran).toHaveLength(1);
    for (const response of responses) {
      if (response.status === 409) expect(response.body.error.code).toBe('IDEMPOTENCY_IN_PROGRESS');
      else expect(response.body).toEqual(ran[0]?.body);
    }
    expect((await history(key, sessionId)).map((message) => message.role)).toEqual(['USER', 'ASSISTANT']);
  });

  it('refuses the key with another message, storing nothing more', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const sessionId = await newSession(key);
    const idempotencyKey = crypto.randomUUID();
    expect((await send(key, sessionId, { content: 'First', stream: false }, idempotencyKey)).status).toBe(200);

    // Act
    const reused = await send(key, sessionId, { content: 'Second', stream: false }, idempotencyKey);

    // Assess
    expectError(reused, 409, 'IDEMPOTENCY_KEY_REUSED');
    expect((await history(key, sessionId)).map((message) => message.content)).toHaveLength(2);
  });

  it('sends again without a key: each send is a new message', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const sessionId = await newSession(key);
    const path = `/v1/chat/chat/sessions/${sessionId}/messages`;

    // Act
    await api.request('POST', path, { key, body: { content: 'Twice', stream: false } });
    await api.request('POST', path, { key, body: { content: 'Twice', stream: false } });

    // Assess
    expect((await history(key, sessionId)).map((message) => message.role)).toEqual(['USER', 'ASSISTANT', 'USER', 'ASSISTANT']);
  });
});
