import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startApi, type ApiResponse, type TestApi } from '../support/api.ts';

let api: TestApi;
beforeAll(async () => {
  // An STS model in the catalog (nothing connects to its address): no STS model is built in.
  api = await startApi({ OPENAI_COMPATIBLE_REALTIME_MODELS: 'gpt-realtime', OPENAI_COMPATIBLE_REALTIME_URL: 'http://127.0.0.1:9/v1' });
});
afterAll(() => api.close());

const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const unknownId = '00000000-0000-4000-8000-000000000000';

function validAgent(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { fullName: 'Support Agent', description: 'Answers billing questions', role: 'You are a helpful support agent.', ...overrides };
}

async function createKnowledgeStore(key: string): Promise<any> {
  const response = await api.request('POST', '/v1/chat/knowledge-stores', { key, body: { name: 'Billing' } });
  expect(response.status, response.text).toBe(201);
  return response.body;
}

async function createAgent(key: string, overrides: Record<string, unknown> = {}): Promise<any> {
  const response = await api.request('POST', '/v2/chat/agents', { key, body: validAgent(overrides) });
  expect(response.status).toBe(201);
  return response.body;
}

let toolCount = 0;
async function createTool(key: string): Promise<any> {
  toolCount += 1;
  const response = await api.request('POST', '/v1/chat/tools', {
    key,
    body: { name: `LOOKUP_${toolCount}`, description: 'Looks an order up', type: 'FUNCTION_TOOL' },
  });
  expect(response.status).toBe(201);
  return response.body;
}

/** The catalog entry of one type as GET /v1/chat/models shows it (the built-in one; the default for LLM). */
async function catalogModel(key: string, type: 'LLM' | 'STT' | 'TTS' | 'STS'): Promise<any> {
  const response = await api.request('GET', `/v1/chat/models?type=${type}&limit=100`, { key });
  expect(response.status).toBe(200);
  const model = response.body.data.find((entry: any) => (type === 'LLM' ? entry.isDefault : type === 'STS' || entry.provider === 'builtin'));
  expect(model).toBeDefined();
  return model;
}

async function listAgents(key: string, query = ''): Promise<ApiResponse> {
  const response = await api.request('GET', `/v1/chat/agents${query}`, { key });
  expect(response.status).toBe(200);
  return response;
}

const ids = (response: ApiResponse): string[] => response.body.data.map((agent: any) => agent.id);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('createAgent', () => {
  it('creates an agent with the documented defaults and stores it', async () => {
    // Prepare
    const { orgId, key } = await api.newOrg();
    const defaultLlm = await catalogModel(key, 'LLM');

    // Act
    const response = await api.request('POST', '/v2/chat/agents', { key, body: validAgent() });

    // Assess
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({
      ...validAgent(),
      orgId,
      modelId: defaultLlm.id,
      isActive: true,
      isPublic: false,
      voiceEnabled: false,
      voicePipelineMode: null,
      tools: [],
    });
    expect(response.body.id).toMatch(uuid);
    expect(response.body.createdAt).toMatch(rfc3339);
    expect(response.body.updatedAt).toBe(response.body.createdAt);
    const stored = await api.request('GET', `/v1/chat/agents/${response.body.id}`, { key });
    expect(stored.status).toBe(200);
    expect(stored.body).toEqual(response.body);
  });

  it('stores every optional field it is given', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const [stt, tts, tool, store] = [await catalogModel(key, 'STT'), await catalogModel(key, 'TTS'), await createTool(key), await createKnowledgeStore(key)];
    const body = validAgent({
      language: 'pt-BR',
      systemPrompt: 'Be brief.',
      specialInstructions: 'Never promise refunds.',
      sttModelId: stt.id,
      ttsModelId: tts.id,
      voiceEnabled: true,
      voicePipelineMode: 'pipeline',
      knowledgeStoreId: store.id,
      tools: [{ toolId: tool.id, toolDescription: 'Use for order lookups' }],
      welcomeAllowInterruptions: true,
    });

    // Act
    const response = await api.request('POST', '/v2/chat/agents', { key, body });

    // Assess
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject(body);
    const stored = await api.request('GET', `/v1/chat/agents/${response.body.id}`, { key });
    expect(stored.body).toMatchObject(body);
  });

  it.each(['fullName', 'description', 'role'])('rejects a body without %s', async (field) => {
    // Prepare
    const { key } = await api.newOrg();
    const body = validAgent();
    delete body[field];

    // Act
    const response = await api.request('POST', '/v2/chat/agents', { key, body });

    // Assess
    expectError(response, 400, 'VALIDATION_ERROR', field);
  });

  it.each([
    ['fullName', ''],
    ['description', ''],
    ['role', ''],
    ['fullName', '   '],
    ['description', '\t'],
    ['role', ' \n '],
  ])('rejects %s set to %j', async (field, value) => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('POST', '/v2/chat/agents', { key, body: validAgent({ [field]: value }) });

    // Assess
    expectError(response, 400, 'VALIDATION_ERROR', field);
    expect((await listAgents(key)).body.pagination.total).toBe(0);
  });

  it('rejects an unknown body field', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('POST', '/v2/chat/agents', { key, body: validAgent({ nickname: 'Bob' }) });

    // Assess
    expectError(response, 400, 'VALIDATION_ERROR');
    expect(response.body.error.message).toContain('nickname');
  });

  it('rejects voiceEnabled true without a voicePipelineMode', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('POST', '/v2/chat/agents', { key, body: validAgent({ voiceEnabled: true }) });

    // Assess
    expectError(response, 400, 'VALIDATION_ERROR', 'voicePipelineMode');
    expect((await listAgents(key)).body.pagination.total).toBe(0);
  });

  it.each(['en', 'en-US', 'pt-BR', 'zh-Hant-TW'])('accepts the language %s', async (language) => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('POST', '/v2/chat/agents', { key, body: validAgent({ language }) });

    // Assess
    expect(response.status).toBe(201);
    expect(response.body.language).toBe(language);
  });

  it.each(['en_US', 'not a language', '', 'e', '12'])('rejects the language %j', async (language) => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('POST', '/v2/chat/agents', { key, body: validAgent({ language }) });

    // Assess
    expectError(response, 400, 'VALIDATION_ERROR', 'language');
  });

  it('takes an sts agent naming an STS model of the catalog as its stsModelId', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const sts = await catalogModel(key, 'STS');
    const body = validAgent({ voiceEnabled: true, voicePipelineMode: 'sts', stsModelId: sts.id });

    // Act
    const response = await api.request('POST', '/v2/chat/agents', { key, body });

    // Assess
    expect(response.status, response.text).toBe(201);
    expect(sts).toMatchObject({ provider: 'openai-compatible', name: 'gpt-realtime' });
    expect((await api.request('GET', `/v1/chat/agents/${response.body.id}`, { key })).body).toMatchObject(body);
  });

  it.each(['modelId', 'sttModelId', 'ttsModelId', 'stsModelId'])('rejects an unknown %s with MODELS_NOT_FOUND', async (field) => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('POST', '/v2/chat/agents', { key, body: validAgent({ [field]: unknownId }) });

    // Assess
    expectError(response, 422, 'MODELS_NOT_FOUND', field);
    expect((await listAgents(key)).body.pagination.total).toBe(0);
  });

  it.each([
    ['ttsModelId', 'STT'],
    ['sttModelId', 'LLM'],
    ['modelId', 'TTS'],
    ['stsModelId', 'LLM'],
    ['modelId', 'STS'],
  ] as const)('rejects %s naming a model of type %s with MODELS_NOT_FOUND', async (field, wrongType) => {
    // Prepare
    const { key } = await api.newOrg();
    const wrongModel = await catalogModel(key, wrongType);

    // Act
    const response = await api.request('POST', '/v2/chat/agents', { key, body: validAgent({ [field]: wrongModel.id }) });

    // Assess
    expectError(response, 422, 'MODELS_NOT_FOUND', field);
  });

  it('rejects a tool id that does not exist with TOOLS_NOT_FOUND', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('POST', '/v2/chat/agents', { key, body: validAgent({ tools: [{ toolId: unknownId }] }) });

    // Assess
    expectError(response, 422, 'TOOLS_NOT_FOUND', 'tools');
    expect((await listAgents(key)).body.pagination.total).toBe(0);
  });

  it("rejects another organization's tool with TOOLS_NOT_FOUND and leaves that tool unattached", async () => {
    // Prepare
    const { key } = await api.newOrg();
    const other = await api.newOrg();
    const foreignTool = await createTool(other.key);

    // Act
    const response = await api.request('POST', '/v2/chat/agents', { key, body: validAgent({ tools: [{ toolId: foreignTool.id }] }) });

    // Assess
    expectError(response, 422, 'TOOLS_NOT_FOUND', 'tools');
    expect((await api.request('DELETE', `/v1/chat/tools/${foreignTool.id}`, { key: other.key })).status).toBe(204);
  });

  it('rejects the same tool attached twice', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const tool = await createTool(key);

    // Act
    const response = await api.request('POST', '/v2/chat/agents', {
      key,
      body: validAgent({ tools: [{ toolId: tool.id }, { toolId: tool.id, toolDescription: 'again' }] }),
    });

    // Assess
    expectError(response, 400, 'VALIDATION_ERROR', 'tools');
  });
});

describe('getAgent', () => {
  it('answers 404 NOT_FOUND for an unknown id', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('GET', `/v1/chat/agents/${unknownId}`, { key });

    // Assess
    expectError(response, 404, 'NOT_FOUND');
  });
});

describe('malformed agent ids', () => {
  it.each([
    ['GET', '/v1/chat/agents/not-a-uuid'],
    ['PATCH', '/v2/chat/agents/not-a-uuid'],
    ['DELETE', '/v1/chat/agents/12345'],
  ])('answers 404 NOT_FOUND for %s %s with a malformed id', async (method, path) => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request(method, path, { key, ...(method === 'PATCH' ? { body: { fullName: 'X' } } : {}) });

    // Assess
    expectError(response, 404, 'NOT_FOUND');
  });
});

describe('updateAgent', () => {
  it('changes the given fields, keeps the others and advances updatedAt', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const agent = await createAgent(key, { systemPrompt: 'Be brief.' });

    // Act
    const response = await api.request('PATCH', `/v2/chat/agents/${agent.id}`, { key, body: { fullName: 'Renamed', language: 'en-US' } });

    // Assess
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ ...agent, fullName: 'Renamed', language: 'en-US', draftVersion: 2, publishedVersion: 2, updatedAt: expect.any(String) });
    expect(Date.parse(response.body.updatedAt)).toBeGreaterThan(Date.parse(agent.updatedAt));
    const stored = await api.request('GET', `/v1/chat/agents/${agent.id}`, { key });
    expect(stored.body).toEqual(response.body);
  });

  it('rejects an empty body', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const agent = await createAgent(key);

    // Act
    const response = await api.request('PATCH', `/v2/chat/agents/${agent.id}`, { key, body: {} });

    // Assess
    expectError(response, 400, 'VALIDATION_ERROR');
  });

  it('clears an optional field set to null', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const store = await createKnowledgeStore(key);
    const agent = await createAgent(key, { systemPrompt: 'Be brief.', knowledgeStoreId: store.id });

    // Act
    const response = await api.request('PATCH', `/v2/chat/agents/${agent.id}`, { key, body: { systemPrompt: null } });

    // Assess
    expect(response.status).toBe(200);
    const stored = await api.request('GET', `/v1/chat/agents/${agent.id}`, { key });
    expect(stored.body).not.toHaveProperty('systemPrompt');
    expect(stored.body.knowledgeStoreId).toBe(store.id);
  });

  it('rejects voiceEnabled true on an agent without a voicePipelineMode and changes nothing', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const agent = await createAgent(key);

    // Act
    const response = await api.request('PATCH', `/v2/chat/agents/${agent.id}`, { key, body: { voiceEnabled: true } });

    // Assess
    expectError(response, 400, 'VALIDATION_ERROR', 'voicePipelineMode');
    const stored = await api.request('GET', `/v1/chat/agents/${agent.id}`, { key });
    expect(stored.body).toEqual(agent);
  });

  it('rejects an unknown model with MODELS_NOT_FOUND', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const agent = await createAgent(key);

    // Act
    const response = await api.request('PATCH', `/v2/chat/agents/${agent.id}`, { key, body: { ttsModelId: unknownId } });

    // Assess
    expectError(response, 422, 'MODELS_NOT_FOUND', 'ttsModelId');
  });

  it('attaches a tool, which then cannot be deleted, and detaches it, after which it can', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const [agent, tool] = [await createAgent(key), await createTool(key)];

    // Act
    const attached = await api.request('PATCH', `/v2/chat/agents/${agent.id}`, { key, body: { tools: [{ toolId: tool.id }] } });
    const deleteWhileAttached = await api.request('DELETE', `/v1/chat/tools/${tool.id}`, { key });
    const detached = await api.request('PATCH', `/v2/chat/agents/${agent.id}`, { key, body: { tools: [] } });
    const deleteAfterDetach = await api.request('DELETE', `/v1/chat/tools/${tool.id}`, { key });

    // Assess
    expect(attached.status).toBe(200);
    expect(attached.body.tools).toEqual([{ toolId: tool.id }]);
    expectError(deleteWhileAttached, 409, 'TOOL_IN_USE');
    expect(detached.status).toBe(200);
    expect((await api.request('GET', `/v1/chat/agents/${agent.id}`, { key })).body.tools).toEqual([]);
    expect(deleteAfterDetach.status).toBe(204);
  });

  it('rejects attaching a tool that does not exist with TOOLS_NOT_FOUND', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const agent = await createAgent(key);

    // Act
    const response = await api.request('PATCH', `/v2/chat/agents/${agent.id}`, { key, body: { tools: [{ toolId: unknownId }] } });

    // Assess
    expectError(response, 422, 'TOOLS_NOT_FOUND', 'tools');
    expect((await api.request('GET', `/v1/chat/agents/${agent.id}`, { key })).body.tools).toEqual([]);
  });

  it('deactivates an agent, which the isActive=false filter then finds', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const [kept, deactivated] = [await createAgent(key), await createAgent(key)];

    // Act
    const response = await api.request('PATCH', `/v2/chat/agents/${deactivated.id}`, { key, body: { isActive: false } });

    // Assess
    expect(response.status).toBe(200);
    expect(response.body.isActive).toBe(false);
    expect(ids(await listAgents(key, '?isActive=false'))).toEqual([deactivated.id]);
    expect(ids(await listAgents(key, '?isActive=true'))).toEqual([kept.id]);
  });

  it('answers 404 NOT_FOUND for an unknown id', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('PATCH', `/v2/chat/agents/${unknownId}`, { key, body: { fullName: 'X' } });

    // Assess
    expectError(response, 404, 'NOT_FOUND');
  });
});

describe('deleteAgent', () => {
  it('answers 204, after which the agent is gone', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const agent = await createAgent(key);

    // Act
    const response = await api.request('DELETE', `/v1/chat/agents/${agent.id}`, { key });

    // Assess
    expect(response.status).toBe(204);
    expect(response.text).toBe('');
    expectError(await api.request('GET', `/v1/chat/agents/${agent.id}`, { key }), 404, 'NOT_FOUND');
    expectError(await api.request('DELETE', `/v1/chat/agents/${agent.id}`, { key }), 404, 'NOT_FOUND');
  });
});

describe('listAgents', () => {
  // Created one by one, a few milliseconds apart, so that every createdAt is distinct; #3 speaks, #5 is inactive.
  const names = ['Mike', 'Alpha', 'Kilo', 'Bravo', 'Lima', 'Charlie', 'Juliet', 'Delta', 'India', 'Echo', 'Hotel', 'Foxtrot'];
  let key: string;
  let agents: any[];
  beforeAll(async () => {
    ({ key } = await api.newOrg());
    agents = [];
    for (const [index, fullName] of names.entries()) {
      agents.push(await createAgent(key, index === 3 ? { fullName, voiceEnabled: true, voicePipelineMode: 'sts' } : { fullName }));
      await sleep(3);
    }
    expect((await api.request('PATCH', `/v2/chat/agents/${agents[5].id}`, { key, body: { isActive: false } })).status).toBe(200);
  });

  it('pages with a data and pagination envelope, 10 per page by default', async () => {
    // Act
    const first = await listAgents(key);
    const second = await listAgents(key, '?page=2');

    // Assess
    expect(Object.keys(first.body).sort()).toEqual(['data', 'pagination']);
    expect(first.body.pagination).toEqual({ page: 1, limit: 10, total: 12, totalPages: 2 });
    expect(first.body.data).toHaveLength(10);
    expect(second.body.pagination).toEqual({ page: 2, limit: 10, total: 12, totalPages: 2 });
    expect([...ids(first), ...ids(second)].sort()).toEqual(agents.map((agent) => agent.id).sort());
  });

  it.each([
    ['limit=500', { page: 1, limit: 100 }],
    ['limit=0', { page: 1, limit: 1 }],
    ['limit=abc', { page: 1, limit: 10 }],
    ['page=0', { page: 1, limit: 10 }],
    ['page=-1', { page: 1, limit: 10 }],
    ['page=abc', { page: 1, limit: 10 }],
  ])('falls back to a valid value for %s instead of answering 400', async (query, expected) => {
    // Act
    const response = await listAgents(key, `?${query}`);

    // Assess
    expect(response.body.pagination).toMatchObject(expected);
    expect(response.body.data).toHaveLength(Math.min(expected.limit, agents.length));
  });

  it('sorts by createdAt ascending and descending', async () => {
    // Act
    const ascending = await listAgents(key, '?sort=createdAt:asc&limit=100');
    const descending = await listAgents(key, '?sort=createdAt:desc&limit=100');

    // Assess
    const creationOrder = agents.map((agent) => agent.id);
    expect(ids(ascending)).toEqual(creationOrder);
    expect(ids(descending)).toEqual([...creationOrder].reverse());
  });

  it('sorts by fullName ascending', async () => {
    // Act
    const response = await listAgents(key, '?sort=fullName:asc&limit=100');

    // Assess
    expect(response.body.data.map((agent: any) => agent.fullName)).toEqual([...names].sort());
  });

  it('rejects a sort on an unknown field', async () => {
    // Act
    const response = await api.request('GET', '/v1/chat/agents?sort=bogus:asc', { key });

    // Assess
    expectError(response, 400, 'VALIDATION_ERROR', 'sort');
  });

  it('filters by isActive', async () => {
    // Prepare
    const deactivated = agents[5];

    // Act
    const inactive = await listAgents(key, '?isActive=false');
    const active = await listAgents(key, '?isActive=true&limit=100');

    // Assess
    expect(ids(inactive)).toEqual([deactivated.id]);
    expect(active.body.pagination.total).toBe(11);
    expect(ids(active)).not.toContain(deactivated.id);
  });

  it('filters by voiceEnabled', async () => {
    // Act
    const voice = await listAgents(key, '?voiceEnabled=true');
    const text = await listAgents(key, '?voiceEnabled=false&limit=100');

    // Assess
    expect(ids(voice)).toEqual([agents[3].id]);
    expect(text.body.pagination.total).toBe(11);
  });

  it('filters by createdAfter, strictly after the given instant', async () => {
    // Act
    const response = await listAgents(key, `?createdAfter=${agents[5].createdAt}&sort=createdAt:asc`);

    // Assess
    expect(ids(response)).toEqual(agents.slice(6).map((agent) => agent.id));
  });
});

describe('organization isolation', () => {
  it.each([
    ['GET', '/v1/chat/agents/'],
    ['PATCH', '/v2/chat/agents/'],
    ['DELETE', '/v1/chat/agents/'],
  ])("answers 404 NOT_FOUND to %s on another organization's agent and leaves it alone", async (method, path) => {
    // Prepare
    const owner = await api.newOrg();
    const stranger = await api.newOrg();
    const agent = await createAgent(owner.key);

    // Act
    const response = await api.request(method, path + agent.id, { key: stranger.key, ...(method === 'PATCH' ? { body: { fullName: 'Mine now' } } : {}) });

    // Assess
    expectError(response, 404, 'NOT_FOUND');
    expect((await api.request('GET', `/v1/chat/agents/${agent.id}`, { key: owner.key })).body).toEqual(agent);
  });

  it("lists only the caller's own agents", async () => {
    // Prepare
    const [a, b] = [await api.newOrg(), await api.newOrg()];
    const agentsOfA = [await createAgent(a.key), await createAgent(a.key)];
    const agentOfB = await createAgent(b.key);

    // Act
    const listOfA = await listAgents(a.key);
    const listOfB = await listAgents(b.key);

    // Assess
    expect(ids(listOfA).sort()).toEqual(agentsOfA.map((agent) => agent.id).sort());
    expect(ids(listOfB)).toEqual([agentOfB.id]);
    expect(listOfA.body.data.every((agent: any) => agent.orgId === a.orgId)).toBe(true);
  });
});

describe('scopes', () => {
  it('lets an agents:read key read agents but not create or delete them', async () => {
    // Prepare
    const { orgId, key } = await api.newOrg();
    const agent = await createAgent(key);
    const readKey = await api.newKey(orgId, ['agents:read']);

    // Act
    const list = await api.request('GET', '/v1/chat/agents', { key: readKey });
    const one = await api.request('GET', `/v1/chat/agents/${agent.id}`, { key: readKey });
    const create = await api.request('POST', '/v2/chat/agents', { key: readKey, body: validAgent() });
    const remove = await api.request('DELETE', `/v1/chat/agents/${agent.id}`, { key: readKey });

    // Assess
    expect(list.status).toBe(200);
    expect(ids(list)).toEqual([agent.id]);
    expect(one.status).toBe(200);
    expectError(create, 403, 'FORBIDDEN');
    expectError(remove, 403, 'FORBIDDEN');
    expect((await listAgents(key)).body.pagination.total).toBe(1);
  });

  it('lets an agents:write key create and also read agents', async () => {
    // Prepare
    const { orgId } = await api.newOrg();
    const writeKey = await api.newKey(orgId, ['agents:write']);

    // Act
    const create = await api.request('POST', '/v2/chat/agents', { key: writeKey, body: validAgent() });
    const one = await api.request('GET', `/v1/chat/agents/${create.body.id}`, { key: writeKey });
    const list = await api.request('GET', '/v1/chat/agents', { key: writeKey });

    // Assess
    expect(create.status).toBe(201);
    expect(one.status).toBe(200);
    expect(ids(list)).toEqual([create.body.id]);
  });
});
