import { expect } from 'vitest';
import type { TwilioSimulator } from '../../infra/local/twilio-simulator.ts';
import type { Contact } from '../../shared/campaigns/contacts.ts';
import { runtime } from '../../shared/runtime.ts';
import { addDncEntry, createContact } from '../../shared/campaigns/contact-store.ts';
import type { TestApi } from './api.ts';
import { eventually } from './eventually.ts';

/** A plan that neither caps calls nor counts voice seconds: what these suites test is the campaign's own cap. */
export const unlimitedPlans = JSON.stringify({
  free: { name: 'Free', quotas: { chat_messages: null, voice_seconds: null, knowledge_chunks: null }, concurrentCalls: 1000, requestsPerSecond: 1000, burst: 1000 },
});

/** Every day, all day: windows are the windows suite's subject. */
export const alwaysOpen = [{ days: ['MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT', 'SUN'], start: '00:00', end: '24:00' }];

/** `+1 <area> 555 01<nn>`: the simulator's callee `nn` (answer below 50, busy 60s, no answer 70s, failing 80s) in an area. */
export const callee = (area: number, nn: number): string => `+1${area}55501${String(nn).padStart(2, '0')}`;

/** Contacts of an organization, written through the contact store (DynamoDB Local). */
export async function addContacts(orgId: string, specs: readonly { phoneNumber: string; tags?: string[]; doNotCall?: boolean; timezone?: string; attributes?: Contact['attributes'] }[]): Promise<Contact[]> {
  const now = new Date().toISOString();
  const contacts = specs.map((spec, index) => ({
    id: crypto.randomUUID(),
    orgId,
    phoneNumber: spec.phoneNumber,
    name: `Contact ${index}`,
    attributes: spec.attributes ?? { position: index },
    tags: spec.tags ?? [],
    doNotCall: spec.doNotCall ?? false,
    ...(spec.timezone ? { timezone: spec.timezone } : {}),
    createdAt: now,
    updatedAt: now,
  }));
  for (let start = 0; start < contacts.length; start += 20) await Promise.all(contacts.slice(start, start + 20).map((contact) => createContact(runtime(), contact)));
  return contacts;
}

export async function addToDncList(orgId: string, phoneNumber: string): Promise<void> {
  await addDncEntry(runtime(), orgId, { phoneNumber, createdAt: new Date().toISOString() });
}

export function campaignBody(org: { agentId: string; phoneNumberId: string }, overrides: Record<string, unknown> = {}) {
  return {
    name: 'Renewals',
    agentId: org.agentId,
    phoneNumberId: org.phoneNumberId,
    audience: { tags: ['campaign'] },
    schedule: { startAt: new Date(Date.now() - 60_000).toISOString(), windows: alwaysOpen, timezoneMode: 'callee' },
    maxConcurrentCalls: 10,
    retry: { maxAttempts: 2, delaySeconds: 0, on: ['BUSY', 'NO_ANSWER'] },
    ttl: 30,
    sessionVariables: { company: 'Acme' },
    ...overrides,
  };
}

export async function startedCampaign(api: TestApi, key: string, body: object): Promise<string> {
  const created = await api.request('POST', '/v1/chat/call-campaigns', { key, body });
  expect(created.status, created.text).toBe(201);
  const started = await api.request('POST', `/v1/chat/call-campaigns/${created.body.id}/start`, { key });
  expect(started.status, started.text).toBe(200);
  return created.body.id as string;
}

export function campaignStatus(api: TestApi, key: string, campaignId: string) {
  return api.request('GET', `/v1/chat/call-campaigns/${campaignId}`, { key });
}

export async function untilStatus(api: TestApi, key: string, campaignId: string, status: string, timeoutMs: number) {
  const campaign = await eventually(() => campaignStatus(api, key, campaignId), (response) => response.body.status === status, timeoutMs);
  expect(campaign.body.status, JSON.stringify(campaign.body.progress)).toBe(status);
  return campaign.body;
}

/** Every row of `GET …/calls`, following the cursor. */
export async function allCalls(api: TestApi, key: string, campaignId: string): Promise<any[]> {
  const rows: any[] = [];
  let cursor: string | undefined;
  do {
    const page = await api.request('GET', `/v1/chat/call-campaigns/${campaignId}/calls?limit=100${cursor ? `&cursor=${cursor}` : ''}`, { key });
    expect(page.status, page.text).toBe(200);
    rows.push(...page.body.data);
    cursor = page.body.nextCursor;
  } while (cursor);
  return rows;
}

/** The simulator's own record of the calls it was asked to place, each with the session its TwiML names. */
export function dialsOf(simulator: TwilioSimulator, numbers: ReadonlySet<string>): { to: string; sessionId: string; createdAt: number }[] {
  return simulator
    .outboundCalls()
    .filter((call) => numbers.has(call.to))
    .map((call) => ({ to: call.to, createdAt: call.createdAt, sessionId: /session=([0-9a-f-]{36})/.exec(simulator.twimlOf(call.sid) ?? '')?.[1] ?? '' }));
}
