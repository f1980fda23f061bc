import { createServer, type IncomingMessage, type Server } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { closeServer, listenOnLoopback } from '../support/loopback-server.ts';

interface Call {
  headers: IncomingMessage['headers'];
  body: string;
}

/** A customer's function endpoint: records calls and answers each tool by name. */
let functionServer: Server;
let functionUrl: string;
const calls: Call[] = [];
let api: TestApi;

beforeAll(async () => {
  functionServer = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      calls.push({ headers: request.headers, body });
      const { name } = JSON.parse(body) as { name: string };
      response.setHeader('content-type', 'application/json');
      if (name === 'FAILING') {
        response.statusCode = 503;
        response.end('{"error":"down"}');
      } else if (name === 'PLAIN') {
        response.setHeader('content-type', 'text/plain');
        response.end('just text');
      } else response.end(JSON.stringify({ result: { status: 'shipped' } }));
    });
  });
  functionUrl = `http://127.0.0.1:${await listenOnLoopback(functionServer)}/functions`;
  api = await startApi();
});
afterAll(async () => {
  await api.close();
  await closeServer(functionServer);
});

async function sessionWith(key: string, tool: Record<string, unknown>) {
  const created = await api.request('POST', '/v1/chat/tools', { key, body: tool });
  expect(created.status).toBe(201);
  const agent = await api.request('POST', '/v2/chat/agents', {
    key,
    body: { fullName: 'Orders', description: 'Orders', role: 'You track orders.', tools: [{ toolId: created.body.id }] },
  });
  const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id, sessionVariables: { customer: 'c-7' } } });
  return { tool: created.body, agentId: agent.body.id as string, sessionId: session.body.id as string };
}

const ask = (key: string, sessionId: string, content: string) =>
  api.request('POST', `/v1/chat/chat/sessions/${sessionId}/messages`, { key, body: { content, stream: false } });

describe('FUNCTION_TOOL', () => {
  it('shows its signing secret once, and calls its endpoint with a signed tool.call', async () => {
    const { key } = await api.newOrg();
    const { tool, agentId, sessionId } = await sessionWith(key, {
      name: 'LOOKUP_ORDER',
      description: 'Finds an order',
      type: 'FUNCTION_TOOL',
      ajvPropertiesSchema: { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'] },
      functionTool: { url: functionUrl },
    });
    const secret = tool.functionTool.signingSecret as string;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    const read = await api.request('GET', `/v1/chat/tools/${tool.id}`, { key });
    expect(read.body.functionTool).toEqual({ url: functionUrl });
    expect(read.text).not.toContain(secret.slice(6));

    const before = calls.length;
    const reply = await ask(key, sessionId, 'LOOKUP_ORDER {"id": 42}');
    expect(reply.status).toBe(200);
    const call = calls[before] as Call;
    const verified = new Webhook(secret).verify(call.body, call.headers as Record<string, string>);
    const toolCall = reply.body.toolMessages[0].toolCall;
    expect(verified).toEqual({
      type: 'tool.call',
      toolCallId: toolCall.id,
      name: 'LOOKUP_ORDER',
      arguments: { id: 42 },
      session: { id: sessionId, agentId, sessionVariables: { customer: 'c-7' } },
    });
    expect(call.headers['webhook-id']).toBe(toolCall.id);
    expect(call.headers['idempotency-key']).toBe(toolCall.id);
    expect(toolCall).toMatchObject({ status: 'SUCCESS', result: '{"status":"shipped"}' });
    expect(reply.body.assistantMessage.content).toContain('{"status":"shipped"}');
  });

  it('takes a non-JSON answer as the result, and reports a failing endpoint to the model', async () => {
    const { key } = await api.newOrg();
    const plain = await sessionWith(key, { name: 'PLAIN', description: 'x', type: 'FUNCTION_TOOL', functionTool: { url: functionUrl } });
    expect((await ask(key, plain.sessionId, 'PLAIN {}')).body.toolMessages[0].toolCall).toMatchObject({ status: 'SUCCESS', result: 'just text' });
    const failing = await sessionWith(key, { name: 'FAILING', description: 'x', type: 'FUNCTION_TOOL', functionTool: { url: functionUrl } });
    const failed = (await ask(key, failing.sessionId, 'FAILING {}')).body.toolMessages[0].toolCall;
    expect(failed.status).toBe('ERROR');
    expect(failed.result).toMatch(/^HTTP 503/);
  });

  it('without an endpoint, tells the model it cannot run, and calls nothing', async () => {
    const { key } = await api.newOrg();
    const { sessionId } = await sessionWith(key, { name: 'NOWHERE', description: 'x', type: 'FUNCTION_TOOL' });
    const before = calls.length;
    const toolCall = (await ask(key, sessionId, 'NOWHERE {}')).body.toolMessages[0].toolCall;
    expect(toolCall.status).toBe('ERROR');
    expect(toolCall.result).toMatch(/no endpoint/);
    expect(calls.length).toBe(before);
  });

  it('gets a secret with its first endpoint by PATCH, and keeps it when the endpoint changes', async () => {
    const { key } = await api.newOrg();
    const { tool, sessionId } = await sessionWith(key, { name: 'LATER', description: 'x', type: 'FUNCTION_TOOL' });
    const first = await api.request('PATCH', `/v1/chat/tools/${tool.id}`, { key, body: { functionTool: { url: functionUrl } } });
    expect(first.status).toBe(200);
    const secret = first.body.functionTool.signingSecret as string;
    expect(secret).toMatch(/^whsec_/);
    const moved = await api.request('PATCH', `/v1/chat/tools/${tool.id}`, { key, body: { functionTool: { url: `${functionUrl}/v2`, timeoutMs: 2000 } } });
    expect(moved.body.functionTool).toEqual({ url: `${functionUrl}/v2`, timeoutMs: 2000 });
    const before = calls.length;
    await ask(key, sessionId, 'LATER {}');
    const call = calls[before] as Call;
    expect(() => new Webhook(secret).verify(call.body, call.headers as Record<string, string>)).not.toThrow();
  });

  it('rejects functionTool on an API_TOOL and a non-http URL', async () => {
    const { key } = await api.newOrg();
    const onApiTool = await api.request('POST', '/v1/chat/tools', {
      key,
      body: { name: 'X', description: 'x', type: 'API_TOOL', apiTool: { url: functionUrl, method: 'GET' }, functionTool: { url: functionUrl } },
    });
    expect(onApiTool.status).toBe(400);
    expect(onApiTool.body.error.details).toContainEqual({ field: 'functionTool', message: 'is only for FUNCTION_TOOL' });
    const ftp = await api.request('POST', '/v1/chat/tools', { key, body: { name: 'Y', description: 'y', type: 'FUNCTION_TOOL', functionTool: { url: 'ftp://x/y' } } });
    expect(ftp.status).toBe(400);
  });
});
