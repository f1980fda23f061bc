import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routeGroups } from '../../functions/route-groups.ts';
import { builtinModels, modelId } from '../../shared/models/model-catalog.ts';
import { expectError, startApi, type ApiResponse, type TestApi } from '../support/api.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

const numRuns = 100;

/** Any JSON value, strings included that are not plain ASCII (lone surrogates too). */
const anyJson = fc.oneof(fc.jsonValue(), fc.jsonValue({ stringUnit: 'binary' }));

/** Values that pass or nearly pass some field's rules, so that mutated bodies reach the deeper checks too. */
const nearlyValid = fc.constantFrom<unknown>(
  '',
  '   ',
  'x',
  'en-US',
  'pipeline',
  'sts',
  'GET',
  'post',
  'API_TOOL',
  'FUNCTION_TOOL',
  'https://api.example.com/{{id}}',
  'ftp://x',
  true,
  false,
  null,
  0,
  [],
  {},
  [{ toolId: crypto.randomUUID() }],
  modelId('builtin', 'LLM', builtinModels.llm),
  modelId('builtin', 'STT', builtinModels.stt),
  modelId('builtin', 'TTS', builtinModels.tts),
  { type: 'object', properties: { a: { type: 'nonsense' } } },
  { type: 'string' },
);

/** An object schema carrying arbitrary extra keywords, which ajv ignores but the store must still hold. */
const looseObjectSchema = fc.dictionary(fc.string(), anyJson).map((keywords) => ({ ...keywords, type: 'object' }));

/** A list of `path → value` edits; an undefined value removes the field. */
function mutations(paths: readonly string[]) {
  const value = fc.option(fc.oneof(anyJson, nearlyValid, looseObjectSchema), { nil: undefined });
  return fc.array(fc.tuple(fc.constantFrom(...paths), value), { minLength: 1, maxLength: 4 });
}

function mutate(base: Record<string, unknown>, edits: [string, unknown][]): unknown {
  const body = structuredClone(base);
  for (const [path, value] of edits) {
    const segments = path.split('.');
    const last = segments.pop() as string;
    let target: any = body;
    for (const segment of segments) {
      if (typeof target[segment] !== 'object' || target[segment] === null) target[segment] = {};
      target = target[segment];
    }
    if (value === undefined) delete target[last];
    else target[last] = value;
  }
  return body;
}

function expectSafeOutcome(response: ApiResponse): void {
  expect([201, 400, 409, 422]).toContain(response.status);
  if (response.status === 201) return;
  expect(response.body).toEqual({
    error: expect.objectContaining({ code: expect.any(String), message: expect.any(String), status: response.status }),
    meta: { requestId: expect.any(String), timestamp: expect.any(String) },
  });
}

/**
 * Sends every generated body to `path` from one fresh organization and checks after each request that the list behind
 * `listPath` holds exactly as many records as requests answered 201.
 */
async function fuzz(path: string, listPath: string, bodies: fc.Arbitrary<unknown>): Promise<void> {
  // Prepare
  const { key } = await api.newOrg();
  let created = 0;
  await fc.assert(
    fc.asyncProperty(bodies, async (body) => {
      // Act
      const response = await api.request('POST', path, { key, body });

      // Assess
      expectSafeOutcome(response);
      if (response.status === 201) created += 1;
      const list = await api.request('GET', `${listPath}?limit=1`, { key });
      expect(list.body.pagination.total).toBe(created);
    }),
    { numRuns },
  );
}

const agentFields = [
  'fullName', 'description', 'role', 'language', 'systemPrompt', 'specialInstructions', 'modelId', 'sttModelId', 'ttsModelId',
  'voiceEnabled', 'voicePipelineMode', 'knowledgeStoreId', 'tools', 'welcomeAllowInterruptions', 'isActive', 'unknownField',
];
const validAgent = { fullName: 'Fuzz Agent', description: 'Fuzzed', role: 'You are fuzzed.' };

const toolFields = ['name', 'description', 'type', 'ajvPropertiesSchema', 'preExecutionMessage', 'apiTool', 'unknownField'];
const toolFieldPaths = [
  ...toolFields, 'ajvPropertiesSchema.properties', 'apiTool.url', 'apiTool.method', 'apiTool.headers', 'apiTool.headers.x-key',
];
/** Each call names its tool differently, so that a valid body is not refused as a duplicate. */
let toolCount = 0;
const validTool = () => ({
  name: `FUZZ_${(toolCount += 1)}`,
  description: 'Fuzzed',
  type: 'API_TOOL',
  ajvPropertiesSchema: { type: 'object', properties: { id: { type: 'string' } } },
  apiTool: { url: 'https://api.example.com/items/{{id}}', method: 'GET', headers: { 'x-key': 'secret' } },
});

describe('createAgent with arbitrary input', () => {
  it('answers arbitrary JSON with 201/400/409/422 in the envelope and creates nothing unless 201', async () => {
    await fuzz('/v2/chat/agents', '/v1/chat/agents', fc.oneof(anyJson, fc.dictionary(fc.constantFrom(...agentFields), anyJson)));
  });

  it('answers mutations of a valid body the same way', async () => {
    await fuzz('/v2/chat/agents', '/v1/chat/agents', mutations(agentFields).map((edits) => mutate(validAgent, edits)));
  });
});

describe('createTool with arbitrary input', () => {
  it('answers arbitrary JSON with 201/400/409/422 in the envelope and creates nothing unless 201', async () => {
    await fuzz('/v1/chat/tools', '/v1/chat/tools', fc.oneof(anyJson, fc.dictionary(fc.constantFrom(...toolFields), anyJson)));
  });

  it('answers mutations of a valid body the same way', async () => {
    await fuzz('/v1/chat/tools', '/v1/chat/tools', mutations(toolFieldPaths).map((edits) => mutate(validTool(), edits)));
  });
});

describe('free-form objects with arbitrary content', () => {
  /** JSON with the values DynamoDB refuses mixed in at any depth: huge, tiny and inexact numbers, empty keys, deep nesting. */
  const hostileJson = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      anyJson,
      fc.constantFrom(1e300, -1e300, 1e-200, 2 ** 53, -(2 ** 60), 5e-324),
      fc.array(tie('value'), { maxLength: 3 }),
      fc.dictionary(fc.oneof(fc.constant(''), fc.string()), tie('value'), { maxKeys: 3 }),
      fc.integer({ min: 20, max: 45 }).map((depth) => JSON.parse(`${'['.repeat(depth)}1${']'.repeat(depth)}`)),
    ),
  })).value;
  const freeFormObject = fc.dictionary(fc.string(), hostileJson, { maxKeys: 4 });

  it('createSession answers 201 or a 400 in the envelope, and creates nothing unless 201', async () => {
    const { key } = await api.newOrg();
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: validAgent });
    const bodies = fc.record({ metadata: freeFormObject, sessionVariables: freeFormObject }).map((body) => ({ agentId: agent.body.id, ...body }));
    let created = 0;
    await fc.assert(
      fc.asyncProperty(bodies, async (body) => {
        const response = await api.request('POST', '/v1/chat/chat/sessions', { key, body });
        expectSafeOutcome(response);
        if (response.status === 201) created += 1;
        expect((await api.request('GET', '/v1/chat/chat/sessions?limit=1', { key })).body.pagination.total).toBe(created);
      }),
      { numRuns },
    );
  });

  it.each([false, true])('sendMessage (stream %s) answers a reply or a 400 in the envelope, and stores messages only with a reply', async (stream) => {
    const { key } = await api.newOrg();
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: validAgent });
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
    let stored = 0;
    await fc.assert(
      fc.asyncProperty(freeFormObject, async (metadata) => {
        const response = await api.request('POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, { key, body: { content: 'Hello', stream, metadata } });
        expect([200, 400]).toContain(response.status);
        if (response.status === 400) expectSafeOutcome(response);
        else stored += 2;
        if (stream && response.status === 200) expect(response.text).not.toContain('"error"');
        const messages = await api.request('GET', `/api/v1/chat/sessions/${session.body.id}/messages?limit=1`, { key });
        expect(messages.body.pagination.total).toBe(stored);
      }),
      { numRuns },
    );
  });
});

describe('paths with arbitrary parameters', () => {
  const templated = routeGroups.flatMap((group) => Object.values(group.routes)).filter((route) => route.path.includes('{'));
  /** Percent-encodings broken in every way, beside arbitrary text. */
  const segment = fc.oneof(
    fc.string({ minLength: 1 }),
    fc.constantFrom('%', '%Z', '%ZZ', '%E0%A4%A', '%C0%80', '%00', '%FF%FE', '%2F', '%25', '..', '%2e%2e', crypto.randomUUID()),
    fc.array(fc.constantFrom('%', 'Z', '2', 'F', 'a', '/', '.', 'é'), { minLength: 1, maxLength: 8 }).map((chars) => chars.join('')),
  );
  const requests = fc.record({
    route: fc.constantFrom(...templated),
    values: fc.array(segment, { minLength: 3, maxLength: 3 }),
    method: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE'),
    authenticated: fc.boolean(),
  });

  it('answers a carrier callback 404 NOT_FOUND in the envelope where no carrier was given an address to call back (no PUBLIC_BASE_URL)', async () => {
    for (const callback of ['status', 'relay-ended', 'whisper', 'recording']) {
      expectError(await api.request('POST', `/twilio/calls/0/${crypto.randomUUID()}/${callback}`, { rawBody: '', headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 404, 'NOT_FOUND');
    }
  });

  it("answers the probe's malformed id (no credentials) 404 NOT_FOUND in the envelope", async () => {
    expectError(await api.request('GET', '/v1/chat/agents/%ZZ'), 404, 'NOT_FOUND');
  });

  it('never answers 500 or outside the envelope', async () => {
    const { key } = await api.newOrg();
    await fc.assert(
      fc.asyncProperty(requests, async ({ route, values, method, authenticated }) => {
        let index = 0;
        const path = route.path.replace(/\{[^}]+\}/g, () => values[index++] as string);
        const response = await fetch(`${api.baseUrl}${path}`, { method, headers: authenticated ? { 'x-api-key': key } : {} });
        const text = await response.text();
        expect(response.status, `${method} ${path}: ${text}`).toBeLessThan(500);
        if (response.status >= 400) expect(JSON.parse(text).error).toMatchObject({ code: expect.any(String), status: response.status });
      }),
      { numRuns: 300 },
    );
  });
});
