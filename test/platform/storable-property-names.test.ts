/**
 * Free-form JSON (metadata, session variables, tool schemas and headers, contact attributes, campaign variables)
 * is stored as the client sent it, or refused with a 400 naming the path: never a 500, never a silent loss, and a
 * streamed reply is refused before it starts. `__proto__` and `constructor` are the two property names DynamoDB's
 * marshaller cannot keep (shared/platform/schemas/storable-json.ts); every other name, `prototype` or `toString` included,
 * round-trips.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startApi, type TestApi } from '../support/api.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

const unknownId = '00000000-0000-4000-8000-000000000000';

async function newAgent(key: string): Promise<string> {
  return (await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'A', description: 'A', role: 'A' } })).body.id;
}

const sendJson = (key: string, method: string, path: string, rawBody: string) =>
  api.request(method, path, { key, rawBody, headers: { 'content-type': 'application/json' } });

/** Free-form objects as raw JSON text (JSON.parse makes `__proto__` an own property, as a client's body does), and the path each must be refused at. */
const unstorable: { name: string; json: string; path: string }[] = [
  { name: 'a nested __proto__', json: '{"x":{"__proto__":{"a":1}}}', path: 'x.__proto__' },
  { name: 'a top-level __proto__', json: '{"__proto__":{"a":1}}', path: '__proto__' },
  { name: 'a top-level __proto__ holding a string', json: '{"ok":1,"__proto__":"x"}', path: '__proto__' },
  { name: 'a constructor.prototype', json: '{"constructor":{"prototype":{"a":1}}}', path: 'constructor' },
  { name: 'a nested constructor', json: '{"x":[{"constructor":"s"}]}', path: 'x.0.constructor' },
];

describe.each(['metadata', 'sessionVariables'])('createSession with %s holding an unstorable property name', (field) => {
  it.each(unstorable)('answers 400 VALIDATION_ERROR naming the path for $name, and creates nothing', async ({ json, path }) => {
    // Prepare
    const { key } = await api.newOrg();
    const agentId = await newAgent(key);

    // Act
    const response = await sendJson(key, 'POST', '/v1/chat/chat/sessions', `{"agentId":"${agentId}","${field}":${json}}`);

    // Assess
    expectError(response, 400, 'VALIDATION_ERROR', `${field}.${path}`);
    expect((await api.request('GET', '/v1/chat/chat/sessions', { key })).body.pagination.total).toBe(0);
  });
});

describe.each([false, true])('sendMessage (stream %s) with metadata holding an unstorable property name', (stream) => {
  it.each(unstorable)('answers 400 VALIDATION_ERROR naming the path for $name before any reply, and stores no message', async ({ json, path }) => {
    // Prepare
    const { key } = await api.newOrg();
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: await newAgent(key) } });

    // Act
    const response = await sendJson(key, 'POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, `{"content":"Hello","stream":${stream},"metadata":${json}}`);

    // Assess
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expectError(response, 400, 'VALIDATION_ERROR', `metadata.${path}`);
    expect((await api.request('GET', `/api/v1/chat/sessions/${session.body.id}/messages`, { key })).body.pagination.total).toBe(0);
  });
});

describe('tools with an unstorable property name', () => {
  const tool = (extra: string) => `{"name":"LOOKUP","description":"Looks up.","type":"API_TOOL",${extra}}`;

  it.each([
    { name: 'a __proto__ property in ajvPropertiesSchema', json: tool('"ajvPropertiesSchema":{"type":"object","properties":{"__proto__":{"type":"string"}}},"apiTool":{"url":"https://example.com","method":"GET"}'), path: 'ajvPropertiesSchema.properties.__proto__' },
    { name: 'a constructor property in ajvPropertiesSchema', json: tool('"ajvPropertiesSchema":{"type":"object","properties":{"constructor":{"type":"string"}}},"apiTool":{"url":"https://example.com","method":"GET"}'), path: 'ajvPropertiesSchema.properties.constructor' },
    { name: 'a __proto__ header', json: tool('"apiTool":{"url":"https://example.com","method":"GET","headers":{"__proto__":"x"}}'), path: 'apiTool.headers.__proto__' },
    { name: 'a constructor header', json: tool('"apiTool":{"url":"https://example.com","method":"GET","headers":{"constructor":"x"}}'), path: 'apiTool.headers.constructor' },
  ])('answers 400 VALIDATION_ERROR naming the path for $name, and creates nothing', async ({ json, path }) => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await sendJson(key, 'POST', '/v1/chat/tools', json);

    // Assess
    expectError(response, 400, 'VALIDATION_ERROR', path);
    expect((await api.request('GET', '/v1/chat/tools', { key })).body.pagination.total).toBe(0);
  });
});

describe('contacts with an unstorable attribute name', () => {
  it.each(['__proto__', 'constructor'])('answers 400 VALIDATION_ERROR naming attributes.%s, and creates nothing', async (name) => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await sendJson(key, 'POST', '/v1/chat/contacts', `{"phoneNumber":"+14155550100","name":"Ada","attributes":{"plan":"gold","${name}":"x"}}`);

    // Assess
    expectError(response, 400, 'VALIDATION_ERROR', `attributes.${name}`);
    expect((await api.request('GET', '/v1/chat/contacts', { key })).body.pagination.total).toBe(0);
  });

  it.each(['__proto__', 'constructor'])('refuses a CSV import with a %s column, and imports nothing', async (name) => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('POST', '/v1/chat/contacts/import', {
      key,
      rawBody: `phoneNumber,name,${name}\n+14155550100,Ada,x\n`,
      headers: { 'content-type': 'text/csv' },
    });

    // Assess
    expectError(response, 400, 'VALIDATION_ERROR', 'body');
    expect(response.body.error.message).toContain(name);
    expect((await api.request('GET', '/v1/chat/contacts', { key })).body.pagination.total).toBe(0);
  });
});

describe('campaign and call session variables with an unstorable property name', () => {
  // The body is refused before the agent or number is looked up, so unknown ids suffice.
  it.each(unstorable)('answer 400 VALIDATION_ERROR naming the path for $name', async ({ json, path }) => {
    // Prepare
    const { key } = await api.newOrg();
    const campaign = `{"name":"Renewals","agentId":"${unknownId}","phoneNumberId":"${unknownId}","audience":{"tags":["vip"]},"schedule":{"startAt":"2026-12-01T09:00:00Z","windows":[{"days":["MON"],"start":"09:00","end":"17:00"}]},"sessionVariables":${json}}`;
    const call = `{"agent_id":"${unknownId}","to_phone_number":"+14155550100","session_variables":${json}}`;

    // Act
    const campaignResponse = await sendJson(key, 'POST', '/v1/chat/call-campaigns', campaign);
    const callResponse = await sendJson(key, 'POST', `/api/v1/phone-numbers/${unknownId}/calls/start`, call);

    // Assess
    expectError(campaignResponse, 400, 'VALIDATION_ERROR', `sessionVariables.${path}`);
    expectError(callResponse, 400, 'VALIDATION_ERROR', `session_variables.${path}`);
  });
});

/** Names that are properties of every object's prototype, yet ordinary names for a client. */
const prototypeNames = ['prototype', 'toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf', '__defineGetter__', '__lookupSetter__', 'propertyIsEnumerable'];

describe('free-form objects with names of prototype properties', () => {
  const hostile = Object.fromEntries(prototypeNames.map((name, index) => [name, { [name]: index, list: [{ [name]: name }] }]));

  it('keeps them in session metadata and variables, exactly as sent', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const created = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: await newAgent(key), metadata: hostile, sessionVariables: hostile } });

    // Assess
    expect(created.status, created.text).toBe(201);
    const read = await api.request('GET', `/api/v1/chat/sessions/${created.body.id}`, { key });
    expect(read.body.metadata).toEqual({ ...hostile, sessionVariables: hostile });
  });

  it('keeps them in a streamed message\'s metadata, exactly as sent', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: await newAgent(key) } });

    // Act
    const reply = await api.request('POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, { key, body: { content: 'Hello', metadata: hostile } });

    // Assess
    expect(reply.status, reply.text).toBe(200);
    expect(reply.text.trim().endsWith('data: [DONE]')).toBe(true);
    expect(reply.text).not.toContain('"error"');
    const messages = await api.request('GET', `/api/v1/chat/sessions/${session.body.id}/messages`, { key });
    expect(messages.body.data.find((message: { role: string }) => message.role === 'USER').metadata).toEqual(hostile);
  });
});

describe('arbitrary JSON with hostile property names', () => {
  const hostileName = fc.constantFrom('__proto__', 'constructor', ...prototypeNames);
  const name = fc.oneof(hostileName, fc.string({ maxLength: 6 }));
  const json = fc.letrec((tie) => ({
    value: fc.oneof({ depthSize: 'small' }, fc.constant(null), fc.boolean(), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.string({ maxLength: 8 }), tie('array'), tie('object')),
    array: fc.array(tie('value'), { maxLength: 3 }),
    object: fc.dictionary(name, tie('value'), { maxKeys: 4 }),
  }));
  /** Built as JSON text, so that `__proto__` is a property as in a client's body, not a prototype. */
  const toText = (value: unknown): string =>
    Array.isArray(value)
      ? `[${value.map(toText).join(',')}]`
      : value !== null && typeof value === 'object'
        ? `{${Object.entries(value).map(([key, child]) => `${JSON.stringify(key)}:${toText(child)}`).join(',')}}`
        : JSON.stringify(value);

  it('is stored and read back exactly, or refused with 400 naming a path under metadata; never a 500', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const agentId = await newAgent(key);

    // Act / Assess
    await fc.assert(
      fc.asyncProperty(fc.dictionary(name, json.value, { maxKeys: 4 }), async (metadata) => {
        const text = toText(metadata);
        const created = await sendJson(key, 'POST', '/v1/chat/chat/sessions', `{"agentId":"${agentId}","metadata":${text}}`);
        if (created.status === 400) {
          expect(created.body.error.code).toBe('VALIDATION_ERROR');
          expect(created.body.error.details[0].field).toMatch(/^metadata\./);
          return;
        }
        expect(created.status, created.text).toBe(201);
        const read = await api.request('GET', `/api/v1/chat/sessions/${created.body.id}`, { key });
        const { sessionVariables, ...stored } = read.body.metadata;
        expect(sessionVariables).toEqual({});
        expect(stored).toEqual(JSON.parse(text));
      }),
      { numRuns: 60 },
    );
  });
});
