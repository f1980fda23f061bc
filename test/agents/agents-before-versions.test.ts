/**
 * Agents stored before versions existed (issue 29): their item as the code of the time wrote it, with no
 * `publishMode`, `draftVersion` or `publishedVersion` and no version items. They read and run as `AUTO` agents; the
 * first change or publish keeps the stored configuration as version 1 (what their sessions ran until then) before
 * anything else, so it can be compared with and rolled back to. The built-in model calls a tool when asked for it by
 * name: whether the tool is offered tells which configuration answers.
 */
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../shared/platform/store/keys.ts';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { testDocuments, testTableName } from '../support/database.ts';
import { eventually } from '../support/eventually.ts';
import { closeServer } from '../support/loopback-server.ts';
import { createWeatherTool, startWeatherApi } from '../support/voice.ts';
import { Receiver } from '../support/webhook-receiver.ts';

let api: TestApi;
let weather: { url: string; server: Server };
const receiver = new Receiver();
let receiverUrl: string;
beforeAll(async () => {
  weather = await startWeatherApi();
  receiverUrl = await receiver.start();
  api = await startApi({}, { streamPoller: true, queues: true });
});
afterAll(async () => {
  await api.close();
  await receiver.close();
  await closeServer(weather.server);
  testDocuments.destroy();
});

const storedRole = 'You answered before versions existed.';

/** An organization with an agent written as the code before versions wrote it: the item alone, its tool's count raised with it. */
async function agentBeforeVersions(): Promise<{ key: string; agentId: string; toolId: string }> {
  const { orgId, key } = await api.newOrg();
  const toolId = await createWeatherTool(api, key, weather.url);
  const models = await api.request('GET', '/v1/chat/models?type=LLM', { key });
  const modelId = models.body.data.find((model: { isDefault: boolean }) => model.isDefault).id;
  const agentId = crypto.randomUUID();
  const at = new Date(Date.now() - 86_400_000).toISOString();
  const item = { id: agentId, orgId, fullName: 'Old timer', description: 'Stored before versions', role: storedRole, modelId, voiceEnabled: false, voicePipelineMode: null, tools: [{ toolId }], isActive: true, isPublic: false, createdAt: at, updatedAt: at };
  await testDocuments.send(
    new TransactWriteCommand({
      TransactItems: [
        { Put: { TableName: testTableName(), Item: { ...keys.agent(orgId, agentId), entity: 'agent', ...item }, ConditionExpression: 'attribute_not_exists(pk)' } },
        { Update: { TableName: testTableName(), Key: keys.tool(orgId, toolId), UpdateExpression: 'ADD attachCount :one', ExpressionAttributeValues: { ':one': 1 } } },
      ],
    }),
  );
  return { key, agentId, toolId };
}

/** A new session of the agent asks for the weather: its `agentVersion`, and whether the tool was called. */
async function askForWeather(key: string, agentId: string): Promise<{ agentVersion: number | undefined; calledTool: boolean }> {
  const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId } });
  expect(session.status, session.text).toBe(201);
  const sent = await api.request('POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, { key, body: { content: 'Please run get_weather with {"city":"Oslo"}', stream: false } });
  expect(sent.status, sent.text).toBe(200);
  const stored = await api.request('GET', `/api/v1/chat/sessions/${session.body.id}`, { key });
  return { agentVersion: stored.body.agentVersion, calledTool: sent.body.toolMessages.some((message: { toolCall: { name: string } }) => message.toolCall.name === 'get_weather') };
}

const versionsOf = async (key: string, agentId: string) => {
  const listed = await api.request('GET', `/v2/chat/agents/${agentId}/versions`, { key });
  expect(listed.status, listed.text).toBe(200);
  return listed.body;
};

describe('an agent stored before versions existed', () => {
  it('reads as an AUTO agent with no versions yet, and its sessions run', async () => {
    const { key, agentId } = await agentBeforeVersions();

    const agent = await api.request('GET', `/v2/chat/agents/${agentId}`, { key });
    const session = await askForWeather(key, agentId);

    expect(agent.status, agent.text).toBe(200);
    expect(agent.body).toMatchObject({ id: agentId, role: storedRole, publishMode: 'AUTO' });
    expect(agent.body.draftVersion).toBeUndefined();
    expect((await versionsOf(key, agentId)).pagination.total).toBe(0);
    expectError(await api.request('GET', `/v2/chat/agents/${agentId}/versions/1`, { key }), 404, 'NOT_FOUND');
    expect(session).toEqual({ agentVersion: undefined, calledTool: true });
  });

  it('keeps its stored configuration as version 1 on its first change, which is version 2, and rolls back to it', async () => {
    // Prepare
    const { key, agentId, toolId } = await agentBeforeVersions();
    const path = `/ok/agents/${agentId}`;
    const hook = await api.request('POST', '/v1/chat/webhooks', { key, body: { url: receiverUrl + path, events: ['agent.updated', 'agent.published'] } });
    receiver.secrets.set(path, [hook.body.secret]);

    // Act
    const changed = await api.request('PATCH', `/v2/chat/agents/${agentId}`, { key, body: { role: 'You answer with versions.', tools: [] } });
    const afterChange = await askForWeather(key, agentId);
    const rolledBack = await api.request('POST', `/v2/chat/agents/${agentId}/rollback`, { key, body: { version: 1 } });
    const afterRollback = await askForWeather(key, agentId);

    // Assess
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body).toMatchObject({ role: 'You answer with versions.', tools: [], draftVersion: 2, publishedVersion: 2 });
    const first = await api.request('GET', `/v2/chat/agents/${agentId}/versions/1`, { key });
    expect(first.body).toMatchObject({ number: 1, configuration: { role: storedRole, tools: [{ toolId }] }, tools: [expect.objectContaining({ id: toolId, name: 'get_weather' })] });
    const diff = await api.request('GET', `/v2/chat/agents/${agentId}/versions/2/diff?against=1`, { key });
    expect(diff.body.changes.map((change: { path: string }) => change.path)).toEqual(['role', `toolDefinitions.${toolId}`, 'tools[0]']);
    expect(afterChange).toEqual({ agentVersion: undefined, calledTool: false });
    expect(rolledBack.body).toMatchObject({ role: storedRole, tools: [{ toolId }], draftVersion: 3, publishedVersion: 3 });
    expect(afterRollback).toEqual({ agentVersion: undefined, calledTool: true });
    expect((await versionsOf(key, agentId)).data.map((version: { number: number }) => version.number)).toEqual([3, 2, 1]);
    // Keeping the stored configuration changes nothing: it is published, as a creation is, with no agent.updated.
    const receipts = await eventually(() => receiver.eventsFor(path), (found) => found.length >= 5);
    const events = receipts.map((receipt) => [receipt.body.type, receipt.body.data.version]);
    expect(events).toEqual(
      expect.arrayContaining([
        ['agent.published', 1],
        ['agent.updated', 2],
        ['agent.published', 2],
        ['agent.updated', 3],
        ['agent.published', 3],
      ]),
    );
    expect(events.filter(([type]) => type === 'agent.updated')).toHaveLength(2);
  });

  it('gets its stored configuration as version 1 when published', async () => {
    const { key, agentId } = await agentBeforeVersions();

    const published = await api.request('POST', `/v2/chat/agents/${agentId}/publish`, { key, body: {} });

    expect(published.status, published.text).toBe(200);
    expect(published.body).toMatchObject({ role: storedRole, draftVersion: 1, publishedVersion: 1 });
    expect((await versionsOf(key, agentId)).data).toEqual([expect.objectContaining({ number: 1, published: true, draft: true })]);
    expectError(await api.request('POST', `/v2/chat/agents/${agentId}/rollback`, { key, body: { version: 2 } }), 404, 'NOT_FOUND');
  });

  it('switched to MANUAL, keeps answering with its stored configuration until the change is published', async () => {
    const { key, agentId } = await agentBeforeVersions();

    const switched = await api.request('PATCH', `/v2/chat/agents/${agentId}`, { key, body: { publishMode: 'MANUAL', tools: [] } });
    const beforePublish = await askForWeather(key, agentId);
    await api.request('POST', `/v2/chat/agents/${agentId}/publish`, { key, body: {} });
    const afterPublish = await askForWeather(key, agentId);

    expect(switched.status, switched.text).toBe(200);
    expect(switched.body).toMatchObject({ publishMode: 'MANUAL', tools: [], draftVersion: 2, publishedVersion: 1 });
    expect(beforePublish).toEqual({ agentVersion: 1, calledTool: true });
    expect(afterPublish).toEqual({ agentVersion: 2, calledTool: false });
  });
});
