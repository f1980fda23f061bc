import * as z from 'zod';
import { isIanaTimezone, normalizePhoneNumber } from './contact-model.ts';
import { booleanQuery, instant, optionalText, pageOf, paginationQuery, requiredText, sortQuery, timestamp } from '../platform/schemas/common.ts';

export const maxContactTags = 50;
export const maxContactAttributes = 50;

/** A number with its country code, spacing allowed (`+1 415 555 0100`), answered as E.164. */
export const contactPhoneNumber = z
  .string()
  .max(40, { error: 'must be an E.164 number such as +14155550100' })
  .transform((raw, ctx) => {
    const normalized = normalizePhoneNumber(raw);
    if (normalized) return normalized;
    ctx.addIssue({ code: 'custom', message: 'must be an E.164 number such as +14155550100 (a + and the country code)' });
    return z.NEVER;
  });

export const ianaTimezone = z
  .string()
  .trim()
  .max(64)
  .refine(isIanaTimezone, { error: 'must be an IANA time zone such as Europe/Paris' });

export const contactTag = z.string().trim().min(1, { error: 'must not be empty' }).max(64);

const contactTags = z
  .array(contactTag)
  .max(maxContactTags, { error: `at most ${maxContactTags} tags` })
  .transform((tags) => [...new Set(tags)]);

const contactAttributes = z
  .record(z.string().min(1).max(64), z.union([z.string().max(1000), z.number(), z.boolean()]))
  .refine((attributes) => Object.keys(attributes).length <= maxContactAttributes, { error: `at most ${maxContactAttributes} attributes` });

const email = z.email({ error: 'must be an email address' }).max(254);

export const createContactBody = z.strictObject({
  phoneNumber: contactPhoneNumber,
  name: requiredText(200),
  email: email.optional(),
  timezone: ianaTimezone.optional(),
  attributes: contactAttributes.default({}),
  tags: contactTags.default([]),
  doNotCall: z.boolean().default(false),
});

/** Each field given replaces the stored one; `null` removes `email` or `timezone`. */
export const updateContactBody = z
  .strictObject({
    phoneNumber: contactPhoneNumber,
    name: requiredText(200),
    email: email.nullable(),
    timezone: ianaTimezone.nullable(),
    attributes: contactAttributes,
    tags: contactTags,
    doNotCall: z.boolean(),
  })
  .partial()
  .refine((body) => Object.keys(body).length > 0, { error: 'must change at least one field' });

export const listContactsQuery = paginationQuery.extend({
  sort: sortQuery(['createdAt', 'updatedAt', 'name', 'phoneNumber'], 'createdAt:desc'),
  tag: contactTag.optional(),
  doNotCall: booleanQuery.optional(),
  createdAfter: timestamp.optional(),
  /** Part of the name (any case) or of the number's digits. */
  q: z.string().trim().min(1).max(100).optional(),
});

export const contactSchema = z.object({
  id: z.uuid(),
  orgId: z.string(),
  phoneNumber: z.string(),
  name: z.string(),
  email: z.string().optional(),
  timezone: z.string().optional(),
  attributes: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
  tags: z.array(z.string()),
  doNotCall: z.boolean(),
  createdAt: instant,
  updatedAt: instant,
});

export const contactPage = pageOf(contactSchema);

/** Data rows one import may carry (the header row not counted). */
export const maxImportRows = 10_000;

/** The body limit of the import route: 10,000 rows of a few hundred bytes, well inside a Lambda request (6 MB). */
export const maxImportBytes = 5 * 1024 * 1024;

/** The import's body is the CSV text itself; its rows are checked one by one (shared/campaigns/contact-import.ts). */
export const importContactsBody = z.string().min(1, { error: 'must be a CSV document with a header row' });

export const importFailureCodes = [
  'INVALID_PHONE_NUMBER',
  'INVALID_TIMEZONE',
  'INVALID_FIELD',
  'MISSING_VALUE',
  'MALFORMED_ROW',
  'DUPLICATE_IN_FILE',
  'CONCURRENT_MODIFICATION',
  'DEADLINE_EXCEEDED',
] as const;

export const importContactsResponse = z.object({
  created: z.int().min(0),
  updated: z.int().min(0),
  failed: z.array(z.object({ row: z.int().min(1), code: z.enum(importFailureCodes), message: z.string() })),
});

export const dncParams = z.object({ phoneNumber: contactPhoneNumber });

export const addDncBody = z.strictObject({
  phoneNumber: contactPhoneNumber,
  reason: optionalText(500).optional(),
});

export const listDncQuery = paginationQuery.extend({
  /** Part of the number's digits. */
  q: z.string().trim().min(1).max(20).optional(),
});

export const dncEntrySchema = z.object({ phoneNumber: z.string(), reason: z.string().optional(), createdAt: instant });
export const dncPage = pageOf(dncEntrySchema);

export type CreateContactInput = z.output<typeof createContactBody>;
export type UpdateContactInput = z.output<typeof updateContactBody>;
export type ListContactsQuery = z.output<typeof listContactsQuery>;
export type ListDncQuery = z.output<typeof listDncQuery>;
export type ImportFailureCode = (typeof importFailureCodes)[number];
export type ImportContactsResult = z.output<typeof importContactsResponse>;
