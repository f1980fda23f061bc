/** What replay tests share: a conversation to replay, and a replay waited for until it has finished. */
import { expect } from 'vitest';
import type { TestApi } from './api.ts';
import { eventually } from './eventually.ts';

/** A session of the agent in which each of `turns` was sent as a user message; its id. */
export async function converse(api: TestApi, key: string, agentId: string, turns: readonly string[]): Promise<string> {
  const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId } });
  expect(session.status, session.text).toBe(201);
  for (const content of turns) {
    const sent = await api.request('POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, { key, body: { content } });
    expect(sent.status, sent.text).toBe(200);
  }
  return session.body.id;
}

/** The replay once `COMPLETED` or `FAILED`. */
export async function finishedReplay(api: TestApi, key: string, agentId: string, replayId: string): Promise<any> {
  const replay = await eventually(
    () => api.request('GET', `/v2/chat/agents/${agentId}/replays/${replayId}`, { key }),
    (response) => response.status !== 200 || ['COMPLETED', 'FAILED'].includes(response.body.status),
  );
  expect(replay.status, replay.text).toBe(200);
  return replay.body;
}
