/**
 * The session's expiry item (the one whose TTL deletion tells the session-expiry consumer to look) is written when
 * the session opens and set again by the consumer when it lapses on a session active since, not by every turn
 * (issue 26: 2 write units a turn).
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../shared/platform/store/keys.ts';
import { startApi, type TestApi } from '../support/api.ts';

const idleSeconds = 3600;
let api: TestApi;
beforeAll(async () => {
  api = await startApi({ SESSION_IDLE_TIMEOUT_SECONDS: String(idleSeconds) });
});
afterAll(() => api.close());

describe('the expiry item of a session', () => {
  it('stays where the session opened it through turns, and is set a window after the last activity when it lapses', async () => {
    // Prepare
    const { orgId, key } = await api.newOrg();
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'A', description: 'A', role: 'A' } });
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
    const [{ runtime }, { createDocumentClient }, { expireAbandonedSession }] = await Promise.all([
      import('../../shared/runtime.ts'),
      import('../../shared/platform/store/dynamo.ts'),
      import('../../shared/conversations/sessions.ts'),
    ]);
    const deps = runtime();
    const client = createDocumentClient(deps.config);
    const expiresAt = async () =>
      (await client.send(new GetCommand({ TableName: deps.config.TABLE_NAME, Key: keys.sessionExpiry(orgId, session.body.id), ConsistentRead: true }))).Item?.expiresAt;
    expect(await expiresAt()).toBe(Math.ceil(Date.parse(session.body.createdAt) / 1000) + idleSeconds);
    // Earlier than any turn could set it, so that a turn moving it shows.
    const opened = Math.floor(Date.now() / 1000) - 60;
    await deps.sessions.armExpiry(orgId, session.body.id, opened);

    // Act: a turn, then what the session-expiry consumer does when the item's TTL deletion reaches it.
    const turn = await api.request('POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, { key, body: { content: 'Hello', stream: false } });
    const afterTurn = await expiresAt();
    await expireAbandonedSession(deps, orgId, session.body.id);

    // Assess
    expect(turn.status).toBe(200);
    expect(afterTurn).toBe(opened);
    const active = await deps.sessions.get(orgId, session.body.id);
    expect(active?.state).toBe('OPEN');
    expect(await expiresAt()).toBe(Math.ceil(Date.parse(active?.lastActivityAt as string) / 1000) + idleSeconds);
  });
});
