import { getTimezonesForCountry } from 'countries-and-timezones';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { NotFoundError } from '../platform/errors.ts';
import type { SealResponse } from '../platform/ports.ts';
import { compareBy, paginate, type Page } from '../platform/schemas/common.ts';
import type { CreateContactInput, ListContactsQuery, ListDncQuery, UpdateContactInput } from './contact-schemas.ts';
import * as store from './contact-store.ts';
import { newId, nextUpdatedAt, type Clock } from '../platform/clock.ts';
import { mainZoneOfCountry, nanpAreaZones } from './timezone-areas.ts';

/** A contact attribute: becomes a session variable on campaign calls, so only JSON scalars. */
export type ContactAttribute = string | number | boolean;

/** Someone an organization may call: unique per organization by `phoneNumber` (docs/contacts.md). */
export interface Contact {
  id: string;
  orgId: string;
  /** E.164, normalised (`+14155550100`). */
  phoneNumber: string;
  name: string;
  email?: string | undefined;
  /** IANA zone as the client set it; when absent, `inferTimezone(phoneNumber)` and then the campaign's default apply. */
  timezone?: string | undefined;
  attributes: Record<string, ContactAttribute>;
  tags: string[];
  doNotCall: boolean;
  createdAt: string;
  updatedAt: string;
}

/** E.164: `+`, a country code that does not start with 0, at most 15 digits in all (as shared/voice/voice-schemas.ts). */
const e164Pattern = /^\+[1-9]\d{6,14}$/;

/** Separators people write inside numbers (`+1 (415) 555-0100`, `+44.20.7946.0958`): dropped by normalisation. */
const formatting = /[\s().\-\u00a0]/g;

/**
 * The E.164 form of a number written with a leading `+` and any spacing, dashes, dots or parentheses, or
 * undefined when it is not one. Numbers without a country code are refused rather than guessed.
 */
export function normalizePhoneNumber(raw: string): string | undefined {
  const compact = raw.trim().replace(formatting, '');
  return e164Pattern.test(compact) ? compact : undefined;
}

/**
 * The IANA zone of a number when its country (from libphonenumber-js) has exactly one zone, or, for the United
 * States and Canada, when its area code lies in one zone (shared/campaigns/timezone-areas.ts); else undefined.
 */
export function inferTimezone(phoneNumber: string): string | undefined {
  const normalized = normalizePhoneNumber(phoneNumber);
  if (!normalized) return undefined;
  const country = parsePhoneNumberFromString(normalized)?.country;
  if (!country) return undefined;
  if (country === 'US' || country === 'CA') return nanpAreaZones.get(normalized.slice(2, 5));
  const mainZone = mainZoneOfCountry[country];
  if (mainZone) return mainZone;
  const zones = getTimezonesForCountry(country) ?? [];
  return zones.length === 1 ? zones[0]?.name : undefined;
}

/** True for a zone name the runtime's time-zone database knows (`Europe/Paris`, `UTC`); offsets are refused. */
export function isIanaTimezone(zone: string): boolean {
  if (!/^[A-Za-z][A-Za-z0-9_+\-]*(\/[A-Za-z0-9_+\-]+)*$/.test(zone)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** The zone a campaign uses for the contact's hours: its own, else the number's, else undefined (the campaign's default). */
export const contactTimezone = (contact: Pick<Contact, 'timezone' | 'phoneNumber'>): string | undefined =>
  contact.timezone ?? inferTimezone(contact.phoneNumber);

/** What the contact operations need; the runtime is one. */
export type ContactDeps = store.ContactStoreDeps & { clock: Clock };

export async function createContact(deps: ContactDeps, orgId: string, input: CreateContactInput, sealResponse?: SealResponse): Promise<Contact> {
  const now = deps.clock.now().toISOString();
  const contact: Contact = { id: newId(), orgId, ...input, createdAt: now, updatedAt: now };
  await store.createContact(deps, contact, sealResponse?.(contact));
  return contact;
}

export async function getContact(deps: store.ContactStoreDeps, orgId: string, contactId: string): Promise<Contact> {
  const contact = await store.getContact(deps, orgId, contactId);
  if (!contact) throw new NotFoundError(`Contact ${contactId} not found.`);
  return contact;
}

/** Filters and sorts in memory over the organization's contacts (docs/contacts.md#limits). */
export async function listContacts(deps: store.ContactStoreDeps, orgId: string, query: ListContactsQuery): Promise<Page<Contact>> {
  const needle = query.q?.toLowerCase();
  // Only a query written like a number (digits, +, separators) searches numbers: `Bob 2` must not match every 2.
  const digits = query.q && /^[+\d\s().-]+$/.test(query.q) ? query.q.replace(/\D/g, '') : '';
  const createdAfter = query.createdAfter === undefined ? undefined : Date.parse(query.createdAfter);
  const matching = (await store.listContacts(deps, orgId)).filter(
    (contact) =>
      (query.tag === undefined || contact.tags.includes(query.tag)) &&
      (query.doNotCall === undefined || contact.doNotCall === query.doNotCall) &&
      (createdAfter === undefined || Date.parse(contact.createdAt) > createdAfter) &&
      (needle === undefined || contact.name.toLowerCase().includes(needle) || (digits !== '' && contact.phoneNumber.includes(digits))),
  );
  matching.sort(compareBy<Contact>(query.sort.field, query.sort.direction));
  return paginate(matching, query.page, query.limit);
}

export async function updateContact(deps: ContactDeps, orgId: string, contactId: string, changes: UpdateContactInput): Promise<Contact> {
  const previous = await getContact(deps, orgId, contactId);
  const { email, timezone, ...rest } = changes;
  const next: Contact = { ...previous, ...rest, updatedAt: nextUpdatedAt(deps.clock, previous.updatedAt) };
  if (email === null) delete next.email;
  else if (email !== undefined) next.email = email;
  if (timezone === null) delete next.timezone;
  else if (timezone !== undefined) next.timezone = timezone;
  await store.replaceContact(deps, previous, next);
  return next;
}

export async function deleteContact(deps: store.ContactStoreDeps, orgId: string, contactId: string): Promise<void> {
  if (!(await store.deleteContact(deps, orgId, contactId))) throw new NotFoundError(`Contact ${contactId} not found.`);
}

/** Listing a number again keeps its first entry (and reason): adding is idempotent. */
export async function addToDncList(deps: ContactDeps, orgId: string, input: { phoneNumber: string; reason?: string | undefined }): Promise<store.DncEntry> {
  return store.addDncEntry(deps, orgId, { ...input, createdAt: deps.clock.now().toISOString() });
}

export async function listDncList(deps: store.ContactStoreDeps, orgId: string, query: ListDncQuery): Promise<Page<store.DncEntry>> {
  const digits = query.q?.replace(/\D/g, '');
  const entries = await store.listDncEntries(deps, orgId);
  return paginate(digits ? entries.filter((entry) => entry.phoneNumber.includes(digits)) : entries, query.page, query.limit);
}

export async function removeFromDncList(deps: store.ContactStoreDeps, orgId: string, phoneNumber: string): Promise<void> {
  if (!(await store.removeDncEntry(deps, orgId, phoneNumber))) throw new NotFoundError(`${phoneNumber} is not on the do-not-call list.`);
}
