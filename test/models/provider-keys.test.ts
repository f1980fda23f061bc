import { readFileSync } from 'node:fs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runtime } from '../../shared/runtime.ts';
import { keys } from '../../shared/platform/store/keys.ts';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { startAnthropicStub, type AnthropicStub } from '../support/anthropic-stub.ts';
import { startOpenAIStub, stubText, type OpenAIStub } from '../support/openai-stub.ts';
import { replyDeltas } from '../support/sse.ts';

const documented = JSON.parse(readFileSync(new URL('../fixtures/anthropic/streaming-tool-use.json', import.meta.url), 'utf8')) as { response: string };

const orgKey = 'sk-org-a-0123456789abcdef';
const anthropicKey = 'sk-ant-api03-org-a-secret-WXYZ';

let api: TestApi;
let openai: OpenAIStub;
let anthropic: AnthropicStub;

beforeAll(async () => {
  // The stubs take only the organization's key; the deployment has no OpenAI-compatible provider of its own.
  openai = await startOpenAIStub({ apiKey: orgKey, tokens: 5 });
  anthropic = await startAnthropicStub({
    apiKey: anthropicKey,
    // The question gets Anthropic's documented answer (a get_weather call); the tool's result, text.
    answer: (body) => (body.messages.length === 1 && body.tools?.some((tool) => tool.name === 'get_weather') ? { replay: documented.response } : { text: 'It is sunny in San Francisco.' }),
  });
  api = await startApi();
});
afterAll(async () => {
  await api?.close();
  await openai?.close();
  await anthropic?.close();
});

const putKey = (key: string, provider: string, body: object) => api.request('PUT', `/v1/chat/provider-keys/${provider}`, { key, body });

async function ownModel(key: string, name: string): Promise<{ id: string; provider: string; source: string }> {
  const models = await api.request('GET', '/v1/chat/models?source=organization&limit=100', { key });
  const model = models.body.data.find((candidate: { name: string }) => candidate.name === name);
  expect(model, JSON.stringify(models.body)).toBeDefined();
  return model;
}

describe('storing an organization\'s provider keys', () => {
  it('keeps the key sealed and shows only its last four characters, on PUT, GET and the list', async () => {
    const { orgId, key } = await api.newOrg();
    const put = await putKey(key, 'openai-compatible', { apiKey: orgKey, baseUrl: openai.baseUrl, models: ['org-gpt'] });
    expect(put.status, put.text).toBe(200);
    expect(put.body).toMatchObject({ provider: 'openai-compatible', apiKeyHint: '…cdef', baseUrl: openai.baseUrl, models: ['org-gpt'] });
    const got = await api.request('GET', '/v1/chat/provider-keys/openai-compatible', { key });
    expect(got.body).toEqual(put.body);
    const listed = await api.request('GET', '/v1/chat/provider-keys', { key });
    expect(listed.body.data).toEqual([put.body]);
    for (const response of [put, got, listed]) expect(response.text).not.toContain(orgKey.slice(0, 12));
    const item = await runtime().documentClient.send(new GetCommand({ TableName: runtime().config.TABLE_NAME, Key: keys.providerKey(orgId, 'openai-compatible') }));
    expect(item.Item?.apiKey).toMatch(/^sealed:/);
    expect(JSON.stringify(item.Item)).not.toContain(orgKey);
  });

  it('replaces a key whole (its first createdAt kept) and deletes it', async () => {
    const { key } = await api.newOrg();
    const first = await putKey(key, 'anthropic', { apiKey: anthropicKey, models: ['claude-sonnet-4-5'] });
    const second = await putKey(key, 'anthropic', { apiKey: 'sk-ant-api03-rotated-9876', models: ['claude-haiku-4-5'], baseUrl: anthropic.baseUrl });
    expect(second.body).toMatchObject({ apiKeyHint: '…9876', models: ['claude-haiku-4-5'], baseUrl: anthropic.baseUrl, createdAt: first.body.createdAt });
    const third = await putKey(key, 'anthropic', { apiKey: anthropicKey, models: ['claude-sonnet-4-5'] });
    expect(third.body.baseUrl).toBeUndefined();
    expect((await api.request('DELETE', '/v1/chat/provider-keys/anthropic', { key })).status).toBe(204);
    expectError(await api.request('GET', '/v1/chat/provider-keys/anthropic', { key }), 404, 'NOT_FOUND');
    expectError(await api.request('DELETE', '/v1/chat/provider-keys/anthropic', { key }), 404, 'NOT_FOUND');
  });

  it('stores speech keys (for the media worker) without adding models', async () => {
    const { key } = await api.newOrg();
    for (const provider of ['elevenlabs', 'deepgram', 'cartesia']) {
      const put = await putKey(key, provider, { apiKey: `${provider}-key-0123456789` });
      expect(put.status, put.text).toBe(200);
      expect(put.body).toEqual({ provider, apiKeyHint: '…6789', createdAt: expect.any(String), updatedAt: expect.any(String) });
    }
    const models = await api.request('GET', '/v1/chat/models?source=organization', { key });
    expect(models.body.data).toEqual([]);
  });

  it('refuses what a provider does not take, an unknown provider, a base URL the egress guard refuses, and a caller without models:write', async () => {
    const { orgId, key } = await api.newOrg();
    expectError(await putKey(key, 'openai-compatible', { apiKey: orgKey, models: ['m'] }), 400, 'VALIDATION_ERROR', 'baseUrl');
    expectError(await putKey(key, 'anthropic', { apiKey: anthropicKey }), 400, 'VALIDATION_ERROR', 'models');
    expectError(await putKey(key, 'elevenlabs', { apiKey: 'elevenlabs-key-0123', models: ['m'] }), 400, 'VALIDATION_ERROR', 'models');
    expectError(await putKey(key, 'openai-compatible', { apiKey: orgKey, baseUrl: 'http://169.254.169.254/v1', models: ['m'] }), 400, 'VALIDATION_ERROR', 'baseUrl');
    const loopback = await putKey(key, 'openai-compatible', { apiKey: orgKey, baseUrl: 'http://127.0.0.1:80/v1', models: ['m'] });
    expectError(loopback, 400, 'VALIDATION_ERROR', 'baseUrl');
    expect(loopback.body.error.message).toContain('LOOPBACK_EGRESS_PORTS');
    expectError(await putKey(key, 'openai-compatible', { apiKey: 'short', baseUrl: openai.baseUrl, models: ['m'] }), 400, 'VALIDATION_ERROR', 'apiKey');
    // A provider the API does not know is not a resource, as an id that is not one.
    expectError(await putKey(key, 'mistral', { apiKey: orgKey }), 404, 'NOT_FOUND');
    const reader = await api.newKey(orgId, ['models:read']);
    expectError(await putKey(reader, 'anthropic', { apiKey: anthropicKey, models: ['m'] }), 403, 'FORBIDDEN');
    expect((await api.request('GET', '/v1/chat/provider-keys', { key: reader })).status).toBe(200);
  });
});

describe('an organization\'s own models', () => {
  it('are in its catalog, marked as its own, and in no other organization\'s', async () => {
    const a = await api.newOrg();
    const b = await api.newOrg();
    await putKey(a.key, 'openai-compatible', { apiKey: orgKey, baseUrl: openai.baseUrl, models: ['org-gpt', 'org-gpt-mini'] });
    await putKey(a.key, 'anthropic', { apiKey: anthropicKey, models: ['claude-sonnet-4-5'] });
    const catalog = await api.request('GET', '/v1/chat/models?limit=100', { key: a.key });
    const own = catalog.body.data.filter((model: { source: string }) => model.source === 'organization');
    expect(own.map((model: { provider: string; name: string }) => `${model.provider}/${model.name}`)).toEqual([
      'anthropic/claude-sonnet-4-5',
      'openai-compatible/org-gpt',
      'openai-compatible/org-gpt-mini',
    ]);
    expect(own.every((model: { type: string; isDefault: boolean }) => model.type === 'LLM' && !model.isDefault)).toBe(true);
    expect(catalog.body.data.find((model: { name: string }) => model.name === 'builtin-assistant')).toMatchObject({ source: 'deployment' });

    const other = await api.request('GET', '/v1/chat/models?limit=100', { key: b.key });
    expect(other.body.data.some((model: { source: string }) => model.source === 'organization')).toBe(false);
    expectError(await api.request('GET', '/v1/chat/provider-keys/openai-compatible', { key: b.key }), 404, 'NOT_FOUND');
    // Another organization's model id is not in B's catalog: B's agent cannot use A's key.
    const stolen = await api.request('POST', '/v2/chat/agents', { key: b.key, body: { fullName: 'B', description: 'B', role: 'B', modelId: own[1].id } });
    expectError(stolen, 422, 'MODELS_NOT_FOUND', 'modelId');
    // The same names under B's own key are other models.
    await putKey(b.key, 'openai-compatible', { apiKey: orgKey, baseUrl: openai.baseUrl, models: ['org-gpt'] });
    expect((await ownModel(b.key, 'org-gpt')).id).not.toBe(own[1].id);
  });

  it('answer a chat turn through the OpenAI-compatible endpoint with the organization\'s key, and leave with the key', async () => {
    const { key } = await api.newOrg();
    await putKey(key, 'openai-compatible', { apiKey: orgKey, baseUrl: openai.baseUrl, models: ['org-gpt'] });
    const model = await ownModel(key, 'org-gpt');
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'A', description: 'A', role: 'Be brief.', modelId: model.id } });
    expect(agent.status, agent.text).toBe(201);
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
    expect(session.status, session.text).toBe(201);
    const before = openai.requests.length;
    const reply = await api.request('POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, { key, body: { content: 'hello' } });
    expect(replyDeltas(reply.text).map((delta) => delta.delta).join('')).toBe(stubText(5));
    const request = openai.requests[before];
    expect(request?.headers.authorization).toBe(`Bearer ${orgKey}`);
    expect(request?.body.model).toBe('org-gpt');
    const messages = await api.request('GET', `/api/v1/chat/sessions/${session.body.id}/messages`, { key });
    expect(messages.body.data.at(-1).metadata.model).toEqual({ id: model.id, provider: 'openai-compatible', name: 'org-gpt' });

    expect((await api.request('DELETE', '/v1/chat/provider-keys/openai-compatible', { key })).status).toBe(204);
    expectError(await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } }), 503, 'SESSION_CREATION_ERROR');
  });

  it('fail the turn as the model\'s failure when the provider refuses the organization\'s key', async () => {
    const { key } = await api.newOrg();
    await putKey(key, 'openai-compatible', { apiKey: 'sk-org-revoked-0000', baseUrl: openai.baseUrl, models: ['org-gpt'] });
    const model = await ownModel(key, 'org-gpt');
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'A', description: 'A', role: 'A', modelId: model.id } });
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
    const reply = await api.request('POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, { key, body: { content: 'hello', stream: false } });
    expectError(reply, 502, 'MODEL_ERROR');
  });

  it('answer a chat turn through the Anthropic Messages API with the organization\'s key: Anthropic\'s documented tool-use stream, then text', async () => {
    const { key } = await api.newOrg();
    await putKey(key, 'anthropic', { apiKey: anthropicKey, baseUrl: anthropic.baseUrl, models: ['claude-sonnet-4-5'] });
    const model = await ownModel(key, 'claude-sonnet-4-5');
    expect(model.provider).toBe('anthropic');
    const tool = await api.request('POST', '/v1/chat/tools', {
      key,
      body: { name: 'get_weather', description: 'Get the current weather in a given location', type: 'FUNCTION_TOOL', ajvPropertiesSchema: { type: 'object', properties: { location: { type: 'string' }, unit: { type: 'string' } }, required: ['location'] } },
    });
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'W', description: 'W', role: 'You report the weather.', modelId: model.id, tools: [{ toolId: tool.body.id }] } });
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
    const before = anthropic.requests.length;
    const reply = await api.request('POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, { key, body: { content: 'What is the weather like in San Francisco?', stream: false } });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body.toolMessages[0].toolCall).toMatchObject({ name: 'get_weather', arguments: { location: 'San Francisco, CA', unit: 'fahrenheit' } });
    expect(reply.body.assistantMessage.content).toBe("Okay, let's check the weather for San Francisco, CA:\n\nIt is sunny in San Francisco.");
    const [first, second] = anthropic.requests.slice(before);
    expect(first?.headers['x-api-key']).toBe(anthropicKey);
    expect(first?.headers['anthropic-version']).toBe('2023-06-01');
    expect(first?.body).toMatchObject({ model: 'claude-sonnet-4-5', stream: true });
    // The tool's result went back as a tool_result for the documented tool_use id (the stub refuses anything else).
    expect(JSON.stringify(second?.body.messages.at(-1))).toContain('toolu_01T1x1fJ34qAmk2tNTrN7Up6');
  });
});
