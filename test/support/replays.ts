/** What replay tests share: the tools, agent and conversations to replay, and a replay waited for until it has finished. */
import { expect } from 'vitest';
import type { TestApi } from './api.ts';
import { eventually } from './eventually.ts';

/** An API tool of one required string parameter, called at `<urlBase>/<value>`. */
export async function createApiTool(api: TestApi, key: string, name: string, method: 'GET' | 'POST', urlBase: string, property: string): Promise<string> {
  const tool = await api.request('POST', '/v1/chat/tools', {
    key,
    body: {
      name,
      description: `The ${name} endpoint`,
      type: 'API_TOOL',
      ajvPropertiesSchema: { type: 'object', properties: { [property]: { type: 'string' } }, required: [property] },
      apiTool: { url: `${urlBase}/{{${property}}}`, method, headers: {} },
    },
  });
  expect(tool.status, tool.text).toBe(201);
  return tool.body.id;
}

/** A `MANUAL` agent (its changes are drafts a replay can try), with `fields` over the defaults. */
export async function createAgent(api: TestApi, key: string, fields: object = {}): Promise<string> {
  const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Orders', description: 'Orders', role: 'You help with orders.', publishMode: 'MANUAL', ...fields } });
  expect(agent.status, agent.text).toBe(201);
  return agent.body.id;
}

/** A session of the agent with these user turns, each answered before the next. */
export async function converse(api: TestApi, key: string, agentId: string, turns: readonly string[]): Promise<string> {
  const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId } });
  expect(session.status, session.text).toBe(201);
  for (const content of turns) {
    const sent = await api.request('POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, { key, body: { content, stream: false } });
    expect(sent.status, sent.text).toBe(200);
  }
  return session.body.id;
}

/** The replay once COMPLETED or FAILED. */
export async function finishedReplay(api: TestApi, key: string, agentId: string, replayId: string): Promise<any> {
  const replay = await eventually(
    () => api.request('GET', `/v2/chat/agents/${agentId}/replays/${replayId}`, { key }),
    (response) => response.status !== 200 || ['COMPLETED', 'FAILED'].includes(response.body.status),
  );
  expect(replay.status, replay.text).toBe(200);
  return replay.body;
}
