import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { phoneNumberRoutes } from '../../functions/phone-numbers/routes.ts';
import { runtime } from '../../shared/runtime.ts';
import { keys } from '../../shared/platform/store/keys.ts';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { twilioAccount, uniqueNumber } from '../support/voice.ts';

let api: TestApi;

beforeAll(async () => {
  api = await startApi({}, { voice: true });
});
afterAll(async () => {
  await api.close();
});

const routes = phoneNumberRoutes.routes;

async function agent(key: string, body: object = { voiceEnabled: true, voicePipelineMode: 'pipeline' }) {
  const created = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Vox', description: 'Phone', role: 'Phone agent', ...body } });
  expect(created.status, created.text).toBe(201);
  return created.body.id as string;
}

async function importNumber(key: string, body: object = {}) {
  return api.request('POST', '/api/v1/phone-numbers', { key, body: { phone_number: uniqueNumber(), ...body } });
}

describe('phone numbers', () => {
  it('are imported, listed (oldest first, at most size), read, patched and deleted', async () => {
    const { key } = await api.newOrg(['voice:write']);
    const first = await importNumber(key, { label: 'Sales' });
    expect(first.status, first.text).toBe(201);
    expect(routes.importPhoneNumber.response.parse(first.body)).toEqual({ ...first.body });
    expect(first.body).toMatchObject({ provider: 'twilio', label: 'Sales' });
    const second = await importNumber(key);
    expect(second.body.label).toBeUndefined();

    const list = await api.request('GET', '/api/v1/phone-numbers', { key });
    expect(list.status).toBe(200);
    expect(routes.listPhoneNumbers.response.parse(list.body).items.map((item) => item.id)).toEqual([first.body.id, second.body.id]);
    const one = await api.request('GET', '/api/v1/phone-numbers?size=1', { key });
    expect(one.body.items.map((item: { id: string }) => item.id)).toEqual([first.body.id]);

    const patched = await api.request('PATCH', `/api/v1/phone-numbers/${first.body.id}`, { key, body: { label: null } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.label).toBeUndefined();
    expect((await api.request('GET', `/api/v1/phone-numbers/${first.body.id}`, { key })).body).toEqual(patched.body);

    expect((await api.request('DELETE', `/api/v1/phone-numbers/${first.body.id}`, { key })).status).toBe(204);
    expectError(await api.request('GET', `/api/v1/phone-numbers/${first.body.id}`, { key }), 404, 'NOT_FOUND');
    // Deleted, the number can be imported again.
    expect((await api.request('POST', '/api/v1/phone-numbers', { key, body: { phone_number: first.body.phone_number } })).status).toBe(201);
  });

  it('belong to one organization worldwide: a second organization cannot import the same number (409)', async () => {
    const a = await api.newOrg();
    const b = await api.newOrg();
    const number = uniqueNumber();
    expect((await api.request('POST', '/api/v1/phone-numbers', { key: a.key, body: { phone_number: number } })).status).toBe(201);
    expectError(await api.request('POST', '/api/v1/phone-numbers', { key: b.key, body: { phone_number: number } }), 409, 'PHONE_NUMBER_TAKEN');
    expectError(await api.request('POST', '/api/v1/phone-numbers', { key: a.key, body: { phone_number: number } }), 409, 'PHONE_NUMBER_TAKEN');
    expect((await api.request('GET', '/api/v1/phone-numbers', { key: b.key })).body.items).toEqual([]);
  });

  it("are another organization's 404 (get, patch, delete, start a call)", async () => {
    const a = await api.newOrg();
    const b = await api.newOrg();
    const { body } = await importNumber(a.key);
    const agentId = await agent(b.key);
    expectError(await api.request('GET', `/api/v1/phone-numbers/${body.id}`, { key: b.key }), 404, 'NOT_FOUND');
    expectError(await api.request('PATCH', `/api/v1/phone-numbers/${body.id}`, { key: b.key, body: { label: 'x' } }), 404, 'NOT_FOUND');
    expectError(await api.request('DELETE', `/api/v1/phone-numbers/${body.id}`, { key: b.key }), 404, 'NOT_FOUND');
    expectError(
      await api.request('POST', `/api/v1/phone-numbers/${body.id}/calls/start`, { key: b.key, body: { to_phone_number: '+15550101', agent_id: agentId } }),
      404,
      'NOT_FOUND',
    );
  });

  it('refuse what is not E.164 and unknown fields (400)', async () => {
    const { key } = await api.newOrg();
    for (const phone_number of ['5550100', '+0123456789', '+1 555 0100', '+1234567890123456', '']) {
      expectError(await api.request('POST', '/api/v1/phone-numbers', { key, body: { phone_number } }), 400, 'VALIDATION_ERROR', 'phone_number');
    }
    expectError(await importNumber(key, { provider: 'vonage' }), 400, 'VALIDATION_ERROR', 'provider');
    expectError(await importNumber(key, { agentId: crypto.randomUUID() }), 404, 'NOT_FOUND');
  });
});

describe('Twilio credentials', () => {
  it('keep the auth token write-only and sealed in the table', async () => {
    const { key, orgId } = await api.newOrg();
    expectError(await api.request('GET', '/v1/chat/telephony/twilio', { key }), 404, 'NOT_FOUND');
    const account = twilioAccount();
    const put = await api.request('PUT', '/v1/chat/telephony/twilio', { key, body: account });
    expect(put.status, put.text).toBe(200);
    expect(routes.putTwilioCredentials.response.parse(put.body)).toEqual(put.body);
    const read = await api.request('GET', '/v1/chat/telephony/twilio', { key });
    expect(read.body).toEqual({ provider: 'twilio', accountSid: account.accountSid, updatedAt: put.body.updatedAt });
    expect(read.text).not.toContain(account.authToken);
    const item = await runtime().documentClient.send(new GetCommand({ TableName: runtime().config.TABLE_NAME, Key: keys.telephonyCredentials(orgId) }));
    expect(JSON.stringify(item.Item)).not.toContain(account.authToken);
    expect(item.Item?.authToken).toMatch(/^sealed:v1:/);
    expectError(await api.request('PUT', '/v1/chat/telephony/twilio', { key, body: { ...account, authToken: 'short' } }), 400, 'VALIDATION_ERROR', 'authToken');
    expect((await api.request('DELETE', '/v1/chat/telephony/twilio', { key })).status).toBe(204);
    expectError(await api.request('GET', '/v1/chat/telephony/twilio', { key }), 404, 'NOT_FOUND');
  });
});

describe('starting a call', () => {
  async function ready(agentBody?: object) {
    const { key } = await api.newOrg();
    await api.request('PUT', '/v1/chat/telephony/twilio', { key, body: twilioAccount() });
    const agentId = await agent(key, agentBody);
    const number = await importNumber(key);
    return { key, agentId, phoneNumberId: number.body.id as string };
  }
  const start = (setup: { key: string; phoneNumberId: string; agentId: string }, body: object = {}) =>
    api.request('POST', `/api/v1/phone-numbers/${setup.phoneNumberId}/calls/start`, { key: setup.key, body: { to_phone_number: '+15550151', agent_id: setup.agentId, ...body } });

  it('refuses an agent that is not voice-enabled (422 AGENT_NOT_VOICE_ENABLED)', async () => {
    expectError(await start(await ready({})), 422, 'AGENT_NOT_VOICE_ENABLED');
  });

  it.each(['sts', 'hybrid'])('refuses voicePipelineMode %s: this deployment runs pipeline only (422)', async (mode) => {
    const response = await start(await ready({ voiceEnabled: true, voicePipelineMode: mode }));
    expectError(response, 422, 'VOICE_PIPELINE_MODE_UNSUPPORTED');
    expect(response.body.error.message).toContain('"pipeline" only');
  });

  it('refuses before the Twilio credentials are set (422 TELEPHONY_NOT_CONFIGURED)', async () => {
    const setup = await ready();
    await api.request('DELETE', '/v1/chat/telephony/twilio', { key: setup.key });
    expectError(await start(setup), 422, 'TELEPHONY_NOT_CONFIGURED');
  });

  it('validates the destination, ttl bounds and session variables (400)', async () => {
    const setup = await ready();
    expectError(await start(setup, { to_phone_number: '555-0100' }), 400, 'VALIDATION_ERROR', 'to_phone_number');
    expectError(await start(setup, { ttl: 9 }), 400, 'VALIDATION_ERROR', 'ttl');
    expectError(await start(setup, { ttl: 1801 }), 400, 'VALIDATION_ERROR', 'ttl');
    expectError(await start(setup, { ttl: 30.5 }), 400, 'VALIDATION_ERROR', 'ttl');
    expectError(await start(setup, { session_variables: [] }), 400, 'VALIDATION_ERROR', 'session_variables');
    expectError(await start(setup, { agent_id: 'nope' }), 400, 'VALIDATION_ERROR', 'agent_id');
  });

  it('needs voice:write, and answers the same session to a repeated Idempotency-Key', async () => {
    const setup = await ready();
    const { orgId } = await api.newOrg();
    const reader = { ...setup, key: await api.newKey(orgId, ['voice:read', 'agents:write']) };
    expectError(await start(reader), 403, 'FORBIDDEN');
    const first = await api.request('POST', `/api/v1/phone-numbers/${setup.phoneNumberId}/calls/start`, {
      key: setup.key,
      headers: { 'idempotency-key': 'call-1' },
      body: { to_phone_number: '+15550151', agent_id: setup.agentId, ttl: 10 },
    });
    const again = await api.request('POST', `/api/v1/phone-numbers/${setup.phoneNumberId}/calls/start`, {
      key: setup.key,
      headers: { 'idempotency-key': 'call-1' },
      body: { to_phone_number: '+15550151', agent_id: setup.agentId, ttl: 10 },
    });
    expect(first.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const sessions = await api.request('GET', '/v1/chat/chat/sessions?platform=PHONE', { key: setup.key });
    expect(sessions.body.data.map((session: { id: string }) => session.id)).toEqual([first.body.sessionId]);
  });
});
