/** Contacts, their CSV import and the do-not-call list, through the API on DynamoDB Local (docs/contacts.md). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../shared/runtime.ts';
import { expectError, startApi, type TestApi } from '../support/api.ts';

let api: TestApi;
let deps: Runtime;
let store: typeof import('../../shared/campaigns/contact-store.ts');
beforeAll(async () => {
  api = await startApi();
  deps = (await import('../../shared/runtime.ts')).runtime();
  store = await import('../../shared/campaigns/contact-store.ts');
});
afterAll(() => api.close());

const unknownId = '00000000-0000-4000-8000-000000000000';

let numberSeq = 0;
/** A US number (San Francisco area code) unique in this run. */
const newNumber = () => `+1415${String(5_000_000 + (numberSeq += 1)).padStart(7, '0')}`;

async function createContact(key: string, body: Record<string, unknown> = {}): Promise<any> {
  const response = await api.request('POST', '/v1/chat/contacts', { key, body: { phoneNumber: newNumber(), name: 'Ada Lovelace', ...body } });
  expect(response.status, response.text).toBe(201);
  return response.body;
}

const importCsv = (key: string, csv: string) =>
  api.request('POST', '/v1/chat/contacts/import', { key, rawBody: csv, headers: { 'content-type': 'text/csv' } });

describe('contacts CRUD', () => {
  it('creates a contact with its number normalised, reads, updates and deletes it', async () => {
    const { orgId, key } = await api.newOrg();

    const created = await api.request('POST', '/v1/chat/contacts', {
      key,
      body: { phoneNumber: '+1 (415) 555-0199', name: 'Grace', email: 'grace@example.com', attributes: { plan: 'gold', seats: 3, vip: true }, tags: ['vip', 'vip', 'west'] },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ orgId, phoneNumber: '+14155550199', name: 'Grace', tags: ['vip', 'west'], doNotCall: false, attributes: { plan: 'gold', seats: 3, vip: true } });
    const id = created.body.id;

    expect((await api.request('GET', `/v1/chat/contacts/${id}`, { key })).body).toEqual(created.body);

    const patched = await api.request('PATCH', `/v1/chat/contacts/${id}`, { key, body: { email: null, timezone: 'America/Los_Angeles', doNotCall: true } });
    expect(patched.status).toBe(200);
    expect(patched.body).not.toHaveProperty('email');
    expect(patched.body).toMatchObject({ timezone: 'America/Los_Angeles', doNotCall: true });
    expect(Date.parse(patched.body.updatedAt)).toBeGreaterThan(Date.parse(created.body.updatedAt));
    expect((await api.request('GET', `/v1/chat/contacts/${id}`, { key })).body).toEqual(patched.body);

    expect((await api.request('DELETE', `/v1/chat/contacts/${id}`, { key })).status).toBe(204);
    expectError(await api.request('GET', `/v1/chat/contacts/${id}`, { key }), 404, 'NOT_FOUND');
    expectError(await api.request('DELETE', `/v1/chat/contacts/${id}`, { key }), 404, 'NOT_FOUND');
    // The number is free again.
    expect((await api.request('POST', '/v1/chat/contacts', { key, body: { phoneNumber: '+14155550199', name: 'Grace again' } })).status).toBe(201);
  });

  it('refuses bad fields with 400 naming them', async () => {
    const { key } = await api.newOrg();
    for (const [field, value] of [
      ['phoneNumber', '4155550100'],
      ['phoneNumber', '+0123456789'],
      ['timezone', 'Mars/Olympus'],
      ['timezone', '+05:00'],
      ['email', 'not-an-email'],
      ['tags', ['']],
    ] as const) {
      const response = await api.request('POST', '/v1/chat/contacts', { key, body: { phoneNumber: newNumber(), name: 'X', [field]: value } });
      expectError(response, 400, 'VALIDATION_ERROR', field === 'tags' ? 'tags.0' : field);
    }
    expectError(await api.request('POST', '/v1/chat/contacts', { key, body: { phoneNumber: newNumber() } }), 400, 'VALIDATION_ERROR', 'name');
  });

  it('answers 409 CONTACT_PHONE_TAKEN for a number another contact holds, on create and on PATCH', async () => {
    const { key } = await api.newOrg();
    const first = await createContact(key);
    const second = await createContact(key);

    expectError(await api.request('POST', '/v1/chat/contacts', { key, body: { phoneNumber: first.phoneNumber, name: 'Twin' } }), 409, 'CONTACT_PHONE_TAKEN', 'phoneNumber');
    expectError(await api.request('PATCH', `/v1/chat/contacts/${second.id}`, { key, body: { phoneNumber: first.phoneNumber } }), 409, 'CONTACT_PHONE_TAKEN');
    expect((await api.request('GET', `/v1/chat/contacts/${second.id}`, { key })).body.phoneNumber).toBe(second.phoneNumber);

    // Moving to a free number frees the old one.
    const moved = await api.request('PATCH', `/v1/chat/contacts/${second.id}`, { key, body: { phoneNumber: '+14155550142' } });
    expect(moved.status).toBe(200);
    expect((await api.request('POST', '/v1/chat/contacts', { key, body: { phoneNumber: second.phoneNumber, name: 'Next' } })).status).toBe(201);
  });

  it('lets two organizations hold the same number, and never shows one the other’s contact (404)', async () => {
    const a = await api.newOrg();
    const b = await api.newOrg();
    const contact = await createContact(a.key, { phoneNumber: '+14155550111' });
    expect((await api.request('POST', '/v1/chat/contacts', { key: b.key, body: { phoneNumber: '+14155550111', name: 'Same number' } })).status).toBe(201);

    expectError(await api.request('GET', `/v1/chat/contacts/${contact.id}`, { key: b.key }), 404, 'NOT_FOUND');
    expectError(await api.request('PATCH', `/v1/chat/contacts/${contact.id}`, { key: b.key, body: { name: 'Mallory' } }), 404, 'NOT_FOUND');
    expectError(await api.request('DELETE', `/v1/chat/contacts/${contact.id}`, { key: b.key }), 404, 'NOT_FOUND');
    expect((await api.request('GET', '/v1/chat/contacts', { key: b.key })).body.data.map((c: { id: string }) => c.id)).not.toContain(contact.id);
    expect((await api.request('GET', `/v1/chat/contacts/${contact.id}`, { key: a.key })).body.name).toBe('Ada Lovelace');
  });

  it('needs contacts:read to read and contacts:write to write', async () => {
    const { orgId } = await api.newOrg();
    const reader = await api.newKey(orgId, ['contacts:read']);
    expectError(await api.request('POST', '/v1/chat/contacts', { key: reader, body: { phoneNumber: newNumber(), name: 'X' } }), 403, 'FORBIDDEN');
    expect((await api.request('GET', '/v1/chat/contacts', { key: reader })).status).toBe(200);
    expect((await importCsv(reader, 'phoneNumber,name\n+14155550100,X\n')).status).toBe(403);
  });
});

describe('listing contacts', () => {
  it('filters by tag, doNotCall, createdAfter and q, sorts, and clamps page and limit', async () => {
    const { key } = await api.newOrg();
    const alice = await createContact(key, { name: 'Alice Archer', tags: ['vip'], phoneNumber: '+14155550001' });
    const bob = await createContact(key, { name: 'Bob Baker', tags: ['vip', 'late'], doNotCall: true, phoneNumber: '+12125550002' });
    const carol = await createContact(key, { name: 'Carol Cole', phoneNumber: '+33142685300' });
    const ids = async (query: string) => (await api.request('GET', `/v1/chat/contacts?${query}`, { key })).body.data.map((c: { id: string }) => c.id);

    expect(await ids('tag=vip&sort=name:asc')).toEqual([alice.id, bob.id]);
    expect(await ids('doNotCall=true')).toEqual([bob.id]);
    expect(await ids('doNotCall=false&sort=name:desc')).toEqual([carol.id, alice.id]);
    expect(await ids(`createdAfter=${encodeURIComponent(alice.createdAt)}&sort=createdAt:asc`)).toEqual([bob.id, carol.id]);
    expect(await ids('q=bAKer')).toEqual([bob.id]);
    expect(await ids('q=%2B3314')).toEqual([carol.id]);
    expect(await ids('q=212')).toEqual([bob.id]);
    expect(await ids('q=Bob%202')).toEqual([]);
    expect(await ids('sort=phoneNumber:asc')).toEqual([bob.id, alice.id, carol.id]);

    const clamped = await api.request('GET', '/v1/chat/contacts?page=0&limit=1000', { key });
    expect(clamped.body.pagination).toEqual({ page: 1, limit: 100, total: 3, totalPages: 1 });
    const second = await api.request('GET', '/v1/chat/contacts?limit=2&page=2&sort=name:asc', { key });
    expect(second.body.data.map((c: { id: string }) => c.id)).toEqual([carol.id]);
    expectError(await api.request('GET', '/v1/chat/contacts?sort=email:asc', { key }), 400, 'VALIDATION_ERROR', 'sort');
    expectError(await api.request('GET', '/v1/chat/contacts?createdAfter=yesterday', { key }), 400, 'VALIDATION_ERROR', 'createdAfter');
  });
});

describe('CSV import', () => {
  it('creates and updates by number, and reports each bad row without stopping the others', async () => {
    const { key } = await api.newOrg();
    const existing = await createContact(key, { phoneNumber: '+14155550300', name: 'Old Name', tags: ['old'], attributes: { plan: 'basic', region: 'west' } });
    const taken = await createContact(key, { phoneNumber: '+14155550301' });
    const csv = [
      'Phone Number,Name,email,timezone,tags,doNotCall,plan',
      '+1 415 555 0300,New Name,,,a;b,,gold', // row 2: updates `existing`
      '+14155550302,Zed,zed@example.com,Europe/Paris,x|y,yes,', // row 3: created
      '4155550303,No Plus,,,,,', // row 4: not E.164
      '+14155550304,Bad Zone,,Mars/Base,,,', // row 5: bad time zone
      '+14155550305,Too few', // row 6: a missing column
      '+14155550302,Again,,,,,', // row 7: same number as row 3
      '+14155550306,,,,,,', // row 8: no name for a new contact
      '+14155550307,Bad DNC,,,,maybe,', // row 9
      ',Nobody,,,,,', // row 10: no number
      '+14155550308,Last,,,,,', // row 11: created
    ].join('\n');

    const response = await importCsv(key, csv);

    expect(response.status, response.text).toBe(200);
    expect(response.body.created).toBe(2);
    expect(response.body.updated).toBe(1);
    expect(response.body.failed.map((f: { row: number; code: string }) => [f.row, f.code])).toEqual([
      [4, 'INVALID_PHONE_NUMBER'],
      [5, 'INVALID_TIMEZONE'],
      [6, 'MALFORMED_ROW'],
      [7, 'DUPLICATE_IN_FILE'],
      [8, 'MISSING_VALUE'],
      [9, 'INVALID_FIELD'],
      [10, 'MISSING_VALUE'],
    ]);
    const updated = (await api.request('GET', `/v1/chat/contacts/${existing.id}`, { key })).body;
    expect(updated).toMatchObject({ id: existing.id, name: 'New Name', tags: ['a', 'b'], attributes: { plan: 'gold', region: 'west' }, doNotCall: false });
    const list = (await api.request('GET', '/v1/chat/contacts?limit=100&sort=phoneNumber:asc', { key })).body.data;
    expect(list.map((c: { phoneNumber: string }) => c.phoneNumber)).toEqual(['+14155550300', '+14155550301', '+14155550302', '+14155550308']);
    expect(list[2]).toMatchObject({ name: 'Zed', email: 'zed@example.com', timezone: 'Europe/Paris', tags: ['x', 'y'], doNotCall: true, attributes: {} });
    expect(list[1]).toEqual(taken);
  });

  it('refuses a document without a phone column, over 10,000 rows, or not sent as text/csv', async () => {
    const { key } = await api.newOrg();
    expectError(await importCsv(key, 'name,email\nX,x@example.com\n'), 400, 'VALIDATION_ERROR', 'body');
    expectError(await importCsv(key, 'phone,name,Phone\n'), 400, 'VALIDATION_ERROR', 'body');
    const rows = Array.from({ length: 10_001 }, (_, index) => `+1415${String(6_000_000 + index)},N`);
    expectError(await importCsv(key, `phone,name\n${rows.join('\n')}\n`), 400, 'VALIDATION_ERROR', 'body');
    expectError(await api.request('POST', '/v1/chat/contacts/import', { key, body: { phoneNumber: '+14155550100' } }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    expect((await api.request('GET', '/v1/chat/contacts', { key })).body.pagination.total).toBe(0);
  });

  it('imports a row whose number another import just claimed as an update, never as a second contact', async () => {
    const { key } = await api.newOrg();
    const csv = `phone,name\n${Array.from({ length: 120 }, (_, index) => `+1212${String(7_000_000 + index)},Person ${index}`).join('\n')}\n`;
    const [first, second] = await Promise.all([importCsv(key, csv), importCsv(key, csv)]);
    for (const response of [first, second]) expect(response.status, response.text).toBe(200);
    const outcomes = [first.body, second.body];
    // Each row lands once as a creation; the other import updates it or reports the race for a retry.
    expect(outcomes[0].created + outcomes[1].created).toBe(120);
    for (const outcome of outcomes) expect(outcome.failed.every((f: { code: string }) => f.code === 'CONCURRENT_MODIFICATION')).toBe(true);
    expect((await api.request('GET', '/v1/chat/contacts', { key })).body.pagination.total).toBe(120);
  });
});

describe('do-not-call', () => {
  it('adds, lists and removes numbers; adding twice keeps the first entry', async () => {
    const { key } = await api.newOrg();
    const added = await api.request('POST', '/v1/chat/contacts/dnc', { key, body: { phoneNumber: '+44 20 7946 0958', reason: 'asked on call' } });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ phoneNumber: '+442079460958', reason: 'asked on call' });
    const again = await api.request('POST', '/v1/chat/contacts/dnc', { key, body: { phoneNumber: '+442079460958' } });
    expect(again.body).toEqual(added.body);
    await api.request('POST', '/v1/chat/contacts/dnc', { key, body: { phoneNumber: '+14155550100' } });

    const listed = await api.request('GET', '/v1/chat/contacts/dnc', { key });
    expect(listed.body.data.map((entry: { phoneNumber: string }) => entry.phoneNumber)).toEqual(['+14155550100', '+442079460958']);
    expect((await api.request('GET', '/v1/chat/contacts/dnc?q=7946', { key })).body.data).toHaveLength(1);

    expect((await api.request('DELETE', `/v1/chat/contacts/dnc/${encodeURIComponent('+442079460958')}`, { key })).status).toBe(204);
    expectError(await api.request('DELETE', '/v1/chat/contacts/dnc/+442079460958', { key }), 404, 'NOT_FOUND');
    // A path that names no number names nothing: 404, as a malformed id does.
    expectError(await api.request('DELETE', '/v1/chat/contacts/dnc/12', { key }), 404, 'NOT_FOUND');
    expect((await api.request('GET', '/v1/chat/contacts/dnc', { key })).body.pagination.total).toBe(1);
  });

  it('blocks a dial for a number on the DNC list or held by a doNotCall contact, and only in that organization', async () => {
    const a = await api.newOrg();
    const b = await api.newOrg();
    const listed = '+14155550700';
    const flagged = await createContact(a.key, { phoneNumber: '+14155550701' });
    const free = await createContact(a.key, { phoneNumber: '+14155550702' });
    expect(await store.isDialBlocked(deps, a.orgId, flagged.phoneNumber)).toBe(false);

    await api.request('POST', '/v1/chat/contacts/dnc', { key: a.key, body: { phoneNumber: listed } });
    await api.request('PATCH', `/v1/chat/contacts/${flagged.id}`, { key: a.key, body: { doNotCall: true } });

    expect(await store.isDialBlocked(deps, a.orgId, listed)).toBe(true);
    expect(await store.isDialBlocked(deps, a.orgId, flagged.phoneNumber)).toBe(true);
    expect(await store.isDialBlocked(deps, a.orgId, free.phoneNumber)).toBe(false);
    expect(await store.isDialBlocked(deps, b.orgId, listed)).toBe(false);
    expect(await store.isDialBlocked(deps, b.orgId, flagged.phoneNumber)).toBe(false);

    // Lifting both lifts the block at once (the check reads strongly consistent).
    await api.request('DELETE', `/v1/chat/contacts/dnc/${encodeURIComponent(listed)}`, { key: a.key });
    await importCsv(a.key, `phone,doNotCall\n${flagged.phoneNumber},no\n`);
    expect(await store.isDialBlocked(deps, a.orgId, listed)).toBe(false);
    expect(await store.isDialBlocked(deps, a.orgId, flagged.phoneNumber)).toBe(false);

    // A doNotCall set by an import blocks too, and a deleted contact's flag goes with it.
    await importCsv(a.key, `phone,dnc\n${free.phoneNumber},true\n`);
    expect(await store.isDialBlocked(deps, a.orgId, free.phoneNumber)).toBe(true);
    await api.request('DELETE', `/v1/chat/contacts/${free.id}`, { key: a.key });
    expect(await store.isDialBlocked(deps, a.orgId, free.phoneNumber)).toBe(false);
  });
});

describe('listAudience', () => {
  it('yields the contacts named by id or carrying a tag, each once, skipping missing ids and other organizations', async () => {
    const a = await api.newOrg();
    const b = await api.newOrg();
    const tagged = await Promise.all(Array.from({ length: 5 }, () => createContact(a.key, { tags: ['spring'] })));
    const named = await createContact(a.key, { tags: ['other'] });
    await createContact(a.key, { tags: ['other'] });
    const foreign = await createContact(b.key, { tags: ['spring'] });

    const seen: string[] = [];
    for await (const contact of store.listAudience(deps, a.orgId, { contactIds: [named.id, tagged[0].id, unknownId, foreign.id, named.id], tags: ['spring', 'spring'] })) {
      seen.push(contact.id);
    }

    expect(seen).toHaveLength(6);
    expect(new Set(seen)).toEqual(new Set([named.id, ...tagged.map((contact) => contact.id)]));
    expect((await store.getContact(deps, a.orgId, foreign.id))).toBeUndefined();
  });
});
