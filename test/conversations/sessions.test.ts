import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { replyDeltas, sseData } from '../support/sse.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

async function newAgent(key: string, overrides: Record<string, unknown> = {}) {
  const response = await api.request('POST', '/v2/chat/agents', {
    key,
    body: { fullName: 'Helper', description: 'Helps', role: 'You help {{name}}.', language: 'en-US', ...overrides },
  });
  expect(response.status).toBe(201);
  return response.body as { id: string };
}

async function newSession(key: string, agentId: string, body: Record<string, unknown> = {}) {
  const response = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId, ...body } });
  expect(response.status).toBe(201);
  return response.body as { id: string; state: string };
}

const send = (key: string, sessionId: string, body: Record<string, unknown>) =>
  api.request('POST', `/v1/chat/chat/sessions/${sessionId}/messages`, { key, body });

describe('POST /v1/chat/chat/sessions', () => {
  it('opens a CHAT session with the variables kept verbatim in metadata', async () => {
    const { key } = await api.newOrg();
    const agent = await newAgent(key);
    const response = await api.request('POST', '/v1/chat/chat/sessions', {
      key,
      body: { agentId: agent.id, platform: 'WEB', metadata: { userId: 'u1' }, sessionVariables: { name: 'Ada', n: { deep: [1] } } },
    });
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({
      agentId: agent.id,
      type: 'CHAT',
      direction: 'INBOUND',
      platform: 'WEB',
      state: 'OPEN',
      metadata: { userId: 'u1', sessionVariables: { name: 'Ada', n: { deep: [1] } } },
      messageCount: 0,
    });
    expect(response.body.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(response.body).not.toHaveProperty('nextSeq');
  });

  it('defaults the platform to SDK', async () => {
    const { key } = await api.newOrg();
    const session = await newSession(key, (await newAgent(key)).id);
    expect((session as { platform?: string }).platform).toBe('SDK');
  });

  it('answers 404 for an unknown agent and 422 AGENT_INACTIVE for an inactive one', async () => {
    const { key } = await api.newOrg();
    const missing = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: crypto.randomUUID() } });
    expect(missing.status).toBe(404);
    const agent = await newAgent(key);
    await api.request('PATCH', `/v2/chat/agents/${agent.id}`, { key, body: { isActive: false } });
    const inactive = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.id } });
    expect(inactive.status).toBe(422);
    expect(inactive.body.error.code).toBe('AGENT_INACTIVE');
  });

  it('rejects an unknown platform with 400', async () => {
    const { key } = await api.newOrg();
    const agent = await newAgent(key);
    const response = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.id, platform: 'FAX' } });
    expect(response.status).toBe(400);
    expect(response.body.error.details[0].field).toBe('platform');
  });
});

describe('POST /api/v1/chat/sessions (legacy)', () => {
  it('behaves like the new route and announces its deprecation on success and on errors', async () => {
    const { key } = await api.newOrg();
    const agent = await newAgent(key);
    const created = await api.request('POST', '/api/v1/chat/sessions', { key, body: { agentId: agent.id } });
    expect(created.status).toBe(201);
    expect(created.body.state).toBe('OPEN');
    const refused = await api.request('POST', '/api/v1/chat/sessions', { key, body: {} });
    expect(refused.status).toBe(400);
    for (const response of [created, refused]) {
      expect(response.headers.get('deprecation')).toMatch(/^@\d+$/);
      expect(response.headers.get('sunset')).toMatch(/GMT$/);
      expect(response.headers.get('link')).toBe('</v1/chat/chat/sessions>; rel="successor-version"');
    }
    const current = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.id } });
    expect(current.headers.get('deprecation')).toBeNull();
  });
});

describe('POST /v1/chat/chat/sessions/{id}/messages', () => {
  it('streams the reply as exact SSE frames whose deltas make up the persisted message', async () => {
    const { key } = await api.newOrg();
    const session = await newSession(key, (await newAgent(key)).id);
    const response = await send(key, session.id, { content: 'Hello there' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    for (const frame of sseData(response.text).slice(0, -1)) expect(Object.keys(JSON.parse(frame))).toEqual(['id', 'delta']);
    const deltas = replyDeltas(response.text);
    expect(deltas.length).toBeGreaterThan(3);
    expect(new Set(deltas.map((delta) => delta.id)).size).toBe(1);
    expect(deltas[0]?.id).toMatch(/^msg_/);
    const history = await api.request('GET', `/api/v1/chat/sessions/${session.id}/messages`, { key });
    expect(history.status).toBe(200);
    const [user, assistant] = history.body.data;
    expect(user).toMatchObject({ role: 'USER', content: 'Hello there', sessionId: session.id });
    expect(assistant).toMatchObject({ id: deltas[0]?.id, role: 'ASSISTANT', content: deltas.map((delta) => delta.delta).join('') });
    expect(assistant.content).toContain('Hello there');
  });

  it('answers JSON with the user and assistant messages when stream is false, with timings', async () => {
    const { key } = await api.newOrg();
    const session = await newSession(key, (await newAgent(key)).id);
    const response = await send(key, session.id, { content: 'Hi', stream: false, metadata: { channel: 'test' } });
    expect(response.status).toBe(200);
    expect(response.body.userMessage).toMatchObject({ role: 'USER', content: 'Hi', metadata: { channel: 'test' } });
    expect(response.body.toolMessages).toEqual([]);
    const timings = response.body.assistantMessage.metadata.timings;
    expect(timings).toMatchObject({ tools: [] });
    for (const field of ['modelFirstTokenMs', 'modelTotalMs', 'platformMs', 'totalMs']) expect(timings[field]).toBeGreaterThanOrEqual(0);
    expect(timings.totalMs).toBeGreaterThanOrEqual(timings.modelTotalMs);
  });

  it('validates the body: content required, non-empty, bounded', async () => {
    const { key } = await api.newOrg();
    const session = await newSession(key, (await newAgent(key)).id);
    for (const body of [{}, { content: '   ' }, { content: 'x'.repeat(32_001) }, { content: 'hi', stream: 'yes' }]) {
      const response = await send(key, session.id, body);
      expect(response.status, JSON.stringify(body).slice(0, 40)).toBe(400);
    }
  });

  it('answers 404 SESSION_NOT_FOUND for an unknown session and for another organization’s', async () => {
    const owner = await api.newOrg();
    const stranger = await api.newOrg();
    const session = await newSession(owner.key, (await newAgent(owner.key)).id);
    for (const [key, id] of [[owner.key, crypto.randomUUID()], [stranger.key, session.id]] as const) {
      const response = await send(key, id, { content: 'hi' });
      expect(response.status).toBe(404);
      expect(response.body.error.code).toBe('SESSION_NOT_FOUND');
    }
    expect((await api.request('GET', `/api/v1/chat/sessions/${session.id}`, { key: stranger.key })).status).toBe(404);
    expect((await api.request('GET', `/api/v1/chat/sessions/${session.id}/messages`, { key: stranger.key })).status).toBe(404);
    expect((await api.request('PATCH', `/v1/chat/chat/sessions/${session.id}/close`, { key: stranger.key })).status).toBe(404);
  });

  it('persists both of two concurrent sends, one turn after the other', async () => {
    const { key } = await api.newOrg();
    const session = await newSession(key, (await newAgent(key)).id);
    const [first, second] = await Promise.all([send(key, session.id, { content: 'first' }), send(key, session.id, { content: 'second' })]);
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    const history = (await api.request('GET', `/api/v1/chat/sessions/${session.id}/messages`, { key })).body.data as { role: string; content: string }[];
    expect(history.map((message) => message.role)).toEqual(['USER', 'ASSISTANT', 'USER', 'ASSISTANT']);
    // Each reply follows its own question: no interleaving.
    expect(history[1]?.content).toContain(history[0]?.content);
    expect(history[3]?.content).toContain(history[2]?.content);
    const replies = [first, second].map((response) => replyDeltas(response.text).map((delta) => delta.delta).join(''));
    expect(replies.sort()).toEqual([history[1]?.content, history[3]?.content].sort());
  });

  it('lets the agent end the conversation on goodbye: the session becomes CLOSED', async () => {
    const { key } = await api.newOrg();
    const session = await newSession(key, (await newAgent(key)).id);
    const response = await send(key, session.id, { content: 'ok, bye!' });
    expect(response.status).toBe(200);
    expect(replyDeltas(response.text).map((delta) => delta.delta).join('')).toMatch(/goodbye/i);
    const closed = await api.request('GET', `/api/v1/chat/sessions/${session.id}`, { key });
    expect(closed.body).toMatchObject({ state: 'CLOSED', endedReason: 'AGENT_ENDED' });
    expect(closed.body.endedAt).toBeDefined();
    const after = await send(key, session.id, { content: 'hello?' });
    expect(after.status).toBe(409);
    expect(after.body.error.code).toBe('INVALID_SESSION');
  });
});

describe('PATCH /v1/chat/chat/sessions/{id}/close', () => {
  it('closes once and is idempotent afterwards; sends are then INVALID_SESSION', async () => {
    const { key } = await api.newOrg();
    const session = await newSession(key, (await newAgent(key)).id);
    const closed = await api.request('PATCH', `/v1/chat/chat/sessions/${session.id}/close`, { key });
    expect(closed.status).toBe(200);
    expect(closed.body).toMatchObject({ id: session.id, state: 'CLOSED', endedReason: 'USER_CLOSED' });
    const again = await api.request('PATCH', `/v1/chat/chat/sessions/${session.id}/close`, { key });
    expect(again.status).toBe(200);
    expect(again.body.endedAt).toBe(closed.body.endedAt);
    const refused = await send(key, session.id, { content: 'still there?' });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('INVALID_SESSION');
  });
});

describe('GET /v1/chat/chat/sessions', () => {
  it('filters by agent, state and platform, newest first, paginated', async () => {
    const { key } = await api.newOrg();
    const [a, b] = [await newAgent(key), await newAgent(key)];
    const s1 = await newSession(key, a.id, { platform: 'WEB' });
    const s2 = await newSession(key, a.id);
    const s3 = await newSession(key, b.id);
    await api.request('PATCH', `/v1/chat/chat/sessions/${s2.id}/close`, { key });
    const ids = async (query: string) =>
      ((await api.request('GET', `/v1/chat/chat/sessions${query}`, { key })).body.data as { id: string }[]).map((session) => session.id);
    expect(await ids('')).toEqual([s3.id, s2.id, s1.id]);
    expect(await ids('?sort=createdAt:asc')).toEqual([s1.id, s2.id, s3.id]);
    expect(await ids(`?agentId=${a.id}`)).toEqual([s2.id, s1.id]);
    expect(await ids('?state=CLOSED')).toEqual([s2.id]);
    expect(await ids('?state=OPEN')).toEqual([s3.id, s1.id]);
    expect(await ids('?platform=WEB')).toEqual([s1.id]);
    const page = await api.request('GET', '/v1/chat/chat/sessions?limit=2&page=2', { key });
    expect(page.body.pagination).toEqual({ page: 2, limit: 2, total: 3, totalPages: 2 });
    expect((await api.request('GET', '/v1/chat/chat/sessions?state=GONE', { key })).status).toBe(400);
  });

  it('never lists another organization’s sessions', async () => {
    const one = await api.newOrg();
    const other = await api.newOrg();
    await newSession(one.key, (await newAgent(one.key)).id);
    const listed = await api.request('GET', '/v1/chat/chat/sessions', { key: other.key });
    expect(listed.body.data).toEqual([]);
  });

  it('needs chat:read, and sending needs chat:write', async () => {
    const { orgId, key } = await api.newOrg();
    const session = await newSession(key, (await newAgent(key)).id);
    const reader = await api.newKey(orgId, ['chat:read']);
    expect((await api.request('GET', '/v1/chat/chat/sessions', { key: reader })).status).toBe(200);
    expect((await send(reader, session.id, { content: 'hi' })).status).toBe(403);
    const agentsOnly = await api.newKey(orgId, ['agents:read']);
    expect((await api.request('GET', '/v1/chat/chat/sessions', { key: agentsOnly })).status).toBe(403);
  });
});

describe('sending with a key this process has seen before', () => {
  it('refuses the key the moment it is deleted: 401, never a reply or a 404', async () => {
    const { orgId, key } = await api.newOrg();
    const session = await newSession(key, (await newAgent(key)).id);
    const sender = await api.newKey(orgId, ['chat:write']);
    expect((await send(sender, session.id, { content: 'first', stream: false })).status).toBe(200);
    const keys = await api.request('GET', '/v1/chat/api-keys?limit=100', { key });
    const senderId = keys.body.data.find((entry: { prefix: string }) => sender.startsWith(entry.prefix)).id;
    expect((await api.request('DELETE', `/v1/chat/api-keys/${senderId}`, { key })).status).toBe(204);
    for (const sessionId of [session.id, crypto.randomUUID()]) {
      const refused = await send(sender, sessionId, { content: 'after deletion' });
      expect(refused.status).toBe(401);
      expect(refused.body.error.code).toBe('UNAUTHORIZED');
    }
    const history = await api.request('GET', `/api/v1/chat/sessions/${session.id}/messages`, { key });
    expect(history.body.data.map((message: { content: string }) => message.content)).not.toContain('after deletion');
  });
});

describe('GET /api/v1/chat/sessions/{id}/messages', () => {
  it('pages through the history in order, with exact totals, and an empty page past the end', async () => {
    // Prepare: 7 turns, 14 messages.
    const { key } = await api.newOrg();
    const session = await newSession(key, (await newAgent(key)).id);
    for (let turn = 1; turn <= 7; turn += 1) expect((await send(key, session.id, { content: `message ${turn}`, stream: false })).status).toBe(200);
    const path = `/api/v1/chat/sessions/${session.id}/messages`;
    const whole = (await api.request('GET', `${path}?limit=100`, { key })).body;

    // Act
    const pages = await Promise.all([1, 2, 3, 4].map((page) => api.request('GET', `${path}?limit=5&page=${page}`, { key })));

    // Assess
    expect(whole.data.map((message: { content: string }) => message.content).filter((content: string) => content.startsWith('message'))).toEqual(
      [1, 2, 3, 4, 5, 6, 7].map((turn) => `message ${turn}`),
    );
    expect(pages.map((page) => page.body.pagination)).toEqual([1, 2, 3, 4].map((page) => ({ page, limit: 5, total: 14, totalPages: 3 })));
    expect(pages.flatMap((page) => page.body.data)).toEqual(whole.data);
    expect(pages.map((page) => page.body.data.length)).toEqual([5, 5, 4, 0]);
  });
});
