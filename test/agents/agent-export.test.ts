import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startApi, type TestApi } from '../support/api.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

const unknownId = '00000000-0000-4000-8000-000000000000';
const marker = '__REDACTED__';

async function created(method: string, path: string, key: string, body: unknown): Promise<any> {
  const response = await api.request(method, path, { key, body });
  expect(response.status, response.text).toBe(201);
  return response.body;
}

let toolCount = 0;
/** An API_TOOL with an authorization header, a secret query parameter, a placeholder header and a plain header. */
function weatherTool(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  toolCount += 1;
  return {
    name: `GET_WEATHER_${toolCount}`,
    description: 'Gets the weather for a city',
    type: 'API_TOOL',
    ajvPropertiesSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    preExecutionMessage: 'Checking the sky…',
    apiTool: {
      url: 'https://api.example.com/weather?city={{city}}&appid=s3cr3t-app-id',
      method: 'GET',
      headers: { Authorization: 'Bearer live-token-123', Accept: 'application/json', 'x-tenant': '{{tenant}}' },
    },
    ...overrides,
  };
}

function orderTool(): Record<string, unknown> {
  toolCount += 1;
  return { name: `CANCEL_ORDER_${toolCount}`, description: 'Cancels an order', type: 'FUNCTION_TOOL', functionTool: { url: 'https://hooks.example.com/tools', timeoutMs: 4000 } };
}

/** An agent using every part of an export: tools of both types, a knowledge store, a handoff target, voice and analysis. */
async function fullAgent(key: string): Promise<{ agent: any; tools: any[]; store: any; target: any }> {
  const tools = [await created('POST', '/v1/chat/tools', key, weatherTool()), await created('POST', '/v1/chat/tools', key, orderTool())];
  const store = await created('POST', '/v1/chat/knowledge-stores', key, { name: 'Product manual' });
  const target = await created('POST', '/v2/chat/agents', key, { fullName: 'Billing desk', description: 'Billing', role: 'You handle billing.' });
  const agent = await created('POST', '/v2/chat/agents', key, {
    fullName: 'Support Agent',
    description: 'Answers questions',
    role: 'You are a helpful support agent.',
    language: 'en-US',
    systemPrompt: 'Be brief.',
    voiceEnabled: true,
    voicePipelineMode: 'pipeline',
    voice: { provider: 'builtin', voiceId: 'en-us', endOfTurn: 'SILENCE', endOfTurnSilenceMs: 700, welcomeMessage: 'Hello!' },
    analysis: { dataExtraction: { fields: [{ name: 'orderId', type: 'string', description: 'The order discussed' }] } },
    knowledgeStoreId: store.id,
    tools: [{ toolId: tools[0].id, toolDescription: 'Use for weather' }, { toolId: tools[1].id }],
    transferDestinations: [{ number: '+15550100', description: 'A human', mode: 'warm' }],
    handoffAgents: [{ agentId: target.id, description: 'Billing questions' }],
  });
  return { agent, tools, store, target };
}

async function exported(key: string, agentId: string): Promise<any> {
  const response = await api.request('GET', `/v2/chat/agents/${agentId}/export`, { key });
  expect(response.status, response.text).toBe(200);
  return response.body;
}

async function total(key: string, path: string): Promise<number> {
  const response = await api.request('GET', `${path}?limit=1`, { key });
  expect(response.status).toBe(200);
  return response.body.pagination.total;
}

describe('GET /v2/chat/agents/{id}/export', () => {
  it("gives the agent's configuration and its tools, secrets redacted and other resources named, without ids", async () => {
    // Prepare
    const { key } = await api.newOrg();
    const { agent, tools } = await fullAgent(key);

    // Act
    const document = await exported(key, agent.id);

    // Assess
    expect(document).toMatchObject({ kind: 'agent', formatVersion: 1 });
    expect(document.agent).toEqual({
      fullName: 'Support Agent',
      description: 'Answers questions',
      role: 'You are a helpful support agent.',
      language: 'en-US',
      systemPrompt: 'Be brief.',
      modelId: agent.modelId,
      voiceEnabled: true,
      voicePipelineMode: 'pipeline',
      voice: agent.voice,
      analysis: agent.analysis,
      knowledgeStore: { name: 'Product manual' },
      tools: [{ name: tools[0].name, toolDescription: 'Use for weather' }, { name: tools[1].name }],
      transferDestinations: agent.transferDestinations,
      handoffAgents: [{ agentName: 'Billing desk', description: 'Billing questions' }],
      publishMode: 'AUTO',
    });
    expect(document.tools[0].apiTool).toEqual({
      url: `https://api.example.com/weather?city={{city}}&appid=${marker}`,
      method: 'GET',
      headers: { Authorization: marker, Accept: 'application/json', 'x-tenant': '{{tenant}}' },
    });
    expect(document.tools[1]).toEqual({ name: tools[1].name, description: 'Cancels an order', type: 'FUNCTION_TOOL', ajvPropertiesSchema: tools[1].ajvPropertiesSchema, functionTool: { url: 'https://hooks.example.com/tools', timeoutMs: 4000 } });
    expect(document.redactions.map((redaction: any) => redaction.field)).toEqual(['tools.0.apiTool.headers.Authorization', 'tools.0.apiTool.url']);
    const text = JSON.stringify(document);
    for (const secret of ['live-token-123', 's3cr3t-app-id', tools[1].functionTool.signingSecret]) expect(text).not.toContain(secret);
    expect(text).not.toContain(agent.id);
    expect(text).not.toContain(agent.orgId);
  });

  it("answers 404 for another organization's agent and for an unknown one", async () => {
    // Prepare
    const owner = await api.newOrg();
    const other = await api.newOrg();
    const agent = await created('POST', '/v2/chat/agents', owner.key, { fullName: 'A', description: 'B', role: 'C' });

    // Act
    const foreign = await api.request('GET', `/v2/chat/agents/${agent.id}/export`, { key: other.key });
    const unknown = await api.request('GET', `/v2/chat/agents/${unknownId}/export`, { key: owner.key });

    // Assess
    expectError(foreign, 404, 'NOT_FOUND');
    expectError(unknown, 404, 'NOT_FOUND');
  });

  it('exports a version as it was, its tools as defined then, and the draft by default', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const { agent, tools } = await fullAgent(key);
    const asCreated = await exported(key, agent.id);
    const changedTool = await api.request('PATCH', `/v1/chat/tools/${tools[0].id}`, { key, body: { description: 'Gets tomorrow\'s weather' } });
    expect(changedTool.status, changedTool.text).toBe(200);
    const changedAgent = await api.request('PATCH', `/v2/chat/agents/${agent.id}`, { key, body: { systemPrompt: 'Be very brief.', publishMode: 'MANUAL' } });
    expect(changedAgent.status, changedAgent.text).toBe(200);
    const path = `/v2/chat/agents/${agent.id}/export`;

    // Act
    const first = await api.request('GET', `${path}?version=1`, { key });
    const draft = await exported(key, agent.id);
    const unknownVersion = await api.request('GET', `${path}?version=99`, { key });
    const notANumber = await api.request('GET', `${path}?version=latest`, { key });
    const foreign = await api.request('GET', `${path}?version=1`, { key: (await api.newOrg()).key });

    // Assess
    expect(first.status, first.text).toBe(200);
    // The publish mode is the agent's lifecycle, not its configuration: as it is now.
    expect(comparable(first.body)).toEqual(comparable({ ...asCreated, agent: { ...asCreated.agent, publishMode: 'MANUAL' } }));
    expect(draft.agent.systemPrompt).toBe('Be very brief.');
    expect(draft.tools[0].description).toBe("Gets tomorrow's weather");
    expectError(unknownVersion, 404, 'NOT_FOUND');
    expectError(notANumber, 400, 'VALIDATION_ERROR');
    expect(notANumber.body.error.details).toEqual([expect.objectContaining({ field: 'version' })]);
    expectError(foreign, 404, 'NOT_FOUND');
  });

  it('leaves out a handoff target deleted since, which the agent could not hand over to either', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const kept = await created('POST', '/v2/chat/agents', key, { fullName: 'Kept', description: 'B', role: 'C' });
    const gone = await created('POST', '/v2/chat/agents', key, { fullName: 'Gone', description: 'B', role: 'C' });
    const agent = await created('POST', '/v2/chat/agents', key, {
      fullName: 'A',
      description: 'B',
      role: 'C',
      handoffAgents: [{ agentId: gone.id, description: 'Gone' }, { agentId: kept.id, description: 'Kept' }],
    });
    expect((await api.request('DELETE', `/v1/chat/agents/${gone.id}`, { key })).status).toBe(204);

    // Act
    const document = await exported(key, agent.id);

    // Assess
    expect(document.agent.handoffAgents).toEqual([{ agentName: 'Kept', description: 'Kept' }]);
  });

  it('refuses a key without tools:read when the agent has tools, since the document holds their definitions', async () => {
    // Prepare
    const { orgId, key } = await api.newOrg();
    const tool = await created('POST', '/v1/chat/tools', key, orderTool());
    const agent = await created('POST', '/v2/chat/agents', key, { fullName: 'A', description: 'B', role: 'C', tools: [{ toolId: tool.id }] });
    const agentsOnly = await api.newKey(orgId, ['agents:read']);

    // Act
    const response = await api.request('GET', `/v2/chat/agents/${agent.id}/export`, { key: agentsOnly });

    // Assess
    expectError(response, 403, 'FORBIDDEN', 'tools');
  });
});

describe('POST /v2/chat/agents/import', () => {
  it("recreates the agent and its tools in the caller's organization, reporting what must be supplied again", async () => {
    // Prepare
    const source = await api.newOrg();
    const { agent, tools } = await fullAgent(source.key);
    const document = await exported(source.key, agent.id);
    const target = await api.newOrg();

    // Act
    const result = await created('POST', '/v2/chat/agents/import', target.key, document);

    // Assess
    expect(result.agent).toMatchObject({ orgId: target.orgId, fullName: 'Support Agent', voice: agent.voice, analysis: agent.analysis, isActive: true, isPublic: false });
    expect(result.agent.id).not.toBe(agent.id);
    expect(result.agent.knowledgeStoreId).toBeUndefined();
    expect(result.agent.handoffAgents).toEqual([]);
    expect(result.tools.map((entry: any) => [entry.name, entry.outcome, entry.tool.orgId])).toEqual([
      [tools[0].name, 'created', target.orgId],
      [tools[1].name, 'created', target.orgId],
    ]);
    expect(result.tools[1].tool.functionTool.signingSecret).toMatch(/^whsec_/);
    expect(result.tools[1].tool.functionTool.signingSecret).not.toBe(tools[1].functionTool.signingSecret);
    expect(result.agent.tools).toEqual([{ toolId: result.tools[0].tool.id, toolDescription: 'Use for weather' }, { toolId: result.tools[1].tool.id }]);
    expect(result.resupply.map((item: any) => [item.kind, item.field, item.toolId])).toEqual([
      ['secret', 'tools.0.apiTool.headers.Authorization', result.tools[0].tool.id],
      ['secret', 'tools.0.apiTool.url', result.tools[0].tool.id],
      ['signingSecret', 'tools.1.functionTool', result.tools[1].tool.id],
      ['knowledgeStore', 'agent.knowledgeStore', undefined],
      ['handoffAgent', 'agent.handoffAgents.0', undefined],
      ['phoneNumber', 'agent.voiceEnabled', undefined],
    ]);
    const stored = await api.request('GET', `/v1/chat/agents/${result.agent.id}`, { key: target.key });
    expect(stored.body).toEqual(result.agent);
    expect(await total(source.key, '/v1/chat/agents')).toBe(2);
    expect(await total(source.key, '/v1/chat/tools')).toBe(2);
  });

  it('links the knowledge store and handoff target the importing organization has of those names, and reuses identical tools', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const { agent, store, target, tools } = await fullAgent(key);
    const document = await exported(key, agent.id);

    // Act
    const result = await created('POST', '/v2/chat/agents/import', key, document);

    // Assess
    expect(result.agent.knowledgeStoreId).toBe(store.id);
    expect(result.agent.handoffAgents).toEqual([{ agentId: target.id, description: 'Billing questions' }]);
    expect(result.tools.map((entry: any) => [entry.outcome, entry.tool.id])).toEqual([
      ['reused', tools[0].id],
      ['reused', tools[1].id],
    ]);
    expect(result.resupply.map((item: any) => item.kind)).toEqual(['phoneNumber']);
    expect(await total(key, '/v1/chat/tools')).toBe(2);
  });

  it('creates a tool whose name the organization uses for another definition under the next free name', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const tool = await created('POST', '/v1/chat/tools', key, weatherTool());
    const agent = await created('POST', '/v2/chat/agents', key, { fullName: 'A', description: 'B', role: 'C', tools: [{ toolId: tool.id }] });
    const document = await exported(key, agent.id);
    await created('POST', '/v1/chat/tools', key, { ...weatherTool(), name: `${tool.name}_2` });
    const changed = { ...document, tools: [{ ...document.tools[0], description: 'Gets tomorrow’s weather' }] };

    // Act
    const result = await created('POST', '/v2/chat/agents/import', key, changed);

    // Assess
    expect(result.tools[0]).toMatchObject({ name: tool.name, outcome: 'renamed', tool: { name: `${tool.name}_3`, description: 'Gets tomorrow’s weather' } });
    expect(result.agent.tools).toEqual([{ toolId: result.tools[0].tool.id }]);
  });

  it('takes back a document larger than the usual body limit, as an agent with many large tools exports', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const tools = [];
    for (let index = 0; index < 20; index += 1) {
      const schema = { type: 'object', description: 'x'.repeat(15_000), properties: { city: { type: 'string' } } };
      tools.push(await created('POST', '/v1/chat/tools', key, { ...weatherTool(), ajvPropertiesSchema: schema }));
    }
    const agent = await created('POST', '/v2/chat/agents', key, { fullName: 'A', description: 'B', role: 'C', tools: tools.map((tool) => ({ toolId: tool.id })) });
    const document = await exported(key, agent.id);
    expect(JSON.stringify(document).length).toBeGreaterThan(262_144);
    const target = await api.newOrg();

    // Act
    const result = await created('POST', '/v2/chat/agents/import', target.key, document);

    // Assess
    expect(result.tools).toHaveLength(20);
  });

  it('falls back to the default LLM and leaves out a voice the deployment lacks, reporting both', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const agent = await created('POST', '/v2/chat/agents', key, { fullName: 'A', description: 'B', role: 'C' });
    const document = await exported(key, agent.id);
    const foreign = { ...document, agent: { ...document.agent, modelId: unknownId, voice: { provider: 'builtin', voiceId: 'xx-nowhere' } } };

    // Act
    const result = await created('POST', '/v2/chat/agents/import', key, foreign);

    // Assess
    expect(result.agent.modelId).toBe(agent.modelId);
    expect(result.agent.voice).toBeUndefined();
    expect(result.resupply.map((item: any) => [item.kind, item.field])).toEqual([
      ['model', 'agent.modelId'],
      ['voice', 'agent.voice'],
    ]);
  });

  it('answers 400 with the field of each problem for a bad document, and creates nothing', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const tool = weatherTool();
    const document = { kind: 'agent', formatVersion: 1, agent: { fullName: 'A', description: 'B', role: 'C', tools: [{ name: tool.name }] }, tools: [tool] };

    // Act
    const cases = await Promise.all([
      api.request('POST', '/v2/chat/agents/import', { key, body: { ...document, formatVersion: 2 } }),
      api.request('POST', '/v2/chat/agents/import', { key, body: { ...document, agent: { ...document.agent, tools: [{ name: 'MISSING' }] } } }),
      api.request('POST', '/v2/chat/agents/import', { key, body: { ...document, agent: { ...document.agent, voiceEnabled: true } } }),
      api.request('POST', '/v2/chat/agents/import', { key, body: { ...document, tools: [{ ...tool, apiTool: { url: 'http://169.254.169.254/latest', method: 'GET' } }] } }),
      api.request('POST', '/v2/chat/agents/import', { key, body: { ...document, tools: [tool, tool] } }),
      api.request('POST', '/v2/chat/agents/import', { key, body: [] }),
      api.request('POST', '/v2/chat/agents/import', { key, body: { ...document, tools: [{ ...tool, ajvPropertiesSchema: { type: 'string' } }] } }),
      api.request('POST', '/v2/chat/agents/import', { key, body: { ...document, agent: { ...document.agent, orgId: 'another-org' } } }),
    ]);

    // Assess
    expectError(cases[0], 400, 'VALIDATION_ERROR', 'formatVersion');
    expectError(cases[1], 400, 'VALIDATION_ERROR', 'agent.tools.0.name');
    expectError(cases[2], 400, 'VALIDATION_ERROR', 'agent.voicePipelineMode');
    expectError(cases[3], 400, 'TOOL_URL_NOT_ALLOWED', 'tools.0.apiTool.url');
    expectError(cases[4], 400, 'VALIDATION_ERROR', 'tools.1.name');
    expectError(cases[5], 400, 'VALIDATION_ERROR');
    expectError(cases[6], 422, 'INVALID_TOOL_SCHEMA', 'tools.0.ajvPropertiesSchema.type');
    expectError(cases[7], 400, 'VALIDATION_ERROR');
    expect(cases[7].body.error.message).toContain('orgId');
    expect(await total(key, '/v1/chat/agents')).toBe(0);
    expect(await total(key, '/v1/chat/tools')).toBe(0);
  });

  it('refuses a key without tools:write when the import would create tools, before creating anything', async () => {
    // Prepare
    const { orgId, key } = await api.newOrg();
    const tool = weatherTool();
    const agentsOnly = await api.newKey(orgId, ['agents:write']);
    const document = { kind: 'agent', formatVersion: 1, agent: { fullName: 'A', description: 'B', role: 'C', tools: [{ name: tool.name }] }, tools: [tool] };

    // Act
    const response = await api.request('POST', '/v2/chat/agents/import', { key: agentsOnly, body: document });

    // Assess
    expectError(response, 403, 'FORBIDDEN', 'tools');
    expect(await total(key, '/v1/chat/tools')).toBe(0);
  });

  it('replays the first answer to a retry with the same Idempotency-Key, creating the agent once', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const document = { kind: 'agent', formatVersion: 1, agent: { fullName: 'A', description: 'B', role: 'C', tools: [{ name: 'CANCEL_IT' }] }, tools: [{ ...orderTool(), name: 'CANCEL_IT' }] };
    const headers = { 'idempotency-key': 'import-1' };

    // Act
    const first = await api.request('POST', '/v2/chat/agents/import', { key, body: document, headers });
    const second = await api.request('POST', '/v2/chat/agents/import', { key, body: document, headers });

    // Assess
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body).toEqual(first.body);
    expect(await total(key, '/v1/chat/agents')).toBe(1);
  });
});

/** The document less what an import may change: when it was exported. */
const comparable = ({ exportedAt: _exportedAt, ...document }: any) => document;

describe('export, import, export', () => {
  it('gives the same document, whatever the configuration', async () => {
    const source = await api.newOrg();
    const target = await api.newOrg();
    // Both organizations have the store and the handoff target the generated agents may name.
    const [sourceNamed] = await Promise.all(
      [source, target].map(async ({ key }) => ({
        storeId: (await created('POST', '/v1/chat/knowledge-stores', key, { name: 'Product manual' })).id as string,
        handoffId: (await created('POST', '/v2/chat/agents', key, { fullName: 'Billing desk', description: 'Billing', role: 'You handle billing.' })).id as string,
      })),
    );
    const { storeId, handoffId } = sourceNamed as { storeId: string; handoffId: string };

    const header = fc.record({ name: fc.constantFrom('Authorization', 'x-api-key', 'Accept', 'x-tenant'), value: fc.constantFrom('Bearer t0ken', '{{tenant}}', 'application/json', 'Token {{key}}') });
    const apiTool = fc.record({
      type: fc.constant('API_TOOL'),
      apiTool: fc.record({
        url: fc.constantFrom('https://api.example.com/w?city={{city}}', 'https://api.example.com/w?api_key=abc&q={{q}}', 'https://user:pw@api.example.com/w'),
        method: fc.constantFrom('GET', 'POST'),
        headers: fc.uniqueArray(header, { selector: (entry) => entry.name, maxLength: 3 }).map((entries) => Object.fromEntries(entries.map((entry) => [entry.name, entry.value]))),
      }),
    });
    const functionTool = fc.record({ type: fc.constant('FUNCTION_TOOL'), functionTool: fc.record({ url: fc.constant('https://hooks.example.com/t?token=x'), timeoutMs: fc.integer({ min: 100, max: 30_000 }) }, { requiredKeys: ['url'] }) });
    const tool = fc.record({ definition: fc.oneof(apiTool, functionTool), preExecutionMessage: fc.option(fc.string({ minLength: 1, maxLength: 20 }).filter((text) => text.trim() === text && text.length > 0), { nil: undefined }), toolDescription: fc.option(fc.constantFrom('Use it often', 'Rarely'), { nil: undefined }) });
    const configuration = fc.record({
      tools: fc.array(tool, { maxLength: 3 }),
      voice: fc.option(fc.record({ provider: fc.constant('builtin'), voiceId: fc.constantFrom('en-us', 'en-us+f3'), endOfTurn: fc.constantFrom('SILENCE', 'STT_ENDPOINTING') }), { nil: undefined }),
      voicePipelineMode: fc.constantFrom(null, 'pipeline'),
      analysis: fc.option(fc.record({ intentRecognition: fc.record({ enabled: fc.boolean(), intents: fc.constant([{ name: 'refund', description: 'Wants money back' }]) }) }), { nil: undefined }),
      withStore: fc.boolean(),
      withHandoff: fc.boolean(),
      systemPrompt: fc.option(fc.string({ minLength: 1, maxLength: 40 }).filter((text) => text.trim() === text && text.length > 0), { nil: undefined }),
    });

    let run = 0;
    await fc.assert(
      fc.asyncProperty(configuration, async (config) => {
        run += 1;
        const tools = [];
        for (const [index, entry] of config.tools.entries()) {
          const body = { name: `T${run}_${index}`, description: 'A tool', ...entry.definition, ...(entry.preExecutionMessage ? { preExecutionMessage: entry.preExecutionMessage } : {}) };
          tools.push({ tool: await created('POST', '/v1/chat/tools', source.key, body), toolDescription: entry.toolDescription });
        }
        const agent = await created('POST', '/v2/chat/agents', source.key, {
          fullName: `Agent ${run}`,
          description: 'Generated',
          role: 'You help.',
          ...(config.systemPrompt ? { systemPrompt: config.systemPrompt } : {}),
          voiceEnabled: config.voicePipelineMode !== null,
          voicePipelineMode: config.voicePipelineMode,
          ...(config.voice ? { voice: config.voice } : {}),
          ...(config.analysis ? { analysis: config.analysis } : {}),
          ...(config.withStore ? { knowledgeStoreId: storeId } : {}),
          ...(config.withHandoff ? { handoffAgents: [{ agentId: handoffId, description: 'Billing' }] } : {}),
          tools: tools.map(({ tool: created, toolDescription }) => ({ toolId: created.id, ...(toolDescription ? { toolDescription } : {}) })),
        });

        const first = await exported(source.key, agent.id);
        const imported = await created('POST', '/v2/chat/agents/import', target.key, first);
        const second = await exported(target.key, imported.agent.id);

        expect(comparable(second)).toEqual(comparable(first));
      }),
      { numRuns: 12 },
    );
  });
});
