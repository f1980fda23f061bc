import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTool as createToolOf } from '../../shared/agents/tools.ts';
import { createToolBody } from '../../shared/agents/tool-schemas.ts';
import type { Resolver } from '../../shared/platform/net/egress-guard.ts';
import { runtime } from '../../shared/runtime.ts';
import { expectError, startApi, type TestApi } from '../support/api.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const unknownId = '00000000-0000-4000-8000-000000000000';

const weatherSchema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };

let toolCount = 0;
/** A valid API_TOOL body with a name unique within this run. */
function validTool(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  toolCount += 1;
  return {
    name: `GET_WEATHER_${toolCount}`,
    description: 'Gets the weather for a city',
    type: 'API_TOOL',
    ajvPropertiesSchema: weatherSchema,
    apiTool: { url: 'https://api.example.com/weather?city={{city}}', method: 'GET', headers: { 'x-api-key': '{{secret}}' } },
    ...overrides,
  };
}

/** An object schema `levels` deep, itself included: its `x` keyword holds arrays nested `levels - 1` deep. */
function schemaNested(levels: number): Record<string, unknown> {
  let value: unknown = 1;
  for (let level = 1; level < levels; level += 1) value = [value];
  return { type: 'object', x: value };
}

async function createTool(key: string, overrides: Record<string, unknown> = {}): Promise<any> {
  const response = await api.request('POST', '/v1/chat/tools', { key, body: validTool(overrides) });
  expect(response.status).toBe(201);
  return response.body;
}

async function toolTotal(key: string): Promise<number> {
  const response = await api.request('GET', '/v1/chat/tools', { key });
  expect(response.status).toBe(200);
  return response.body.pagination.total;
}

describe('createTool', () => {
  it('creates an API_TOOL and stores it', async () => {
    // Prepare
    const { orgId, key } = await api.newOrg();
    const body = validTool({ preExecutionMessage: 'Checking the sky…' });

    // Act
    const response = await api.request('POST', '/v1/chat/tools', { key, body });

    // Assess
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({ ...body, orgId });
    expect(response.body.id).toMatch(uuid);
    expect(response.body.createdAt).toMatch(rfc3339);
    expect(response.body.updatedAt).toBe(response.body.createdAt);
    const stored = await api.request('GET', `/v1/chat/tools/${response.body.id}`, { key });
    expect(stored.status).toBe(200);
    expect(stored.body).toEqual(response.body);
  });

  it('creates a FUNCTION_TOOL with an empty object schema by default', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('POST', '/v1/chat/tools', {
      key,
      body: { name: 'CANCEL_ORDER', description: 'Cancels an order', type: 'FUNCTION_TOOL' },
    });

    // Assess
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({ name: 'CANCEL_ORDER', type: 'FUNCTION_TOOL', ajvPropertiesSchema: { type: 'object', properties: {} } });
    expect(response.body).not.toHaveProperty('apiTool');
    expect((await api.request('GET', `/v1/chat/tools/${response.body.id}`, { key })).body).toEqual(response.body);
  });

  it.each(['GET_WEATHER', 'getWeather2', 'a_b'])('accepts the name %s', async (name) => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('POST', '/v1/chat/tools', { key, body: validTool({ name }) });

    // Assess
    expect(response.status).toBe(201);
    expect(response.body.name).toBe(name);
  });

  it.each(['_a', 'a_', 'a__b', 'a-b', ''])('rejects the name %j', async (name) => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('POST', '/v1/chat/tools', { key, body: validTool({ name }) });

    // Assess
    expectError(response, 400, 'VALIDATION_ERROR', 'name');
    expect(await toolTotal(key)).toBe(0);
  });

  it.each([
    ['the same name', 'LOOKUP_ORDER'],
    ['a name differing only by case', 'lookup_order'],
  ])('rejects %s within one organization with TOOL_NAME_TAKEN', async (_case, secondName) => {
    // Prepare
    const { key } = await api.newOrg();
    await createTool(key, { name: 'LOOKUP_ORDER' });

    // Act
    const response = await api.request('POST', '/v1/chat/tools', { key, body: validTool({ name: secondName }) });

    // Assess
    expectError(response, 409, 'TOOL_NAME_TAKEN', 'name');
    expect(await toolTotal(key)).toBe(1);
  });

  it('accepts a name that another organization already uses', async () => {
    // Prepare
    const other = await api.newOrg();
    await createTool(other.key, { name: 'LOOKUP_ORDER' });
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('POST', '/v1/chat/tools', { key, body: validTool({ name: 'LOOKUP_ORDER' }) });

    // Assess
    expect(response.status).toBe(201);
  });

  it.each([
    ['that ajv cannot compile', { type: 'object', properties: { a: { type: 'nonsense' } } }],
    ['that does not describe an object', { type: 'string' }],
  ])('rejects an ajvPropertiesSchema %s with INVALID_TOOL_SCHEMA', async (_case, ajvPropertiesSchema) => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('POST', '/v1/chat/tools', { key, body: validTool({ ajvPropertiesSchema }) });

    // Assess
    expectError(response, 422, 'INVALID_TOOL_SCHEMA');
    expect(response.body.error.details[0].field).toMatch(/^ajvPropertiesSchema/);
    expect(await toolTotal(key)).toBe(0);
  });

  it.each([
    ['a number beyond Number.MAX_SAFE_INTEGER', { type: 'object', properties: { n: { type: 'integer', maximum: 2 ** 53 } } }],
    ['a number too close to zero', { type: 'object', properties: { n: { type: 'number', multipleOf: 1e-200 } } }],
    ['an empty property name', { type: 'object', '': 'x' }],
    ['21 levels of nesting', schemaNested(21)],
  ])('rejects an ajvPropertiesSchema holding %s, which the store cannot hold', async (_case, ajvPropertiesSchema) => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('POST', '/v1/chat/tools', { key, body: validTool({ ajvPropertiesSchema }) });

    // Assess
    expectError(response, 400, 'VALIDATION_ERROR');
    expect(response.body.error.details[0].field).toMatch(/^ajvPropertiesSchema\./);
    expect(await toolTotal(key)).toBe(0);
  });

  it('stores an ajvPropertiesSchema at the limits of what the store holds', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const ajvPropertiesSchema = { ...schemaNested(20), maximum: Number.MAX_SAFE_INTEGER, minimum: -1e-130 };

    // Act
    const response = await api.request('POST', '/v1/chat/tools', { key, body: validTool({ ajvPropertiesSchema }) });

    // Assess
    expect(response.status).toBe(201);
    expect((await api.request('GET', `/v1/chat/tools/${response.body.id}`, { key })).body.ajvPropertiesSchema).toEqual(ajvPropertiesSchema);
  });

  it('lets every organization use the same schema $id', async () => {
    // Prepare
    const [a, b] = [await api.newOrg(), await api.newOrg()];
    const ajvPropertiesSchema = { $id: 'https://schemas.example.com/order', type: 'object', properties: { id: { type: 'string' } } };

    // Act
    const responses = [
      await api.request('POST', '/v1/chat/tools', { key: a.key, body: validTool({ ajvPropertiesSchema }) }),
      await api.request('POST', '/v1/chat/tools', { key: a.key, body: validTool({ ajvPropertiesSchema }) }),
      await api.request('POST', '/v1/chat/tools', { key: b.key, body: validTool({ ajvPropertiesSchema }) }),
    ];

    // Assess
    expect(responses.map((response) => response.status)).toEqual([201, 201, 201]);
  });

  it('rejects an API_TOOL without apiTool', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('POST', '/v1/chat/tools', { key, body: validTool({ apiTool: undefined }) });

    // Assess
    expectError(response, 400, 'VALIDATION_ERROR', 'apiTool');
  });

  it.each(['ftp://x', 'not a url'])('rejects the apiTool url %j', async (url) => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('POST', '/v1/chat/tools', { key, body: validTool({ apiTool: { url, method: 'GET' } }) });

    // Assess
    expectError(response, 400, 'VALIDATION_ERROR', 'apiTool.url');
  });

  it('accepts {{placeholders}} in the host, path and query of the url', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const url = 'https://{{tenant}}.example.com/orders/{{orderId}}?expand={{fields}}';

    // Act
    const response = await api.request('POST', '/v1/chat/tools', { key, body: validTool({ apiTool: { url, method: 'GET' } }) });

    // Assess
    expect(response.status).toBe(201);
    expect(response.body.apiTool.url).toBe(url);
  });

  it('stores a lowercase method in uppercase', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('POST', '/v1/chat/tools', {
      key,
      body: validTool({ apiTool: { url: 'https://api.example.com/orders', method: 'post' } }),
    });

    // Assess
    expect(response.status).toBe(201);
    expect((await api.request('GET', `/v1/chat/tools/${response.body.id}`, { key })).body.apiTool.method).toBe('POST');
  });

  it('rejects a header whose value is not a string', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const apiTool = { url: 'https://api.example.com/orders', method: 'GET', headers: { 'x-retries': 3 } };

    // Act
    const response = await api.request('POST', '/v1/chat/tools', { key, body: validTool({ apiTool }) });

    // Assess
    expectError(response, 400, 'VALIDATION_ERROR', 'apiTool.headers.x-retries');
  });
});

describe('tool URLs the egress guard refuses from the URL alone', () => {
  // startApi opens loopback egress on ports 1024-65535 only; the API's own port is a platform port.
  const internal = () => [
    ['the cloud metadata address', 'http://169.254.169.254/latest/meta-data/'],
    ['the metadata address IPv4-mapped', 'http://[::ffff:169.254.169.254]/'],
    ["GCP's metadata host name", 'http://metadata.google.internal/computeMetadata/v1/'],
    ['a private address', 'https://10.0.0.5/hook'],
    ['a link-local address', 'https://169.254.10.10/hook'],
    ['localhost on a port not opened to loopback', 'http://localhost/hook'],
    ['a *.localhost name', 'http://tenant.localhost/hook'],
    ['loopback on a port not opened to it', 'http://127.0.0.1:80/'],
    ['the unspecified address', 'http://0.0.0.0:8080/'],
    ['the API itself', `${api.baseUrl}/v1/chat/agents`],
  ];

  it('are refused at creation with 400 TOOL_URL_NOT_ALLOWED naming the field, for FUNCTION_TOOLs and API_TOOLs', async () => {
    // Prepare
    const { key } = await api.newOrg();

    for (const [target, url] of internal()) {
      // Act
      const functionTool = await api.request('POST', '/v1/chat/tools', { key, body: validTool({ type: 'FUNCTION_TOOL', apiTool: undefined, functionTool: { url } }) });
      const apiTool = await api.request('POST', '/v1/chat/tools', { key, body: validTool({ apiTool: { url: `${url}?q={{city}}`, method: 'GET' } }) });

      // Assess
      expectError(functionTool, 400, 'TOOL_URL_NOT_ALLOWED', 'functionTool.url');
      expectError(apiTool, 400, 'TOOL_URL_NOT_ALLOWED', 'apiTool.url');
      expect(functionTool.body.error.details[0].message, target).toMatch(/^must not point at /);
    }
    expect(await toolTotal(key)).toBe(0);
  });

  it('are refused when a PATCH sets them, leaving the tool as it was', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const apiTool = await createTool(key);
    const functionTool = await createTool(key, { type: 'FUNCTION_TOOL', apiTool: undefined, functionTool: { url: 'https://hooks.example.com/tool' } });

    // Act
    const apiChange = await api.request('PATCH', `/v1/chat/tools/${apiTool.id}`, { key, body: { apiTool: { url: 'http://192.168.1.1/{{city}}', method: 'GET' } } });
    const functionChange = await api.request('PATCH', `/v1/chat/tools/${functionTool.id}`, { key, body: { functionTool: { url: 'http://169.254.169.254/' } } });

    // Assess
    expectError(apiChange, 400, 'TOOL_URL_NOT_ALLOWED', 'apiTool.url');
    expectError(functionChange, 400, 'TOOL_URL_NOT_ALLOWED', 'functionTool.url');
    expect((await api.request('GET', `/v1/chat/tools/${apiTool.id}`, { key })).body).toEqual(apiTool);
    const { signingSecret: _shownOnce, ...storedFunction } = functionTool.functionTool;
    expect((await api.request('GET', `/v1/chat/tools/${functionTool.id}`, { key })).body.functionTool).toEqual(storedFunction);
  });

  it('name LOOPBACK_EGRESS_PORTS and what it opens when they point at loopback on a port it does not open', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('POST', '/v1/chat/tools', { key, body: validTool({ type: 'FUNCTION_TOOL', apiTool: undefined, functionTool: { url: 'http://127.0.0.1:80/tool' } }) });

    // Assess
    expectError(response, 400, 'TOOL_URL_NOT_ALLOWED', 'functionTool.url');
    expect(response.body.error.message).toBe(
      'functionTool.url must not point at a loopback host on port 80, which tools reach only where the deployment opens it to loopback egress (LOOPBACK_EGRESS_PORTS opens 1024-65535).',
    );
  });

  it('leave host names to the call: one that may resolve anywhere, and a host placeholder, are accepted; loopback on an opened port too', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const byName = await api.request('POST', '/v1/chat/tools', { key, body: validTool({ type: 'FUNCTION_TOOL', apiTool: undefined, functionTool: { url: 'https://internal.example.com/tool' } }) });
    const byPlaceholder = await api.request('POST', '/v1/chat/tools', { key, body: validTool({ apiTool: { url: 'https://{{host}}/weather', method: 'GET' } }) });
    const openedLoopback = await api.request('POST', '/v1/chat/tools', { key, body: validTool({ type: 'FUNCTION_TOOL', apiTool: undefined, functionTool: { url: 'http://127.0.0.1:8080/tool' } }) });

    // Assess
    for (const response of [byName, byPlaceholder, openedLoopback]) expect(response.status, response.text).toBe(201);
  });
});

describe('tool URLs whose host name resolves to an address every call would refuse', () => {
  const resolverFor =
    (...addresses: string[]): Resolver =>
    (_hostname, _options, callback) =>
      callback(null, addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));
  const notFound: Resolver = (hostname, _options, callback) => callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
  const body = (url: string) => createToolBody.parse(validTool({ type: 'FUNCTION_TOOL', apiTool: undefined, functionTool: { url } }));
  /** The deployment of `npm start` without LOOPBACK_EGRESS_PORTS, or with it opening 8080. */
  const deployment = (opened: [number, number][], resolveHost: Resolver) => {
    const deps = runtime();
    return { ...deps, config: { ...deps.config, LOOPBACK_EGRESS_PORTS: opened }, resolveHost };
  };

  it('refuses a name that resolves to loopback on a port not opened to it (as webhooks do), naming LOOPBACK_EGRESS_PORTS, and stores nothing', async () => {
    // Prepare: the machine's own host name, as /etc/hosts maps it (`127.0.1.1 laptop`).
    const { orgId, key } = await api.newOrg();

    // Act
    const closed = createToolOf(deployment([], resolverFor('127.0.1.1')), orgId, body('http://laptop:8080/tool'));
    const otherPort = createToolOf(deployment([[8080, 8080]], resolverFor('127.0.1.1')), orgId, body('http://laptop:9090/tool'));

    // Assess
    await expect(closed).rejects.toMatchObject({
      code: 'TOOL_URL_NOT_ALLOWED',
      message: 'functionTool.url must not point at laptop: it resolves to a loopback host on port 8080, which tools reach only where the deployment opens it to loopback egress (LOOPBACK_EGRESS_PORTS opens none).',
      details: [{ field: 'functionTool.url' }],
    });
    await expect(otherPort).rejects.toMatchObject({ code: 'TOOL_URL_NOT_ALLOWED', message: expect.stringContaining('(LOOPBACK_EGRESS_PORTS opens 8080)') });
    expect(await toolTotal(key)).toBe(0);
  });

  it('refuses a name that resolves to a private address among public ones', async () => {
    // Prepare
    const { orgId } = await api.newOrg();

    // Act
    const created = createToolOf(deployment([], resolverFor('93.184.215.14', '10.1.2.3')), orgId, body('https://tools.example.com/hook'));

    // Assess
    await expect(created).rejects.toMatchObject({ code: 'TOOL_URL_NOT_ALLOWED', message: 'functionTool.url must not point at tools.example.com: it resolves to a private address.' });
  });

  it('accepts a name on an opened loopback port, one that resolves to public addresses, one that does not resolve now, and a host placeholder (never looked up)', async () => {
    // Prepare
    const { orgId, key } = await api.newOrg();
    const lookedUp: string[] = [];
    const recording: Resolver = (hostname, options, callback) => {
      lookedUp.push(hostname);
      resolverFor('93.184.215.14')(hostname, options, callback);
    };

    // Act
    await createToolOf(deployment([[8080, 8080]], resolverFor('127.0.1.1')), orgId, body('http://laptop:8080/tool'));
    await createToolOf(deployment([], resolverFor('93.184.215.14')), orgId, body('https://tools.example.com/hook'));
    await createToolOf(deployment([], notFound), orgId, body('https://not-yet.example.com/hook'));
    await createToolOf(deployment([], recording), orgId, createToolBody.parse(validTool({ apiTool: { url: 'https://{{host}}/weather', method: 'GET' } })));

    // Assess
    expect(await toolTotal(key)).toBe(4);
    expect(lookedUp).toEqual([]);
  });
});

describe('getTool', () => {
  it('answers 404 NOT_FOUND for an unknown id', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('GET', `/v1/chat/tools/${unknownId}`, { key });

    // Assess
    expectError(response, 404, 'NOT_FOUND');
  });

  it('answers 404 NOT_FOUND for a malformed id', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('GET', '/v1/chat/tools/not-a-uuid', { key });

    // Assess
    expectError(response, 404, 'NOT_FOUND');
  });
});

describe('listTools', () => {
  it("lists the organization's tools of both types in the pagination envelope", async () => {
    // Prepare
    const { key } = await api.newOrg();
    const apiTool = await createTool(key);
    const functionTool = await createTool(key, { type: 'FUNCTION_TOOL', apiTool: undefined });

    // Act
    const response = await api.request('GET', '/v1/chat/tools', { key });

    // Assess
    expect(response.status).toBe(200);
    expect(response.body.pagination).toEqual({ page: 1, limit: 10, total: 2, totalPages: 1 });
    expect(response.body.data).toEqual(expect.arrayContaining([apiTool, functionTool]));
  });
});

describe('updateTool', () => {
  it.each([
    ['description', 'Gets tomorrow’s weather'],
    ['ajvPropertiesSchema', { type: 'object', properties: { zip: { type: 'string' } } }],
    ['preExecutionMessage', 'One moment…'],
    ['apiTool', { url: 'https://weather.example.com/v2/{{zip}}', method: 'POST', headers: {} }],
  ])('changes %s and advances updatedAt', async (field, value) => {
    // Prepare
    const { key } = await api.newOrg();
    const tool = await createTool(key);

    // Act
    const response = await api.request('PATCH', `/v1/chat/tools/${tool.id}`, { key, body: { [field]: value } });

    // Assess
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ ...tool, [field]: value, updatedAt: expect.any(String) });
    expect(Date.parse(response.body.updatedAt)).toBeGreaterThan(Date.parse(tool.updatedAt));
    expect((await api.request('GET', `/v1/chat/tools/${tool.id}`, { key })).body).toEqual(response.body);
  });

  it.each([
    ['name', 'RENAMED'],
    ['type', 'FUNCTION_TOOL'],
  ])('rejects a change of %s and leaves the tool as it was', async (field, value) => {
    // Prepare
    const { key } = await api.newOrg();
    const tool = await createTool(key);

    // Act
    const response = await api.request('PATCH', `/v1/chat/tools/${tool.id}`, { key, body: { [field]: value, description: 'Changed' } });

    // Assess
    expectError(response, 400, 'VALIDATION_ERROR', field);
    expect((await api.request('GET', `/v1/chat/tools/${tool.id}`, { key })).body).toEqual(tool);
  });

  it('answers 404 NOT_FOUND for an unknown id', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('PATCH', `/v1/chat/tools/${unknownId}`, { key, body: { description: 'Changed' } });

    // Assess
    expectError(response, 404, 'NOT_FOUND');
  });
});

describe('deleteTool', () => {
  async function agentUsing(key: string, toolIds: string[]): Promise<any> {
    const tools = toolIds.map((toolId) => ({ toolId }));
    const response = await api.request('POST', '/v2/chat/agents', {
      key,
      body: { fullName: 'Weather bot', description: 'Talks weather', role: 'You report the weather.', tools },
    });
    expect(response.status).toBe(201);
    return response.body;
  }

  it('answers 204, after which the tool is gone', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const tool = await createTool(key);

    // Act
    const response = await api.request('DELETE', `/v1/chat/tools/${tool.id}`, { key });

    // Assess
    expect(response.status).toBe(204);
    expectError(await api.request('GET', `/v1/chat/tools/${tool.id}`, { key }), 404, 'NOT_FOUND');
    expect(await toolTotal(key)).toBe(0);
  });

  it('refuses with TOOL_IN_USE while an agent uses the tool', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const tool = await createTool(key);
    await agentUsing(key, [tool.id]);

    // Act
    const response = await api.request('DELETE', `/v1/chat/tools/${tool.id}`, { key });

    // Assess
    expectError(response, 409, 'TOOL_IN_USE');
    expect((await api.request('GET', `/v1/chat/tools/${tool.id}`, { key })).status).toBe(200);
  });

  it('with force=true detaches the tool from its agents and deletes it', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const [doomed, kept] = [await createTool(key), await createTool(key, { type: 'FUNCTION_TOOL', apiTool: undefined })];
    const agent = await agentUsing(key, [doomed.id, kept.id]);

    // Act
    const response = await api.request('DELETE', `/v1/chat/tools/${doomed.id}?force=true`, { key });

    // Assess
    expect(response.status).toBe(204);
    expectError(await api.request('GET', `/v1/chat/tools/${doomed.id}`, { key }), 404, 'NOT_FOUND');
    expect((await api.request('GET', `/v1/chat/agents/${agent.id}`, { key })).body.tools).toEqual([{ toolId: kept.id }]);
  });

  it('answers 404 NOT_FOUND for an unknown id', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const response = await api.request('DELETE', `/v1/chat/tools/${unknownId}`, { key });

    // Assess
    expectError(response, 404, 'NOT_FOUND');
  });
});

describe('organization isolation', () => {
  it.each(['GET', 'PATCH', 'DELETE'])("answers 404 NOT_FOUND to %s on another organization's tool and leaves it alone", async (method) => {
    // Prepare
    const owner = await api.newOrg();
    const stranger = await api.newOrg();
    const tool = await createTool(owner.key);

    // Act
    const response = await api.request(method, `/v1/chat/tools/${tool.id}`, {
      key: stranger.key,
      ...(method === 'PATCH' ? { body: { description: 'Mine now' } } : {}),
    });

    // Assess
    expectError(response, 404, 'NOT_FOUND');
    expect((await api.request('GET', `/v1/chat/tools/${tool.id}`, { key: owner.key })).body).toEqual(tool);
  });

  it("lists only the caller's own tools", async () => {
    // Prepare
    const [a, b] = [await api.newOrg(), await api.newOrg()];
    const toolsOfA = [await createTool(a.key), await createTool(a.key)];
    const toolOfB = await createTool(b.key);

    // Act
    const listOfA = await api.request('GET', '/v1/chat/tools', { key: a.key });
    const listOfB = await api.request('GET', '/v1/chat/tools', { key: b.key });

    // Assess
    expect(listOfA.body.data.map((tool: any) => tool.id).sort()).toEqual(toolsOfA.map((tool) => tool.id).sort());
    expect(listOfB.body.data.map((tool: any) => tool.id)).toEqual([toolOfB.id]);
  });
});
