import { NotFoundError } from '../platform/errors.ts';
import type { SealResponse } from '../platform/ports.ts';
import { compareBy, paginate, type Page } from '../platform/schemas/common.ts';
import type { CreateContactInput, ListContactsQuery, ListDncQuery, UpdateContactInput } from './contact-schemas.ts';
import * as store from './contact-store.ts';
import { newId, nextUpdatedAt, type Clock } from '../platform/clock.ts';
import type { Contact } from './contact-model.ts';

export { contactTimezone, inferTimezone, isIanaTimezone, normalizePhoneNumber, type Contact, type ContactAttribute } from './contact-model.ts';

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
