/**
 * The built-in `handoff` tool in chat: an agent passes the session to another agent of its organization, and the
 * next message is answered by that agent (its prompt, its tools). Targets are checked when configured and when the
 * model asks for one; a target the agent was not given is the model's error, never the turn's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { startOpenAIStub, stubModelId, type ChatRequestBody, type OpenAIStub } from '../support/openai-stub.ts';

let api: TestApi;
let stub: OpenAIStub;
let modelId: string;

/** The stub hands over when the user writes "hand me to <uuid>": the model names that agent. */
const lastUserText = (body: ChatRequestBody): string => JSON.stringify(body.messages.at(-1)?.content ?? '');

beforeAll(async () => {
  stub = await startOpenAIStub({
    tokens: 3,
    toolCall: (body) => {
      const wanted = /hand me to ([0-9a-f-]{36})/.exec(lastUserText(body));
      return wanted ? { name: 'handoff', arguments: { agentId: wanted[1], reason: 'billing question' } } : undefined;
    },
  });
  api = await startApi({ OPENAI_COMPATIBLE_BASE_URL: stub.baseUrl, OPENAI_COMPATIBLE_MODELS: 'stub-model' });
  const { key } = await api.newOrg();
  modelId = await stubModelId(api, key);
});
afterAll(async () => {
  await api.close();
  await stub.close();
});

async function createAgent(key: string, fields: object): Promise<string> {
  const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Agent', description: 'An agent', role: 'Help.', modelId, ...fields } });
  expect(agent.status, agent.text).toBe(201);
  return agent.body.id;
}

/** A front-desk agent that may hand over to a billing agent. */
async function frontDesk(key: string): Promise<{ front: string; billing: string }> {
  const billing = await createAgent(key, { fullName: 'Billing', role: 'You are the billing agent.' });
  const front = await createAgent(key, { fullName: 'Front desk', role: 'You are the front desk.', handoffAgents: [{ agentId: billing, description: 'Invoices and refunds' }] });
  return { front, billing };
}

const send = (key: string, sessionId: string, content: string) =>
  api.request('POST', `/v1/chat/chat/sessions/${sessionId}/messages`, { key, body: { content, stream: false } });

describe('handoff in chat', { timeout: 60_000 }, () => {
  it('switches the agent that answers the next message, and records the handoff on the session', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const { front, billing } = await frontDesk(key);
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: front } });

    // Act
    const handed = await send(key, session.body.id, `hand me to ${billing}`);
    const [offeredRequest, closingRequest] = stub.requests.slice(-2);
    const next = await send(key, session.body.id, 'Why was I charged twice?');
    const nextRequest = stub.requests.at(-1);

    // Assess: the front desk offered the tool and recorded its call; the billing agent answered the next message
    expect(handed.status, handed.text).toBe(200);
    expect(offeredRequest?.body.tools?.map((tool) => tool.function.name)).toContain('handoff');
    expect(handed.body.toolMessages[0].toolCall).toMatchObject({ name: 'handoff', status: 'SUCCESS', arguments: { agentId: billing } });
    // The front desk tells the user, with no tool to call any more.
    expect(closingRequest?.body.tools).toBeUndefined();
    expect(handed.body.assistantMessage.content).not.toBe('');
    expect(next.status, next.text).toBe(200);
    expect(nextRequest?.body.messages[0]).toMatchObject({ role: 'system', content: expect.stringContaining('You are the billing agent.') });
    expect(nextRequest?.body.tools?.map((tool) => tool.function.name)).not.toContain('handoff');
    const stored = await api.request('GET', `/api/v1/chat/sessions/${session.body.id}`, { key });
    expect(stored.body.agentId).toBe(front);
    expect(stored.body.metadata.activeAgentId).toBe(billing);
    expect(stored.body.metadata.handoffs).toEqual([{ fromAgentId: front, toAgentId: billing, reason: 'billing question', at: expect.any(String) }]);
  });

  it("binds a MANUAL target's published version, not its draft, for the rest of the session", async () => {
    // Prepare: the billing agent's version 1 is published, its version 2 a draft.
    const { key } = await api.newOrg();
    const billing = await createAgent(key, { fullName: 'Billing', role: 'You are billing version one.', publishMode: 'MANUAL' });
    const draft = await api.request('PATCH', `/v2/chat/agents/${billing}`, { key, body: { role: 'You are billing version two.' } });
    expect(draft.body).toMatchObject({ draftVersion: 2, publishedVersion: 1 });
    const front = await createAgent(key, { fullName: 'Front desk', role: 'You are the front desk.', handoffAgents: [{ agentId: billing, description: 'Invoices and refunds' }] });
    const answeredBy = async (sessionId: string) => {
      const sent = await send(key, sessionId, `Why was I charged twice? ${crypto.randomUUID()}`);
      expect(sent.status, sent.text).toBe(200);
      return String(stub.requests.at(-1)?.body.messages[0]?.content);
    };
    const handedSession = async () => {
      const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: front } });
      expect((await send(key, session.body.id, `hand me to ${billing}`)).status).toBe(200);
      return session.body.id as string;
    };

    // Act: a session is handed over, version 2 is published, and the session goes on; then another is handed over.
    const sessionId = await handedSession();
    const beforePublish = await answeredBy(sessionId);
    const published = await api.request('POST', `/v2/chat/agents/${billing}/publish`, { key, body: {} });
    expect(published.body).toMatchObject({ publishedVersion: 2 });
    const afterPublish = await answeredBy(sessionId);
    const laterSessionId = await handedSession();
    const later = await answeredBy(laterSessionId);

    // Assess
    expect([beforePublish, afterPublish, later].map((prompt) => /billing version (\w+)/.exec(prompt)?.[1])).toEqual(['one', 'one', 'two']);
    const stored = await api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key });
    expect(stored.body.metadata).toMatchObject({ activeAgentId: billing, activeAgentVersion: 1, handoffs: [expect.objectContaining({ toAgentId: billing, toAgentVersion: 1 })] });
    const laterStored = await api.request('GET', `/api/v1/chat/sessions/${laterSessionId}`, { key });
    expect(laterStored.body.metadata).toMatchObject({ activeAgentVersion: 2, handoffs: [expect.objectContaining({ toAgentVersion: 2 })] });
  });

  it('refuses an agent it was not given as a tool error, and the conversation stays with the same agent', async () => {
    // Prepare: another agent of the same organization, and one of another organization
    const { key } = await api.newOrg();
    const { front } = await frontDesk(key);
    const unlisted = await createAgent(key, { fullName: 'Unlisted', role: 'You are not a handoff target.' });
    const other = await api.newOrg();
    const foreign = await createAgent(other.key, { fullName: 'Foreign', role: 'You belong to another organization.' });
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: front } });

    // Act
    const toUnlisted = await send(key, session.body.id, `hand me to ${unlisted}`);
    const toForeign = await send(key, session.body.id, `hand me to ${foreign}`);
    await send(key, session.body.id, 'Still there?');

    // Assess
    for (const response of [toUnlisted, toForeign]) {
      expect(response.status, response.text).toBe(200);
      expect(response.body.toolMessages[0].toolCall).toMatchObject({ name: 'handoff', status: 'ERROR', result: expect.stringContaining('is available for a handoff') });
    }
    expect(stub.requests.at(-1)?.body.messages[0]).toMatchObject({ content: expect.stringContaining('You are the front desk.') });
    const stored = await api.request('GET', `/api/v1/chat/sessions/${session.body.id}`, { key });
    expect(stored.body.metadata.activeAgentId).toBeUndefined();
  });

  it('refuses a configured target that is not an agent of the organization', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const other = await api.newOrg();
    const foreign = await createAgent(other.key, {});
    const own = await createAgent(key, {});

    // Act
    const created = await api.request('POST', '/v2/chat/agents', {
      key,
      body: { fullName: 'A', description: 'A', role: 'A', handoffAgents: [{ agentId: foreign, description: 'Not ours' }] },
    });
    const updated = await api.request('PATCH', `/v2/chat/agents/${own}`, { key, body: { handoffAgents: [{ agentId: own, description: 'Itself' }] } });
    const badNumber = await api.request('PATCH', `/v2/chat/agents/${own}`, { key, body: { transferDestinations: [{ number: '555-0100', description: 'Sales' }] } });

    // Assess
    expectError(created, 400, 'VALIDATION_ERROR', 'handoffAgents[0].agentId');
    expectError(updated, 400, 'VALIDATION_ERROR', 'handoffAgents[0].agentId');
    expectError(badNumber, 400, 'VALIDATION_ERROR');
  });

  it('keeps the built-in tools\' names: no tool may be named handoff or transfer_call', async () => {
    const { key } = await api.newOrg();
    for (const name of ['handoff', 'TRANSFER_CALL']) {
      const created = await api.request('POST', '/v1/chat/tools', { key, body: { name, description: 'Mine', type: 'FUNCTION_TOOL' } });
      expectError(created, 400, 'VALIDATION_ERROR');
    }
  });

  it('declares the routing fields in the agents\' schema of /openapi.json', async () => {
    const document = await api.request('GET', '/openapi.json');
    const agent = document.body.components.schemas.Agent;
    expect(Object.keys(agent.properties)).toEqual(expect.arrayContaining(['transferDestinations', 'handoffAgents']));
  });
});
