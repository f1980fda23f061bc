import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { closeServer, listenOnLoopback } from '../support/loopback-server.ts';

/** Long enough that a request sent at 40 % of it is handled within it on a busy machine. */
const idleSeconds = 5;
let api: TestApi;
let slowServer: Server;
let slowUrl: string;

beforeAll(async () => {
  // A tool call that outlasts the window.
  slowServer = createServer((_request, response) => setTimeout(() => response.end('done'), idleSeconds * 1000 + 1_500));
  slowUrl = `http://127.0.0.1:${await listenOnLoopback(slowServer)}/slow`;
  api = await startApi({ SESSION_IDLE_TIMEOUT_SECONDS: String(idleSeconds), TOOL_TIMEOUT_MS: '10000' });
});
afterAll(async () => {
  await api.close();
  await closeServer(slowServer);
});

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function openSession(key: string, tools: string[] = []) {
  const agent = await api.request('POST', '/v2/chat/agents', {
    key,
    body: { fullName: 'A', description: 'A', role: 'A', tools: tools.map((toolId) => ({ toolId })) },
  });
  return (await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } })).body.id as string;
}

describe('session expiry after the inactivity window', () => {
  it('answers SESSION_EXPIRED (410) once idle, and the session is EXPIRED everywhere', async () => {
    const { key } = await api.newOrg();
    const sessionId = await openSession(key);
    await pause(idleSeconds * 1000 + 300);
    const listed = await api.request('GET', '/v1/chat/chat/sessions?state=EXPIRED', { key });
    expect(listed.body.data.map((session: { id: string }) => session.id)).toEqual([sessionId]);
    const refused = await api.request('POST', `/v1/chat/chat/sessions/${sessionId}/messages`, { key, body: { content: 'hi' } });
    expect(refused.status).toBe(410);
    expect(refused.body.error.code).toBe('SESSION_EXPIRED');
    const session = await api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key });
    expect(session.body).toMatchObject({ state: 'EXPIRED', endedReason: 'EXPIRED' });
    // Expired at the end of the window, not when someone happened to look.
    expect(Date.parse(session.body.endedAt) - Date.parse(session.body.lastActivityAt)).toBe(idleSeconds * 1000);
    const closed = await api.request('PATCH', `/v1/chat/chat/sessions/${sessionId}/close`, { key });
    expect(closed.body.state).toBe('EXPIRED');
  });

  it('counts activity: a session used within the window stays OPEN', async () => {
    const { key } = await api.newOrg();
    const sessionId = await openSession(key);
    let lastActivityAt = Date.parse((await api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key })).body.lastActivityAt);
    for (let round = 0; round < 3; round += 1) {
      // Paced from the activity the server recorded, not from when its answer arrived: a slow commit must not eat the margin.
      await pause(lastActivityAt + idleSeconds * 400 - Date.now());
      const response = await api.request('POST', `/v1/chat/chat/sessions/${sessionId}/messages`, { key, body: { content: 'still here', stream: false } });
      expect(response.status).toBe(200);
      lastActivityAt = Date.parse(response.body.assistantMessage.createdAt);
    }
    // More than a window has passed since the session opened: only the turns kept it open.
    expect((await api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key })).body.state).toBe('OPEN');
  });

  it('never expires a session in the middle of a turn longer than the window', async () => {
    const { key } = await api.newOrg();
    const tool = await api.request('POST', '/v1/chat/tools', {
      key,
      body: { name: 'SLOW', description: 'Slow', type: 'API_TOOL', apiTool: { url: slowUrl, method: 'GET' } },
    });
    const sessionId = await openSession(key, [tool.body.id]);
    const turn = api.request('POST', `/v1/chat/chat/sessions/${sessionId}/messages`, { key, body: { content: 'SLOW {}', stream: false } });
    await pause(idleSeconds * 1000 + 400);
    const during = await api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key });
    expect(during.body.state).toBe('OPEN');
    const finished = await turn;
    expect(finished.status).toBe(200);
    expect(finished.body.toolMessages[0].toolCall.status).toBe('SUCCESS');
    expect((await api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key })).body.state).toBe('OPEN');
  });
});
