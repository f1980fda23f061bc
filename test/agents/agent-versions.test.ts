/**
 * Agent versions (issue 29): every change is an immutable version, the agent has a draft and a published version,
 * sessions bind to the published version when they open and keep it, rollback restores a version exactly, and
 * versions can be listed, read and compared. Another organization's agent and versions are never found.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { startOpenAIStub, stubModelId, type ChatRequestBody, type OpenAIStub } from '../support/openai-stub.ts';
import { Receiver } from '../support/webhook-receiver.ts';

let api: TestApi;
let stub: OpenAIStub;
let modelId: string;
const receiver = new Receiver();
let receiverUrl: string;

beforeAll(async () => {
  stub = await startOpenAIStub({ tokens: 3 });
  receiverUrl = await receiver.start();
  api = await startApi({ OPENAI_COMPATIBLE_BASE_URL: stub.baseUrl, OPENAI_COMPATIBLE_MODELS: 'stub-model' }, { streamPoller: true, queues: true, voice: true });
  const { key } = await api.newOrg();
  modelId = await stubModelId(api, key);
});
afterAll(async () => {
  await api.close();
  await stub.close();
  await receiver.close();
});

async function createAgent(key: string, fields: object = {}): Promise<any> {
  const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Agent', description: 'An agent', role: 'You are version one.', modelId, ...fields } });
  expect(agent.status, agent.text).toBe(201);
  return agent.body;
}

async function patchAgent(key: string, agentId: string, body: object): Promise<any> {
  const response = await api.request('PATCH', `/v2/chat/agents/${agentId}`, { key, body });
  expect(response.status, response.text).toBe(200);
  return response.body;
}

let toolCount = 0;
async function createTool(key: string, description: string): Promise<any> {
  toolCount += 1;
  const response = await api.request('POST', '/v1/chat/tools', {
    key,
    body: { name: `lookup_${toolCount}`, description, type: 'API_TOOL', apiTool: { url: 'https://example.com/lookup', method: 'GET', headers: {} } },
  });
  expect(response.status, response.text).toBe(201);
  return response.body;
}

async function openSession(key: string, agentId: string): Promise<any> {
  const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId } });
  expect(session.status, session.text).toBe(201);
  return session.body;
}

/** The request the model got for a message sent to the session: what the answering configuration told it. */
async function modelRequestFor(key: string, sessionId: string): Promise<ChatRequestBody> {
  const content = `marker ${crypto.randomUUID()}`;
  const sent = await api.request('POST', `/v1/chat/chat/sessions/${sessionId}/messages`, { key, body: { content, stream: false } });
  expect(sent.status, sent.text).toBe(200);
  const request = stub.requests.findLast((candidate) => JSON.stringify(candidate.body.messages).includes(content));
  expect(request).toBeDefined();
  return request!.body;
}

const systemPrompt = (body: ChatRequestBody): string => String(body.messages[0]?.content);

describe('versions and publishing', { timeout: 60_000 }, () => {
  it('makes version 1 on creation, published, and a new published version on each change of an AUTO agent, which open sessions follow', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const agent = await createAgent(key);
    const before = await openSession(key, agent.id);

    // Act
    const changed = await patchAgent(key, agent.id, { role: 'You are version two.' });
    const after = await openSession(key, agent.id);

    // Assess: no publish needed, and as before versions, the session opened earlier answers with the change too
    expect(agent).toMatchObject({ publishMode: 'AUTO', draftVersion: 1, publishedVersion: 1 });
    expect(changed).toMatchObject({ publishMode: 'AUTO', draftVersion: 2, publishedVersion: 2 });
    expect([before.agentVersion, after.agentVersion]).toEqual([undefined, undefined]);
    expect(systemPrompt(await modelRequestFor(key, after.id))).toContain('You are version two.');
    expect(systemPrompt(await modelRequestFor(key, before.id))).toContain('You are version two.');
  });

  it('keeps a MANUAL agent\'s changes as a draft until published; a session keeps the version it opened with', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const agent = await createAgent(key, { publishMode: 'MANUAL' });
    const draft = await patchAgent(key, agent.id, { role: 'You are version two.' });
    const beforePublish = await openSession(key, agent.id);

    // Act
    const published = await api.request('POST', `/v2/chat/agents/${agent.id}/publish`, { key, body: {} });
    const afterPublish = await openSession(key, agent.id);

    // Assess
    expect(draft).toMatchObject({ role: 'You are version two.', draftVersion: 2, publishedVersion: 1 });
    expect(published.status, published.text).toBe(200);
    expect(published.body).toMatchObject({ draftVersion: 2, publishedVersion: 2 });
    expect([beforePublish.agentVersion, afterPublish.agentVersion]).toEqual([1, 2]);
    expect(systemPrompt(await modelRequestFor(key, beforePublish.id))).toContain('You are version one.');
    expect(systemPrompt(await modelRequestFor(key, afterPublish.id))).toContain('You are version two.');
    const stored = await api.request('GET', `/api/v1/chat/sessions/${beforePublish.id}`, { key });
    expect(stored.body.agentVersion).toBe(1);
  });

  it('publishes a given older version, and answers 404 for a version the agent does not have', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const agent = await createAgent(key, { publishMode: 'MANUAL' });
    await patchAgent(key, agent.id, { role: 'You are version two.' });
    await api.request('POST', `/v2/chat/agents/${agent.id}/publish`, { key, body: {} });

    // Act
    const older = await api.request('POST', `/v2/chat/agents/${agent.id}/publish`, { key, body: { version: 1 } });
    const missing = await api.request('POST', `/v2/chat/agents/${agent.id}/publish`, { key, body: { version: 3 } });

    // Assess
    expect(older.body).toMatchObject({ role: 'You are version two.', draftVersion: 2, publishedVersion: 1 });
    expectError(missing, 404, 'NOT_FOUND');
    const session = await openSession(key, agent.id);
    expect(session.agentVersion).toBe(1);
    expect(systemPrompt(await modelRequestFor(key, session.id))).toContain('You are version one.');
  });

  it('makes a new version of the agents using a tool when the tool changes: published for AUTO, a draft for MANUAL', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const tool = await createTool(key, 'Looks an order up');
    const auto = await createAgent(key, { tools: [{ toolId: tool.id }] });
    const manual = await createAgent(key, { tools: [{ toolId: tool.id }], publishMode: 'MANUAL' });

    // Act
    const changed = await api.request('PATCH', `/v1/chat/tools/${tool.id}`, { key, body: { description: 'Finds an order by its number' } });

    // Assess
    expect(changed.status, changed.text).toBe(200);
    const [autoNow, manualNow] = await Promise.all([auto, manual].map((agent) => api.request('GET', `/v2/chat/agents/${agent.id}`, { key })));
    expect(autoNow!.body).toMatchObject({ draftVersion: 2, publishedVersion: 2 });
    expect(manualNow!.body).toMatchObject({ draftVersion: 2, publishedVersion: 1 });
    const toolDescription = async (agentId: string) =>
      (await modelRequestFor(key, (await openSession(key, agentId)).id)).tools?.find((offered) => offered.function.name === tool.name)?.function.description;
    expect(await toolDescription(auto.id)).toBe('Finds an order by its number');
    expect(await toolDescription(manual.id)).toBe('Looks an order up');
  });
});

describe('rollback', { timeout: 60_000 }, () => {
  it("restores a previous version's configuration exactly, its tools' definitions included, as a new published version", async () => {
    // Prepare: version 1 with a tool; then the prompt, the tool's definition, the voice and analysis change
    const { key } = await api.newOrg();
    const tool = await createTool(key, 'Looks an order up');
    const agent = await createAgent(key, { systemPrompt: 'Be brief.', tools: [{ toolId: tool.id, toolDescription: 'Only for orders' }] });
    const first = await api.request('GET', `/v2/chat/agents/${agent.id}/versions/1`, { key });
    await api.request('PATCH', `/v1/chat/tools/${tool.id}`, { key, body: { description: 'Finds an order by its number' } });
    await patchAgent(key, agent.id, { systemPrompt: null, specialInstructions: 'Say hello.', tools: [], analysis: { sentiment: { enabled: true } } });

    // Act
    const rolledBack = await api.request('POST', `/v2/chat/agents/${agent.id}/rollback`, { key, body: { version: 1 } });

    // Assess
    expect(rolledBack.status, rolledBack.text).toBe(200);
    expect(rolledBack.body).toMatchObject({ draftVersion: 4, publishedVersion: 4, systemPrompt: 'Be brief.', tools: [{ toolId: tool.id, toolDescription: 'Only for orders' }] });
    expect(rolledBack.body.specialInstructions).toBeUndefined();
    expect(rolledBack.body.analysis).toBeUndefined();
    const restored = await api.request('GET', `/v2/chat/agents/${agent.id}/versions/4`, { key });
    expect(restored.body.configuration).toEqual(first.body.configuration);
    expect(restored.body.tools).toEqual(first.body.tools);
    expect(restored.body.tools[0].description).toBe('Looks an order up');
    const diff = await api.request('GET', `/v2/chat/agents/${agent.id}/versions/4/diff?against=1`, { key });
    expect(diff.body.changes).toEqual([]);
    const session = await openSession(key, agent.id);
    const offered = (await modelRequestFor(key, session.id)).tools?.find((candidate) => candidate.function.name === tool.name);
    expect(offered?.function.description).toContain('Only for orders');
  });

  it('answers 422 TOOLS_NOT_FOUND for a version whose tool has been deleted since, and changes nothing', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const tool = await createTool(key, 'Looks an order up');
    const agent = await createAgent(key, { tools: [{ toolId: tool.id }] });
    await patchAgent(key, agent.id, { tools: [] });
    expect((await api.request('DELETE', `/v1/chat/tools/${tool.id}`, { key })).status).toBe(204);

    // Act
    const rolledBack = await api.request('POST', `/v2/chat/agents/${agent.id}/rollback`, { key, body: { version: 1 } });

    // Assess
    expectError(rolledBack, 422, 'TOOLS_NOT_FOUND');
    const stored = await api.request('GET', `/v2/chat/agents/${agent.id}`, { key });
    expect(stored.body).toMatchObject({ draftVersion: 2, publishedVersion: 2, tools: [] });
  });

  it('refuses a version the agent does not have, and a missing version number', async () => {
    const { key } = await api.newOrg();
    const agent = await createAgent(key);
    expectError(await api.request('POST', `/v2/chat/agents/${agent.id}/rollback`, { key, body: { version: 9 } }), 404, 'NOT_FOUND');
    expectError(await api.request('POST', `/v2/chat/agents/${agent.id}/rollback`, { key, body: {} }), 400, 'VALIDATION_ERROR', 'version');
  });
});

describe('reading versions', { timeout: 60_000 }, () => {
  it('lists versions newest first, a page at a time, with who made each and which is published and draft', async () => {
    // Prepare: versions 1 to 5, version 3 published
    const { key } = await api.newOrg();
    const agent = await createAgent(key, { publishMode: 'MANUAL' });
    for (const n of [2, 3, 4, 5]) {
      await patchAgent(key, agent.id, { role: `You are version ${n}.` });
      if (n === 3) await api.request('POST', `/v2/chat/agents/${agent.id}/publish`, { key, body: {} });
    }

    // Act
    const page = await api.request('GET', `/v2/chat/agents/${agent.id}/versions?page=2&limit=2`, { key });
    const first = await api.request('GET', `/v2/chat/agents/${agent.id}/versions?limit=2`, { key });

    // Assess
    expect(page.status, page.text).toBe(200);
    expect(page.body.pagination).toEqual({ page: 2, limit: 2, total: 5, totalPages: 3 });
    expect(page.body.data.map((version: any) => [version.number, version.published, version.draft])).toEqual([[3, true, false], [2, false, false]]);
    expect(first.body.data.map((version: any) => [version.number, version.draft])).toEqual([[5, true], [4, false]]);
    expect(page.body.data[0]).toMatchObject({ agentId: agent.id, author: { type: 'API_KEY', keyId: expect.any(String) }, createdAt: expect.any(String) });
    expect(page.body.data[0].configuration).toBeUndefined();
  });

  it('compares two versions field by field', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const agent = await createAgent(key, { systemPrompt: 'Be brief.', voiceEnabled: false });
    await patchAgent(key, agent.id, { role: 'You are version two.', systemPrompt: null, specialInstructions: 'Say hello.' });

    // Act
    const diff = await api.request('GET', `/v2/chat/agents/${agent.id}/versions/2/diff?against=1`, { key });

    // Assess
    expect(diff.status, diff.text).toBe(200);
    expect(diff.body).toEqual({
      agentId: agent.id,
      from: 1,
      to: 2,
      changes: [
        { path: 'role', before: 'You are version one.', after: 'You are version two.' },
        { path: 'specialInstructions', after: 'Say hello.' },
        { path: 'systemPrompt', before: 'Be brief.' },
      ],
    });
  });

  it('answers 404 for a version that does not exist or is not a number, and 400 for a diff against nothing', async () => {
    const { key } = await api.newOrg();
    const agent = await createAgent(key);
    // Like a malformed id, a malformed version number names nothing.
    expectError(await api.request('GET', `/v2/chat/agents/${agent.id}/versions/first`, { key }), 404, 'NOT_FOUND');
    expectError(await api.request('GET', `/v2/chat/agents/${agent.id}/versions/2`, { key }), 404, 'NOT_FOUND');
    expectError(await api.request('GET', `/v2/chat/agents/${agent.id}/versions/1/diff?against=2`, { key }), 404, 'NOT_FOUND');
    expectError(await api.request('GET', `/v2/chat/agents/${agent.id}/versions/1/diff`, { key }), 400, 'VALIDATION_ERROR', 'against');
  });
});

describe('organization isolation', { timeout: 60_000 }, () => {
  it("answers 404 for another organization's agent on every version route, and changes nothing", async () => {
    // Prepare
    const owner = await api.newOrg();
    const other = await api.newOrg();
    const agent = await createAgent(owner.key, { publishMode: 'MANUAL' });
    await patchAgent(owner.key, agent.id, { role: 'You are version two.' });

    // Act
    const attempts = await Promise.all([
      api.request('POST', `/v2/chat/agents/${agent.id}/publish`, { key: other.key, body: {} }),
      api.request('POST', `/v2/chat/agents/${agent.id}/rollback`, { key: other.key, body: { version: 1 } }),
      api.request('GET', `/v2/chat/agents/${agent.id}/versions`, { key: other.key }),
      api.request('GET', `/v2/chat/agents/${agent.id}/versions/1`, { key: other.key }),
      api.request('GET', `/v2/chat/agents/${agent.id}/versions/2/diff?against=1`, { key: other.key }),
    ]);

    // Assess
    for (const attempt of attempts) expectError(attempt, 404, 'NOT_FOUND');
    const stored = await api.request('GET', `/v2/chat/agents/${agent.id}`, { key: owner.key });
    expect(stored.body).toMatchObject({ draftVersion: 2, publishedVersion: 1 });
  });
});

describe('events', { timeout: 60_000 }, () => {
  it('emits agent.updated for each new version and agent.published when the published version changes', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const hook = await api.request('POST', '/v1/chat/webhooks', { key, body: { url: `${receiverUrl}/ok/agents/${key.slice(-8)}`, events: ['agent.updated', 'agent.published'] } });
    expect(hook.status, hook.text).toBe(201);
    receiver.secrets.set(`/ok/agents/${key.slice(-8)}`, [hook.body.secret]);
    const agent = await createAgent(key, { publishMode: 'MANUAL' });

    // Act
    await patchAgent(key, agent.id, { role: 'You are version two.' });
    await api.request('POST', `/v2/chat/agents/${agent.id}/publish`, { key, body: {} });

    // Assess: creation publishes version 1; the change is version 2, a draft; the publish makes it live
    const receipts = await eventually(() => receiver.eventsFor(`/ok/agents/${key.slice(-8)}`), (found) => found.length >= 3);
    const events = receipts.map((receipt) => [receipt.body.type, receipt.body.data]);
    expect(events).toEqual(
      expect.arrayContaining([
        ['agent.published', { agentId: agent.id, version: 1, previousVersion: null }],
        ['agent.updated', { agentId: agent.id, version: 2, publishedVersion: 1, changedFields: ['role'] }],
        ['agent.published', { agentId: agent.id, version: 2, previousVersion: 1 }],
      ]),
    );
  });
});

describe('calls', { timeout: 60_000 }, () => {
  it("binds a MANUAL agent's voice session to the published version, not the draft", async () => {
    // Prepare
    const { key } = await api.newOrg();
    const agent = await createAgent(key, { publishMode: 'MANUAL', voiceEnabled: true, voicePipelineMode: 'pipeline', voice: { provider: 'builtin', voiceId: 'en-us' } });
    await patchAgent(key, agent.id, { role: 'You are version two.' });

    // Act
    const started = await api.request('POST', '/v1/chat/voice/sessions', { key, body: { agentId: agent.id } });

    // Assess
    expect(started.status, started.text).toBe(201);
    const session = await api.request('GET', `/api/v1/chat/sessions/${started.body.sessionId}`, { key });
    expect(session.body).toMatchObject({ type: 'VOICE', agentId: agent.id, agentVersion: 1 });
  });
});
