import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { startOpenAIStub, stubModelId, stubText, type OpenAIStub } from '../support/openai-stub.ts';
import { replyDeltas } from '../support/sse.ts';

let api: TestApi;
let stub: OpenAIStub;
let modelId: string;

beforeAll(async () => {
  stub = await startOpenAIStub({
    toolCall: (body) => (JSON.stringify(body.messages.at(-1)?.content ?? '').includes('lookup') ? { name: 'LOOKUP', arguments: { q: 'order 42' } } : undefined),
  });
  api = await startApi({ OPENAI_COMPATIBLE_BASE_URL: stub.baseUrl, OPENAI_COMPATIBLE_API_KEY: 'sk-test', OPENAI_COMPATIBLE_MODELS: 'stub-model' });
  const { key } = await api.newOrg();
  modelId = await stubModelId(api, key);
});
afterAll(async () => {
  await api.close();
  await stub.close();
});

describe('an agent on an OpenAI-compatible model', () => {
  it('lists the configured model and streams its tokens through unchanged', async () => {
    const { key } = await api.newOrg();
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'A', description: 'A', role: 'Be brief.', modelId } });
    expect(agent.status).toBe(201);
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
    const response = await api.request('POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, { key, body: { content: 'hello' } });
    const deltas = replyDeltas(response.text);
    expect(deltas.map((delta) => delta.delta).join('')).toBe(stubText(20));
    expect(deltas).toHaveLength(20);
    const request = stub.requests.at(-1);
    expect(request?.headers.authorization).toBe('Bearer sk-test');
    expect(request?.body.model).toBe('stub-model');
    expect(request?.body.messages[0]).toMatchObject({ role: 'system', content: expect.stringContaining('Be brief.') });
  });

  it('runs a tool call assembled from streamed deltas', async () => {
    const { key } = await api.newOrg();
    const tool = await api.request('POST', '/v1/chat/tools', {
      key,
      body: { name: 'LOOKUP', description: 'Looks up', type: 'FUNCTION_TOOL', ajvPropertiesSchema: { type: 'object', properties: { q: { type: 'string' } } } },
    });
    const agent = await api.request('POST', '/v2/chat/agents', {
      key,
      body: { fullName: 'A', description: 'A', role: 'A', modelId, tools: [{ toolId: tool.body.id }] },
    });
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
    const response = await api.request('POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, { key, body: { content: 'please lookup', stream: false } });
    expect(response.status).toBe(200);
    expect(response.body.toolMessages[0].toolCall).toMatchObject({ name: 'LOOKUP', arguments: { q: 'order 42' } });
    const offered = stub.requests.at(-2)?.body.tools?.map((offer) => offer.function.name);
    expect(offered).toEqual(expect.arrayContaining(['LOOKUP', 'end_conversation']));
    const followUp = stub.requests.at(-1)?.body.messages.at(-1);
    expect(followUp).toMatchObject({ role: 'tool' });
    expect(response.body.assistantMessage.content).toBe(stubText(20));
  });

  it('builds the system prompt: role, then system prompt, then special instructions, with session variables filled', async () => {
    const { key } = await api.newOrg();
    const agent = await api.request('POST', '/v2/chat/agents', {
      key,
      body: {
        fullName: 'A',
        description: 'A',
        role: 'You help {{name}} with order {{order}}.',
        systemPrompt: 'Be brief. {{missing}} stays.',
        specialInstructions: 'Use metric units.',
        language: 'fr-FR',
        modelId,
      },
    });
    const session = await api.request('POST', '/v1/chat/chat/sessions', {
      key,
      body: { agentId: agent.body.id, sessionVariables: { name: 'Ada', order: 42 } },
    });
    await api.request('POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, { key, body: { content: 'hi', stream: false } });
    const system = stub.requests.at(-1)?.body.messages[0];
    expect(system?.role).toBe('system');
    const text = String(system?.content);
    expect(text).toContain('You help Ada with order 42.');
    expect(text).toContain('Be brief. {{missing}} stays.');
    expect(text.indexOf('You help Ada')).toBeLessThan(text.indexOf('Be brief.'));
    expect(text.indexOf('Be brief.')).toBeLessThan(text.indexOf('Use metric units.'));
    expect(text).toContain('fr-FR');
  });
});
