/**
 * Tools and webhooks never reach the platform's own services, even where loopback egress is opened as widely as it
 * can be: the probe's cross-tenant read of DynamoDB Local through an API_TOOL, repeated against every own port, is
 * refused when the tool is created (the guard refuses it again at call time: test/platform/egress-guard.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { expectError, startApi, type TestApi } from '../support/api.ts';

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

describe('an API_TOOL aimed at the platform', () => {
  it.each(['DynamoDB Local', 'the SQS emulator', 'the API itself'] as const)('is refused at creation for %s (the probe read DynamoDB Local through one)', async (service) => {
    // Prepare: the tool the probe used for its cross-tenant read, with the DynamoDB wire protocol.
    const { key } = await api.newOrg();
    const body = {
      name: 'RAW_CALL',
      description: 'Sends the arguments as the body',
      type: 'API_TOOL',
      ajvPropertiesSchema: { type: 'object' },
      apiTool: { url: `${ownServices()[service]}/`, method: 'POST', headers: { 'x-amz-target': 'DynamoDB_20120810.Query', 'content-type': 'application/x-amz-json-1.0' } },
    };
    const port = new URL(ownServices()[service]).port;

    // Act
    const byAddress = await api.request('POST', '/v1/chat/tools', { key, body });
    const byName = await api.request('POST', '/v1/chat/tools', { key, body: { ...body, apiTool: { ...body.apiTool, url: `http://{{host}}:${port}/` } } });

    // Assess
    expectError(byAddress, 400, 'TOOL_URL_NOT_ALLOWED', 'apiTool.url');
    expectError(byName, 400, 'TOOL_URL_NOT_ALLOWED', 'apiTool.url');
    expect(byAddress.body.error.details[0].message).toBe("must not point at a port of the platform's own services");
    expect((await api.request('GET', '/v1/chat/tools', { key })).body.data).toEqual([]);
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
