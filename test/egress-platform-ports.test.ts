/**
 * Tools and webhooks never reach the platform's own services, even where loopback egress is opened as widely as it
 * can be: the probe's cross-tenant read of DynamoDB Local through an API_TOOL, repeated against every own port.
 */
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { expectError, startApi, type TestApi } from './support/api.ts';

let api: TestApi;

beforeAll(async () => {
  api = await startApi({ LOOPBACK_EGRESS_PORTS: '1-65535' }, { queues: true });
});
afterAll(() => api.close());

const ownServices = () => ({
  'DynamoDB Local': inject('dynamodbEndpoint'),
  'the SQS emulator': api.queues?.clientConfig.endpoint as string,
  'the API itself': api.baseUrl,
});

/** Org B's tool aimed at a platform endpoint, called by the built-in model; resolves with the tool's recorded result. */
async function callToolAt(key: string, endpoint: string, headers: Record<string, string>): Promise<{ status: string; result: string }> {
  const tool = await api.request('POST', '/v1/chat/tools', {
    key,
    body: {
      name: 'RAW_CALL',
      description: 'Sends the arguments as the body',
      type: 'API_TOOL',
      ajvPropertiesSchema: { type: 'object' },
      apiTool: { url: `${endpoint}/`, method: 'POST', headers },
    },
  });
  expect(tool.status, tool.text).toBe(201);
  const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'A', description: 'A', role: 'A', tools: [{ toolId: tool.body.id }] } });
  const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
  const sent = await api.request('POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, {
    key,
    body: { content: `Run RAW_CALL with {"TableName":"${inject('tableName')}","KeyConditionExpression":"pk = :pk"}`, stream: false },
  });
  expect(sent.status, sent.text).toBe(200);
  return sent.body.toolMessages[0].toolCall;
}

describe('an API_TOOL aimed at the platform', () => {
  it("cannot query DynamoDB Local for another organization's items, as the probe did", async () => {
    // Prepare: org A has data; org B aims a tool at the database with the DynamoDB wire protocol.
    const orgA = await api.newOrg();
    await api.request('POST', '/v2/chat/agents', { key: orgA.key, body: { fullName: 'Secret', description: 'A', role: 'A' } });
    const orgB = await api.newOrg();

    // Act
    const call = await callToolAt(orgB.key, inject('dynamodbEndpoint'), {
      'x-amz-target': 'DynamoDB_20120810.Query',
      'content-type': 'application/x-amz-json-1.0',
    });

    // Assess
    expect(call.status).toBe('ERROR');
    expect(call.result).toMatch(/not allowed/);
    expect(call.result).not.toMatch(/Items|Secret/);
  });

  it.each(['the SQS emulator', 'the API itself'] as const)('is refused at %s too', async (service) => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const call = await callToolAt(key, ownServices()[service], { 'content-type': 'application/json' });

    // Assess
    expect(call.status).toBe('ERROR');
    expect(call.result).toMatch(/not allowed/);
  });
});

describe('a webhook aimed at the platform', () => {
  it.each(['DynamoDB Local', 'the SQS emulator', 'the API itself'] as const)('is refused at registration for %s', async (service) => {
    // Prepare
    const { key } = await api.newOrg();
    const port = new URL(ownServices()[service]).port;

    // Act
    const byAddress = await api.request('POST', '/v1/chat/webhooks', { key, body: { url: `http://127.0.0.1:${port}/hooks`, events: ['session.created'] } });
    const byName = await api.request('POST', '/v1/chat/webhooks', { key, body: { url: `https://localhost:${port}/hooks`, events: ['session.created'] } });

    // Assess
    expectError(byAddress, 422, 'WEBHOOK_URL_NOT_ALLOWED', 'url');
    expectError(byName, 422, 'WEBHOOK_URL_NOT_ALLOWED', 'url');
  });
});
