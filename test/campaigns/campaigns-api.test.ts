/** The campaign resource over HTTP: validation, the state machine's 409s, tenant isolation, lists and the calls view. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { Receiver } from '../support/webhook-receiver.ts';
import { voiceOrg } from '../support/voice.ts';
import { addContacts, allCalls, callee, campaignBody, unlimitedPlans } from '../support/campaigns.ts';

let api: TestApi;
const receiver = new Receiver();
let receiverUrl: string;

beforeAll(async () => {
  receiverUrl = await receiver.start();
  // The Twilio simulator holds the numbers the organizations import.
  api = await startApi({ PLANS: unlimitedPlans }, { voice: true });
});
afterAll(async () => {
  await api.close();
  await receiver.close();
});

describe('creating a campaign', () => {
  it('answers a DRAFT with zeroed progress and the defaults filled in', async () => {
    const org = await voiceOrg(api, receiver, receiverUrl);
    const created = await api.request('POST', '/v1/chat/call-campaigns', {
      key: org.key,
      body: { name: 'Renewals', agentId: org.agentId, phoneNumberId: org.phoneNumberId, audience: { tags: ['vip'] }, schedule: { startAt: '2026-12-01T09:00:00Z', windows: [{ days: ['MON'], start: '09:00', end: '17:00' }] } },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({
      status: 'DRAFT',
      maxConcurrentCalls: 1,
      retry: { maxAttempts: 1, delaySeconds: 3600, on: [] },
      ttl: 100,
      schedule: { timezoneMode: 'callee' },
      progress: { total: 0, pending: 0, inProgress: 0, completed: 0, failed: 0, skippedDnc: 0, exhausted: 0 },
    });
    const read = await api.request('GET', `/v1/chat/call-campaigns/${created.body.id}`, { key: org.key });
    expect(read.body).toEqual(created.body);
  });

  it.each([
    ['a window ending before it starts', { schedule: { startAt: '2026-12-01T09:00:00Z', windows: [{ days: ['MON'], start: '17:00', end: '09:00' }] } }, 'schedule.windows.0.end'],
    ['an unknown time zone', { schedule: { startAt: '2026-12-01T09:00:00Z', windows: [{ days: ['MON'], start: '09:00', end: '17:00' }], timezone: 'Mars/Olympus' } }, 'schedule.timezone'],
    ['fixed mode without a zone', { schedule: { startAt: '2026-12-01T09:00:00Z', windows: [{ days: ['MON'], start: '09:00', end: '17:00' }], timezoneMode: 'fixed' } }, 'schedule.timezone'],
    ['endAt before startAt', { schedule: { startAt: '2026-12-01T09:00:00Z', endAt: '2026-11-01T09:00:00Z', windows: [{ days: ['MON'], start: '09:00', end: '17:00' }] } }, 'schedule.endAt'],
    ['an empty audience', { audience: {} }, 'audience'],
    ['a cap of 0', { maxConcurrentCalls: 0 }, 'maxConcurrentCalls'],
    ['retrying an outcome that is not retryable', { retry: { maxAttempts: 2, delaySeconds: 60, on: ['ANSWERED'] } }, 'retry.on.0'],
  ])('refuses %s with 400 naming the field', async (_case, override, field) => {
    const org = await voiceOrg(api, receiver, receiverUrl);
    expectError(await api.request('POST', '/v1/chat/call-campaigns', { key: org.key, body: campaignBody(org, override) }), 400, 'VALIDATION_ERROR', field);
  });

  it('answers 404 for an agent or number of another organization', async () => {
    const org = await voiceOrg(api, receiver, receiverUrl);
    const other = await voiceOrg(api, receiver, receiverUrl);
    expectError(await api.request('POST', '/v1/chat/call-campaigns', { key: org.key, body: campaignBody({ agentId: other.agentId, phoneNumberId: org.phoneNumberId }) }), 404, 'NOT_FOUND');
    expectError(await api.request('POST', '/v1/chat/call-campaigns', { key: org.key, body: campaignBody({ agentId: org.agentId, phoneNumberId: other.phoneNumberId }) }), 404, 'NOT_FOUND');
  });

  it('with an Idempotency-Key, creates one campaign however often it is sent', async () => {
    const org = await voiceOrg(api, receiver, receiverUrl);
    const headers = { 'idempotency-key': crypto.randomUUID() };
    const body = campaignBody(org);
    const first = await api.request('POST', '/v1/chat/call-campaigns', { key: org.key, body, headers });
    const again = await api.request('POST', '/v1/chat/call-campaigns', { key: org.key, body, headers });
    expect(again.status, again.text).toBe(201);
    expect(again.body.id).toBe(first.body.id);
    const listed = await api.request('GET', '/v1/chat/call-campaigns', { key: org.key });
    expect(listed.body.data.map((campaign: { id: string }) => campaign.id)).toEqual([first.body.id]);
  });
});

describe('the state machine', () => {
  it('answers 409 with the current status for every transition it does not allow', async () => {
    const org = await voiceOrg(api, receiver, receiverUrl);
    const { body: campaign } = await api.request('POST', '/v1/chat/call-campaigns', { key: org.key, body: campaignBody(org) });
    const post = (action: string) => api.request('POST', `/v1/chat/call-campaigns/${campaign.id}/${action}`, { key: org.key });
    for (const action of ['pause', 'resume']) {
      const refused = await post(action);
      expectError(refused, 409, 'INVALID_CAMPAIGN_TRANSITION', 'status');
      expect(refused.body.error.details).toEqual([{ field: 'status', message: 'DRAFT' }]);
    }
    expect((await post('start')).body.status).toBe('SCHEDULED');
    expect((await post('start')).body.error.details).toEqual([{ field: 'status', message: 'SCHEDULED' }]);
    expect((await post('cancel')).body.status).toBe('CANCELED');
    for (const action of ['start', 'pause', 'resume', 'cancel']) expect((await post(action)).body.error.details).toEqual([{ field: 'status', message: 'CANCELED' }]);
  });

  it('refuses to start without carrier credentials (422), leaving the campaign a DRAFT', async () => {
    const org = await voiceOrg(api, receiver, receiverUrl);
    await api.request('DELETE', '/v1/chat/telephony/twilio', { key: org.key });
    const { body: campaign } = await api.request('POST', '/v1/chat/call-campaigns', { key: org.key, body: campaignBody(org) });
    expectError(await api.request('POST', `/v1/chat/call-campaigns/${campaign.id}/start`, { key: org.key }), 422, 'TELEPHONY_NOT_CONFIGURED');
    expect((await api.request('GET', `/v1/chat/call-campaigns/${campaign.id}`, { key: org.key })).body.status).toBe('DRAFT');
  });
});

describe('start', () => {
  it('resolves the audience (ids and tags, each contact once) into one row per contact, do-not-call ones skipped', async () => {
    const org = await voiceOrg(api, receiver, receiverUrl);
    const contacts = await addContacts(org.orgId, [
      { phoneNumber: callee(212, 1), tags: ['vip'] },
      { phoneNumber: callee(212, 2), tags: ['vip', 'late'] },
      { phoneNumber: callee(212, 3), tags: ['late'], doNotCall: true },
      { phoneNumber: callee(212, 4), tags: ['other'] },
      { phoneNumber: '+442079460958', tags: ['other'] },
    ]);
    const body = campaignBody(org, { audience: { contactIds: [contacts[0]!.id, contacts[4]!.id], tags: ['late'] }, schedule: { startAt: '2030-01-01T00:00:00Z', windows: [{ days: ['MON'], start: '09:00', end: '17:00' }] } });
    const { body: campaign } = await api.request('POST', '/v1/chat/call-campaigns', { key: org.key, body });
    const started = await api.request('POST', `/v1/chat/call-campaigns/${campaign.id}/start`, { key: org.key });
    expect(started.body).toMatchObject({ status: 'SCHEDULED', progress: { total: 4, pending: 3, skippedDnc: 1, inProgress: 0 } });
    const rows = await allCalls(api, org.key, campaign.id);
    expect(rows.map((row) => row.phoneNumber).sort()).toEqual([callee(212, 1), callee(212, 2), callee(212, 3), '+442079460958'].sort());
    // The contact's own zone from its number; 2030-01-07 is the first Monday after startAt, 09:00 local.
    const london = rows.find((row) => row.phoneNumber === '+442079460958');
    expect(london).toMatchObject({ timezone: 'Europe/London', state: 'PENDING', attempts: 0, nextAttemptAt: '2030-01-07T09:00:00.000Z', sessions: [] });
    expect(rows.find((row) => row.phoneNumber === callee(212, 1))).toMatchObject({ timezone: 'America/New_York', nextAttemptAt: '2030-01-07T14:00:00.000Z' });
    expect(rows.find((row) => row.phoneNumber === callee(212, 3))).toMatchObject({ state: 'SKIPPED_DNC' });

    const page = await api.request('GET', `/v1/chat/call-campaigns/${campaign.id}/calls?limit=3`, { key: org.key });
    expect(page.body.data).toHaveLength(3);
    const rest = await api.request('GET', `/v1/chat/call-campaigns/${campaign.id}/calls?limit=3&cursor=${page.body.nextCursor}`, { key: org.key });
    expect(rest.body.data).toHaveLength(1);
    expect(rest.body.nextCursor).toBeUndefined();
    const skipped = await api.request('GET', `/v1/chat/call-campaigns/${campaign.id}/calls?state=SKIPPED_DNC`, { key: org.key });
    expect(skipped.body.data.map((row: { phoneNumber: string }) => row.phoneNumber)).toEqual([callee(212, 3)]);
    expectError(await api.request('GET', `/v1/chat/call-campaigns/${campaign.id}/calls?state=PENDING&cursor=${page.body.nextCursor}`, { key: org.key }), 400, 'VALIDATION_ERROR', 'cursor');
  });
});

describe('tenant isolation', () => {
  it("answers 404 for another organization's campaign, on every route", async () => {
    const org = await voiceOrg(api, receiver, receiverUrl);
    const other = await voiceOrg(api, receiver, receiverUrl);
    const { body: campaign } = await api.request('POST', '/v1/chat/call-campaigns', { key: org.key, body: campaignBody(org) });
    for (const [method, path] of [
      ['GET', ''],
      ['GET', '/calls'],
      ['POST', '/start'],
      ['POST', '/pause'],
      ['POST', '/resume'],
      ['POST', '/cancel'],
    ] as const) {
      expectError(await api.request(method, `/v1/chat/call-campaigns/${campaign.id}${path}`, { key: other.key }), 404, 'NOT_FOUND');
    }
    expect((await api.request('GET', '/v1/chat/call-campaigns', { key: other.key })).body.data).toEqual([]);
  });

  it('needs campaigns scopes', async () => {
    const org = await voiceOrg(api, receiver, receiverUrl);
    const reader = await api.newKey(org.orgId, ['campaigns:read']);
    expectError(await api.request('POST', '/v1/chat/call-campaigns', { key: reader, body: campaignBody(org) }), 403, 'FORBIDDEN');
    expect((await api.request('GET', '/v1/chat/call-campaigns', { key: reader })).status).toBe(200);
  });
});
