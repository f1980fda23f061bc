import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { phoneNumberRoutes } from '../../functions/phone-numbers/routes.ts';
import { runtime } from '../../shared/runtime.ts';
import { TelephonyUnavailableError } from '../../shared/platform/errors.ts';
import { voiceRuntime } from '../../shared/voice/voice-runtime.ts';
import { keys } from '../../shared/platform/store/keys.ts';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { numberAtTwilio, twilioAccount, uniqueNumber } from '../support/voice.ts';

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

/** An organization with Twilio credentials (the account of the simulator its numbers are in), and a key holding `scopes` (all by default). */
async function twilioOrg(scopes?: Parameters<TestApi['newKey']>[1]) {
  const org = await api.newOrg();
  const account = twilioAccount();
  expect((await api.request('PUT', '/v1/chat/telephony/twilio', { key: org.key, body: account })).status).toBe(200);
  return { ...org, key: scopes ? await api.newKey(org.orgId, scopes) : org.key, account };
}

/** Imports a number of the organization's Twilio account. */
async function importNumber(org: { key: string; account: ReturnType<typeof twilioAccount> }, body: object = {}) {
  return api.request('POST', '/api/v1/phone-numbers', { key: org.key, body: { phone_number: numberAtTwilio(api, org.account), ...body } });
}

describe('phone numbers', () => {
  it('are imported, listed (oldest first, at most size), read, patched and deleted', async () => {
    const org = await twilioOrg(['voice:write']);
    const { key } = org;
    const first = await importNumber(org, { label: 'Sales' });
    expect(first.status, first.text).toBe(201);
    expect(routes.importPhoneNumber.response.parse(first.body)).toEqual({ ...first.body });
    expect(first.body).toMatchObject({ provider: 'twilio', label: 'Sales', record_inbound_calls: false });
    const second = await importNumber(org);
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
    const a = await twilioOrg();
    const b = await api.newOrg();
    const number = numberAtTwilio(api, a.account);
    expect((await api.request('POST', '/api/v1/phone-numbers', { key: a.key, body: { phone_number: number } })).status).toBe(201);
    expectError(await api.request('POST', '/api/v1/phone-numbers', { key: b.key, body: { phone_number: number } }), 409, 'PHONE_NUMBER_TAKEN');
    expectError(await api.request('POST', '/api/v1/phone-numbers', { key: a.key, body: { phone_number: number } }), 409, 'PHONE_NUMBER_TAKEN');
    expect((await api.request('GET', '/api/v1/phone-numbers', { key: b.key })).body.items).toEqual([]);
  });

  it("are another organization's 404 (get, patch, delete, start a call)", async () => {
    const a = await twilioOrg();
    const b = await api.newOrg();
    const { body } = await importNumber(a);
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
    const org = await twilioOrg();
    for (const phone_number of ['5550100', '+0123456789', '+1 555 0100', '+1234567890123456', '']) {
      expectError(await api.request('POST', '/api/v1/phone-numbers', { key: org.key, body: { phone_number } }), 400, 'VALIDATION_ERROR', 'phone_number');
    }
    expectError(await importNumber(org, { provider: 'vonage' }), 400, 'VALIDATION_ERROR', 'provider');
    expectError(await importNumber(org, { record_inbound_calls: 'yes' }), 400, 'VALIDATION_ERROR', 'record_inbound_calls');
    expectError(await importNumber(org, { agentId: crypto.randomUUID() }), 404, 'NOT_FOUND');
  });
});

describe('numbers at Twilio', () => {
  const simulator = () => api.voice!.simulator;
  const routedHere = () => ({ voiceUrl: `${api.baseUrl}/twilio/voice`, voiceMethod: 'POST', statusCallback: `${api.baseUrl}/twilio/voice/status`, statusCallbackMethod: 'POST' });
  const search = (key: string, query: string) => api.request('GET', `/api/v1/phone-numbers/available${query}`, { key });
  const buy = (key: string, body: object, headers: Record<string, string> = {}) => api.request('POST', '/api/v1/phone-numbers/buy', { key, body, headers });

  it("are searched with Twilio's filters: local by area code and letters, in a region, toll-free, near a number", async () => {
    // Prepare
    const { key } = await twilioOrg(['voice:read', 'voice:write']);

    // Act
    const byAreaCode = await search(key, '?area_code=415&contains=STORM&size=3');
    const inRegion = await search(key, '?region=il');
    const tollFree = await search(key, '?type=toll_free&area_code=888&size=2');
    const canadian = await search(key, '?country=ca&locality=Toronto&size=2');
    const near = await search(key, '?near_number=%2B12125550100&distance=10&size=2');
    const soldOut = await search(key, '?area_code=533');

    // Assess
    expect(byAreaCode.status, byAreaCode.text).toBe(200);
    expect(phoneNumberRoutes.routes.searchAvailablePhoneNumbers.response.parse(byAreaCode.body)).toEqual(byAreaCode.body);
    expect(byAreaCode.body.items).toHaveLength(3);
    for (const number of byAreaCode.body.items) {
      expect(number).toMatchObject({ iso_country: 'US', locality: 'San Francisco', region: 'CA', address_requirements: 'none', capabilities: { voice: true, sms: true, mms: true } });
      expect(number.phone_number).toMatch(/^\+1415\d{2}78676$/);
      expect(number.friendly_name).toBe(`(415) ${number.phone_number.slice(5, 8)}-${number.phone_number.slice(8)}`);
    }
    expect(inRegion.body.items.length).toBeGreaterThan(0);
    expect(inRegion.body.items.every((number: { region: string }) => number.region === 'IL')).toBe(true);
    expect(tollFree.body.items.map((number: { phone_number: string }) => number.phone_number.slice(0, 5))).toEqual(['+1888', '+1888']);
    expect(canadian.body.items.every((number: { iso_country: string; locality: string }) => number.iso_country === 'CA' && number.locality === 'Toronto')).toBe(true);
    expect(near.body.items.every((number: { phone_number: string }) => number.phone_number.startsWith('+1212'))).toBe(true);
    expect(soldOut.body).toEqual({ items: [] });
  });

  it('refuse a misspelt or invalid filter (400), a list Twilio does not have (422), and an organization without Twilio (422)', async () => {
    const { key } = await twilioOrg(['voice:read']);
    const { key: withoutTwilio } = await api.newOrg(['voice:read']);

    expectError(await search(key, '?areaCode=415'), 400, 'VALIDATION_ERROR', 'areaCode');
    expectError(await search(key, '?area_code=41'), 400, 'VALIDATION_ERROR', 'area_code');
    expectError(await search(key, '?contains=4'), 400, 'VALIDATION_ERROR', 'contains');
    expectError(await search(key, '?type=premium'), 400, 'VALIDATION_ERROR', 'type');
    expectError(await search(key, '?distance=10'), 400, 'VALIDATION_ERROR', 'distance');
    const mobile = await search(key, '?type=mobile');
    expectError(mobile, 422, 'TELEPHONY_REQUEST_REJECTED');
    expect(mobile.body.error.message).toBe('Twilio offers no mobile numbers in US.');
    expectError(await search(key, '?country=FR'), 422, 'TELEPHONY_REQUEST_REJECTED');
    expectError(await search(withoutTwilio, ''), 422, 'TELEPHONY_NOT_CONFIGURED');
  });

  it("are bought from a search into the organization's Twilio account, routed here at once, with their settings", async () => {
    // Prepare
    const org = await twilioOrg();
    const agentId = await agent(org.key);
    const [offered] = (await search(org.key, '?area_code=312&size=1')).body.items;

    // Act
    const bought = await buy(org.key, { phone_number: offered.phone_number, label: 'Chicago', agentId, record_inbound_calls: true });
    const byAreaCode = await buy(org.key, { area_code: '206' });

    // Assess
    expect(bought.status, bought.text).toBe(201);
    expect(phoneNumberRoutes.routes.buyPhoneNumber.response.parse(bought.body)).toEqual(bought.body);
    expect(bought.body).toMatchObject({ phone_number: offered.phone_number, provider: 'twilio', label: 'Chicago', agentId, record_inbound_calls: true });
    expect(simulator().incomingNumber(offered.phone_number)).toMatchObject({ accountSid: org.account.accountSid, ...routedHere() });
    expect(byAreaCode.status, byAreaCode.text).toBe(201);
    expect(byAreaCode.body.phone_number).toMatch(/^\+1206\d{7}$/);
    expect(simulator().incomingNumber(byAreaCode.body.phone_number)).toMatchObject({ accountSid: org.account.accountSid, ...routedHere() });
    const listed = await api.request('GET', '/api/v1/phone-numbers', { key: org.key });
    expect(listed.body.items.map((number: { id: string }) => number.id)).toEqual([bought.body.id, byAreaCode.body.id]);
  });

  it('are bought once per Idempotency-Key', async () => {
    const org = await twilioOrg();
    const first = await buy(org.key, { area_code: '512' }, { 'idempotency-key': 'buy-1' });
    const again = await buy(org.key, { area_code: '512' }, { 'idempotency-key': 'buy-1' });
    expect(first.status, first.text).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect((await api.request('GET', '/api/v1/phone-numbers', { key: org.key })).body.items).toHaveLength(1);
  });

  it("answer 409 PHONE_NUMBER_UNAVAILABLE with Twilio's reason when the number is no longer for sale or the area code has none", async () => {
    // Prepare: a number a search offered is bought meanwhile by another Twilio customer, in Twilio's console.
    const org = await twilioOrg();
    const [offered] = (await search(org.key, '?area_code=808&size=1')).body.items;
    simulator().addIncomingNumber({ ...twilioAccount(), phoneNumber: offered.phone_number });

    // Act
    const taken = await buy(org.key, { phone_number: offered.phone_number });
    const neverOffered = await buy(org.key, { phone_number: '+18085550123' });
    const soldOut = await buy(org.key, { area_code: '533' });

    // Assess
    expectError(taken, 409, 'PHONE_NUMBER_UNAVAILABLE');
    expect(taken.body.error.message).toContain('PhoneNumber is not available (Twilio error 21422)');
    expectError(neverOffered, 409, 'PHONE_NUMBER_UNAVAILABLE');
    expectError(soldOut, 409, 'PHONE_NUMBER_UNAVAILABLE');
    expect(soldOut.body.error.message).toContain('No phone numbers found in area code (Twilio error 21452)');
    expect((await api.request('GET', '/api/v1/phone-numbers', { key: org.key })).body.items).toEqual([]);
  });

  it('are refused to buy when another organization has the number (409, nothing bought), or when the body names none or both (400)', async () => {
    const a = await twilioOrg();
    const b = await twilioOrg();
    const bought = await buy(a.key, { area_code: '415' });
    expectError(await buy(b.key, { phone_number: bought.body.phone_number }), 409, 'PHONE_NUMBER_TAKEN');
    expect(simulator().incomingNumber(bought.body.phone_number)?.accountSid).toBe(a.account.accountSid);
    expectError(await buy(b.key, {}), 400, 'VALIDATION_ERROR', 'phone_number');
    expectError(await buy(b.key, { phone_number: '+14155550123', area_code: '415' }), 400, 'VALIDATION_ERROR', 'phone_number');
    expectError(await buy(b.key, { area_code: '123' }), 400, 'VALIDATION_ERROR', 'area_code');
    const { key: withoutTwilio } = await api.newOrg();
    expectError(await buy(withoutTwilio, { area_code: '415' }), 422, 'TELEPHONY_NOT_CONFIGURED');
  });

  it("are routed here at Twilio when imported, an application that would answer instead removed; a number not in the account is 422", async () => {
    // Prepare: a number of the account answered by a TwiML application (Twilio then ignores its voice URL).
    const org = await twilioOrg();
    const phoneNumber = uniqueNumber();
    simulator().addIncomingNumber({ ...org.account, phoneNumber, voiceApplicationSid: `AP${'1'.repeat(32)}` });
    const elsewhere = numberAtTwilio(api, twilioAccount());

    // Act
    const imported = await api.request('POST', '/api/v1/phone-numbers', { key: org.key, body: { phone_number: phoneNumber } });
    const notOurs = await api.request('POST', '/api/v1/phone-numbers', { key: org.key, body: { phone_number: elsewhere } });
    const { key: withoutTwilio } = await api.newOrg();
    const unconfigured = await api.request('POST', '/api/v1/phone-numbers', { key: withoutTwilio, body: { phone_number: uniqueNumber() } });

    // Assess
    expect(imported.status, imported.text).toBe(201);
    expect(simulator().incomingNumber(phoneNumber)).toMatchObject({ ...routedHere(), voiceApplicationSid: '' });
    expectError(notOurs, 422, 'PHONE_NUMBER_NOT_IN_ACCOUNT');
    expect(simulator().incomingNumber(elsewhere)?.voiceUrl).toBe('https://demo.twilio.com/welcome/voice/');
    expectError(unconfigured, 422, 'TELEPHONY_NOT_CONFIGURED');
  });

  it('stay at Twilio when deleted, and are given back to Twilio with release=true (only the owner can)', async () => {
    // Prepare
    const org = await twilioOrg();
    const other = await twilioOrg();
    const kept = await importNumber(org);
    const released = await buy(org.key, { area_code: '415' });
    const alreadyGone = await importNumber(org);
    await api.request('DELETE', `/api/v1/phone-numbers/${alreadyGone.body.id}?release=true`, { key: org.key });

    // Act
    const invalid = await api.request('DELETE', `/api/v1/phone-numbers/${released.body.id}?release=yes`, { key: org.key });
    const byAnother = await api.request('DELETE', `/api/v1/phone-numbers/${released.body.id}?release=true`, { key: other.key });
    const deleted = await api.request('DELETE', `/api/v1/phone-numbers/${kept.body.id}`, { key: org.key });
    const release = await api.request('DELETE', `/api/v1/phone-numbers/${released.body.id}?release=true`, { key: org.key });

    // Assess
    expectError(invalid, 400, 'VALIDATION_ERROR', 'release');
    expectError(byAnother, 404, 'NOT_FOUND');
    expect(deleted.status).toBe(204);
    expect(simulator().incomingNumber(kept.body.phone_number)?.accountSid).toBe(org.account.accountSid);
    expect(release.status, release.text).toBe(204);
    expect(simulator().incomingNumber(released.body.phone_number)).toBeUndefined();
    expect(simulator().incomingNumber(alreadyGone.body.phone_number)).toBeUndefined();
    expect((await api.request('GET', '/api/v1/phone-numbers', { key: org.key })).body.items).toEqual([]);
  });

  it('leave nothing half done: a routing Twilio refuses undoes the import, a purchase that cannot be recorded is released', async () => {
    // Prepare: Twilio fails the routing once; then the table fails to record a number once.
    const org = await twilioOrg();
    const phoneNumber = numberAtTwilio(api, org.account);
    const { telephony, voice } = voiceRuntime();
    const routeNumber = telephony.routeNumber;
    const createPhoneNumber = voice.createPhoneNumber;

    // Act
    telephony.routeNumber = async () => {
      throw new TelephonyUnavailableError('Twilio answered 503: Service Unavailable; retry.');
    };
    const refused = await api.request('POST', '/api/v1/phone-numbers', { key: org.key, body: { phone_number: phoneNumber } }).finally(() => {
      telephony.routeNumber = routeNumber;
    });
    const retried = await api.request('POST', '/api/v1/phone-numbers', { key: org.key, body: { phone_number: phoneNumber } });
    let bought: string | undefined;
    voice.createPhoneNumber = async (number) => {
      bought = number.phone_number;
      throw new Error('the table is unavailable');
    };
    const unrecorded = await buy(org.key, { area_code: '312' }).finally(() => {
      voice.createPhoneNumber = createPhoneNumber;
    });

    // Assess
    expectError(refused, 502, 'TELEPHONY_UNAVAILABLE');
    expect(retried.status, retried.text).toBe(201);
    expect(unrecorded.status).toBe(500);
    expect(bought).toMatch(/^\+1312\d{7}$/);
    expect(simulator().incomingNumber(bought as string)).toBeUndefined();
    expect((await api.request('GET', '/api/v1/phone-numbers', { key: org.key })).body.items.map((number: { phone_number: string }) => number.phone_number)).toEqual([phoneNumber]);
  });

  it('record inbound calls when asked, changed by PATCH', async () => {
    const org = await twilioOrg();
    const number = await importNumber(org, { record_inbound_calls: true });
    expect(number.body.record_inbound_calls).toBe(true);
    const patched = await api.request('PATCH', `/api/v1/phone-numbers/${number.body.id}`, { key: org.key, body: { record_inbound_calls: false } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.record_inbound_calls).toBe(false);
    expectError(await api.request('PATCH', `/api/v1/phone-numbers/${number.body.id}`, { key: org.key, body: { record_inbound_calls: null } }), 400, 'VALIDATION_ERROR', 'record_inbound_calls');
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
    const org = await twilioOrg();
    const agentId = await agent(org.key, agentBody);
    const number = await importNumber(org);
    return { key: org.key, agentId, phoneNumberId: number.body.id as string };
  }
  const start = (setup: { key: string; phoneNumberId: string; agentId: string }, body: object = {}) =>
    api.request('POST', `/api/v1/phone-numbers/${setup.phoneNumberId}/calls/start`, { key: setup.key, body: { to_phone_number: '+15550151', agent_id: setup.agentId, ...body } });

  it('refuses an agent that is not voice-enabled (422 AGENT_NOT_VOICE_ENABLED)', async () => {
    expectError(await start(await ready({})), 422, 'AGENT_NOT_VOICE_ENABLED');
  });

  it.each(['sts', 'hybrid'])('refuses voicePipelineMode %s on a deployment without a speech-to-speech model (422)', async (mode) => {
    const response = await start(await ready({ voiceEnabled: true, voicePipelineMode: mode }));
    expectError(response, 422, 'VOICE_PIPELINE_MODE_UNSUPPORTED');
    expect(response.body.error.message).toContain('has no speech-to-speech model');
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
