/** What replay tests share: the tools, agent and conversations to replay, and a replay waited for until it has finished. */
import { createServer, type ServerResponse } from 'node:http';
import { expect } from 'vitest';
import { keys } from '../../shared/platform/store/keys.ts';
import { queryAll } from '../../shared/platform/store/query-all.ts';
import type { TestApi } from './api.ts';
import { testDocuments, testTableName } from './database.ts';
import { eventually } from './eventually.ts';
import { closeServer, listenOnLoopback } from './loopback-server.ts';

/** The items of the agent's partition whose sort key starts with `prefix`, every page. */
export function storedAgentItems(orgId: string, agentId: string, prefix: string): Promise<Record<string, any>[]> {
  return queryAll(testDocuments, {
    TableName: testTableName(),
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': keys.agentPartition(orgId, agentId), ':prefix': prefix },
  });
}

/**
 * The customer's tool API: records each request's path and answers `{path}` as JSON, except the requests `holds`
 * picks (from their path and how many times that path has come, this one included), which get no answer until closed.
 */
export async function startToolServer(holds: (path: string, times: number) => boolean = () => false) {
  const requests: string[] = [];
  const held: ServerResponse[] = [];
  const requestsTo = (path: string) => requests.filter((request) => request === path).length;
  const server = createServer((request, response) => {
    const path = request.url ?? '';
    requests.push(path);
    request.resume();
    request.on('end', () => {
      if (holds(path, requestsTo(path))) {
        held.push(response);
        return;
      }
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ path }));
    });
  });
  const base = `http://127.0.0.1:${await listenOnLoopback(server)}`;
  return {
    base,
    requests,
    requestsTo,
    close: async () => {
      for (const response of held) response.destroy();
      await closeServer(server);
    },
  };
}

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

/**
 * A new organization's agent whose sessions asked for the `probe` tool (at `<toolsBase>/probe/<value>`) with each of
 * `values`, one session each, and a draft, version 2, with the probe attached.
 */
export async function sessionsAskingFor(api: TestApi, toolsBase: string, values: readonly string[]) {
  const { orgId, key } = await api.newOrg();
  const probe = await createApiTool(api, key, 'probe', 'GET', `${toolsBase}/probe`, 'q');
  const agentId = await createAgent(api, key);
  const sessionIds: string[] = [];
  for (const value of values) sessionIds.push(await converse(api, key, agentId, [`Please run probe with {"q":"${value}"}`]));
  expect((await api.request('PATCH', `/v2/chat/agents/${agentId}`, { key, body: { tools: [{ toolId: probe }] } })).body.draftVersion).toBe(2);
  return { orgId, key, agentId, sessionIds };
}

/** Starts a replay of the agent (202), and gives its id. */
export async function startReplay(api: TestApi, key: string, agentId: string, body: object): Promise<string> {
  const started = await api.request('POST', `/v2/chat/agents/${agentId}/replays`, { key, body });
  expect(started.status, started.text).toBe(202);
  return started.body.id;
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
