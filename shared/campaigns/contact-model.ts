/** A contact and its phone number rules (normalisation, time-zone inference): what the contact schemas, store and use cases share. */
import { getTimezonesForCountry } from 'countries-and-timezones';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
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
