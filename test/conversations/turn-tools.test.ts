import { createServer, type IncomingMessage, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { closeServer, listenOnLoopback } from '../support/loopback-server.ts';
import { replyDeltas } from '../support/sse.ts';

interface Received {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A customer's tool API on loopback: records each request and answers by path. */
let toolServer: Server;
let toolBase: string;
const received: Received[] = [];
let api: TestApi;

beforeAll(async () => {
  toolServer = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      received.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, body });
      if (request.url?.startsWith('/slow')) {
        setTimeout(() => response.end('{"late":true}'), 20_000).unref();
        return;
      }
      if (request.url?.startsWith('/image')) {
        response.setHeader('content-type', 'image/png');
        response.end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0xff, 0x00, 0xfe]));
        return;
      }
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ temperature: 21, unit: 'C' }));
    });
  });
  toolBase = `http://127.0.0.1:${await listenOnLoopback(toolServer)}`;
  api = await startApi({ TOOL_TIMEOUT_MS: '500' });
});
afterAll(async () => {
  await api.close();
  await closeServer(toolServer);
});

async function agentWithTool(key: string, tool: Record<string, unknown>) {
  const created = await api.request('POST', '/v1/chat/tools', { key, body: tool });
  expect(created.status).toBe(201);
  const agent = await api.request('POST', '/v2/chat/agents', {
    key,
    body: { fullName: 'Weather', description: 'Weather', role: 'You report weather.', tools: [{ toolId: created.body.id }] },
  });
  expect(agent.status).toBe(201);
  const session = await api.request('POST', '/v1/chat/chat/sessions', {
    key,
    body: { agentId: agent.body.id, sessionVariables: { tenant: 'acme corp', token: 'secret-1' } },
  });
  return { toolId: created.body.id as string, sessionId: session.body.id as string };
}

const weatherSchema = { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } }, required: ['city'] };

describe('a turn with an API_TOOL call', () => {
  it('calls the tool with placeholders, headers, JSON body and Idempotency-Key, and answers with its result', async () => {
    const { key } = await api.newOrg();
    const { sessionId } = await agentWithTool(key, {
      name: 'GET_WEATHER',
      description: 'Current weather for a city',
      type: 'API_TOOL',
      ajvPropertiesSchema: weatherSchema,
      preExecutionMessage: 'Checking the weather… ',
      apiTool: {
        url: `${toolBase}/weather/{{city}}?tenant={{tenant}}`,
        method: 'POST',
        headers: { authorization: 'Bearer {{token}}', 'x-city': '{{city}}' },
      },
    });
    const before = received.length;
    const response = await api.request('POST', `/v1/chat/chat/sessions/${sessionId}/messages`, {
      key,
      body: { content: 'Use GET_WEATHER with {"city": "São Paulo", "days": 2}' },
    });
    expect(response.status).toBe(200);
    const call = received[before] as Received;
    expect(received.length).toBe(before + 1);
    expect(call.method).toBe('POST');
    expect(call.url).toBe('/weather/S%C3%A3o%20Paulo?tenant=acme%20corp');
    expect(call.headers.authorization).toBe('Bearer secret-1');
    expect(JSON.parse(call.body)).toEqual({ city: 'São Paulo', days: 2 });
    expect(call.headers['content-type']).toMatch(/application\/json/);

    const text = replyDeltas(response.text).map((delta) => delta.delta).join('');
    expect(text).toMatch(/^Checking the weather…\n\nThe GET_WEATHER tool returned/);
    expect(text).toContain('{"temperature":21,"unit":"C"}');

    const history = (await api.request('GET', `/api/v1/chat/sessions/${sessionId}/messages`, { key })).body.data;
    expect(history.map((message: { role: string }) => message.role)).toEqual(['USER', 'TOOL', 'ASSISTANT']);
    const tool = history[1].toolCall;
    expect(tool).toMatchObject({ name: 'GET_WEATHER', arguments: { city: 'São Paulo', days: 2 }, status: 'SUCCESS', result: '{"temperature":21,"unit":"C"}' });
    expect(call.headers['idempotency-key']).toBe(tool.id);
    expect(history[2].content).toBe(text);
    expect(history[2].metadata.timings.tools).toEqual([{ name: 'GET_WEATHER', durationMs: tool.durationMs }]);
  });

  it('is called by the built-in model when the user asks in plain words, with the city read from the message', async () => {
    const { key } = await api.newOrg();
    const { sessionId } = await agentWithTool(key, {
      name: 'GET_WEATHER',
      description: 'Current weather for a city',
      type: 'API_TOOL',
      ajvPropertiesSchema: weatherSchema,
      apiTool: { url: `${toolBase}/weather/{{city}}`, method: 'GET' },
    });
    const before = received.length;
    const response = await api.request('POST', `/v1/chat/chat/sessions/${sessionId}/messages`, { key, body: { content: 'What is the weather in Paris?', stream: false } });
    expect(response.status, response.text).toBe(200);
    expect(received.slice(before).map((call) => call.url)).toEqual(['/weather/Paris']);
    expect(response.body.toolMessages.map((message: { toolCall: unknown }) => message.toolCall)).toEqual([
      expect.objectContaining({ name: 'GET_WEATHER', arguments: { city: 'Paris' }, status: 'SUCCESS' }),
    ]);
    expect(response.body.assistantMessage.content).toBe('The GET_WEATHER tool returned: {"temperature":21,"unit":"C"}');
  });

  it('sends the arguments to the model as an error, without calling the tool, when they break the schema', async () => {
    const { key } = await api.newOrg();
    const { sessionId } = await agentWithTool(key, {
      name: 'GET_WEATHER',
      description: 'Weather',
      type: 'API_TOOL',
      ajvPropertiesSchema: weatherSchema,
      apiTool: { url: `${toolBase}/weather`, method: 'GET' },
    });
    const before = received.length;
    const response = await api.request('POST', `/v1/chat/chat/sessions/${sessionId}/messages`, {
      key,
      body: { content: 'GET_WEATHER {"days": "many"}', stream: false },
    });
    expect(response.status).toBe(200);
    expect(received.length).toBe(before);
    expect(response.body.toolMessages[0].toolCall).toMatchObject({ status: 'ERROR' });
    expect(response.body.toolMessages[0].toolCall.result).toMatch(/Invalid arguments/);
  });

  it('reports a tool that times out as an error result and still answers', async () => {
    const { key } = await api.newOrg();
    const { sessionId } = await agentWithTool(key, {
      name: 'SLOW',
      description: 'Slow',
      type: 'API_TOOL',
      apiTool: { url: `${toolBase}/slow`, method: 'GET' },
    });
    const started = Date.now();
    const response = await api.request('POST', `/v1/chat/chat/sessions/${sessionId}/messages`, { key, body: { content: 'SLOW {}', stream: false } });
    expect(response.status).toBe(200);
    // The tool answers after 20 s: a reply long before that did not wait for it.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(response.body.toolMessages[0].toolCall.status).toBe('ERROR');
    expect(response.body.assistantMessage.metadata.status).toBe('COMPLETED');
  });

  it('handles a binary tool response without failing the turn', async () => {
    const { key } = await api.newOrg();
    const { sessionId } = await agentWithTool(key, {
      name: 'PICTURE',
      description: 'Picture',
      type: 'API_TOOL',
      apiTool: { url: `${toolBase}/image`, method: 'GET' },
    });
    const response = await api.request('POST', `/v1/chat/chat/sessions/${sessionId}/messages`, { key, body: { content: 'PICTURE {}', stream: false } });
    expect(response.status).toBe(200);
    expect(response.body.toolMessages[0].toolCall).toMatchObject({ status: 'SUCCESS' });
    expect(response.body.toolMessages[0].toolCall.result).toMatch(/binary/i);
  });

  it('uses the tool as it is at the start of each turn', async () => {
    const { key } = await api.newOrg();
    const { toolId, sessionId } = await agentWithTool(key, {
      name: 'GET_WEATHER',
      description: 'Weather',
      type: 'API_TOOL',
      apiTool: { url: `${toolBase}/v1/weather`, method: 'GET' },
    });
    const send = () => api.request('POST', `/v1/chat/chat/sessions/${sessionId}/messages`, { key, body: { content: 'GET_WEATHER {}', stream: false } });
    const before = received.length;
    await send();
    expect(received[before]?.url).toBe('/v1/weather');
    const patched = await api.request('PATCH', `/v1/chat/tools/${toolId}`, { key, body: { apiTool: { url: `${toolBase}/v2/weather`, method: 'GET' } } });
    expect(patched.status).toBe(200);
    await send();
    expect(received.at(-1)?.url).toBe('/v2/weather');
  });
});

describe('egress safety', () => {
  it('blocks a call whose host placeholder fills in to a metadata address, before any connection', async () => {
    // A literal internal address is refused when the tool is created (test/agents/tools.test.ts); a placeholder only when called.
    const { key } = await api.newOrg();
    const { sessionId } = await agentWithTool(key, {
      name: 'METADATA',
      description: 'Instance metadata',
      type: 'API_TOOL',
      ajvPropertiesSchema: { type: 'object', properties: { host: { type: 'string' } } },
      apiTool: { url: 'http://{{host}}/latest/meta-data/', method: 'GET' },
    });
    const response = await api.request('POST', `/v1/chat/chat/sessions/${sessionId}/messages`, { key, body: { content: 'METADATA {"host":"169.254.169.254"}', stream: false } });
    expect(response.status).toBe(200);
    expect(response.body.toolMessages[0].toolCall.status).toBe('ERROR');
    expect(response.body.toolMessages[0].toolCall.result).toMatch(/not allowed/i);
  });
});

describe('the built-in end_conversation tool', () => {
  it('cannot be shadowed by a customer tool of that name', async () => {
    const { key } = await api.newOrg();
    for (const name of ['end_conversation', 'END_CONVERSATION']) {
      const response = await api.request('POST', '/v1/chat/tools', { key, body: { name, description: 'x', type: 'FUNCTION_TOOL' } });
      expect(response.status).toBe(400);
      expect(response.body.error.details).toContainEqual({ field: 'name', message: 'is reserved for a built-in tool' });
    }
  });
});
