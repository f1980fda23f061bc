/** Phone normalisation and time-zone inference (shared/campaigns/contacts.ts), over generated numbers. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { contactTimezone, inferTimezone, isIanaTimezone, normalizePhoneNumber } from '../../shared/campaigns/contacts.ts';
import { nanpAreaZones } from '../../shared/campaigns/timezone-areas.ts';

const e164 = fc
  .tuple(fc.integer({ min: 1, max: 9 }), fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 6, maxLength: 13 }))
  .map(([first, rest]) => `+${first}${rest.join('')}`);

/** The number as people write it: separators between any digits, spaces around. */
const written = (number: string) =>
  fc
    .array(fc.constantFrom('', '', ' ', '-', '.', '(', ')', '\u00a0'), { minLength: number.length - 1, maxLength: number.length - 1 })
    .chain((separators) =>
      fc.constantFrom('', ' ', '  ').map((pad) => pad + number[0] + [...number.slice(1)].map((digit, index) => separators[index] + digit).join('') + pad),
    );

describe('normalizePhoneNumber', () => {
  it('gives back the E.164 number however it is spaced or punctuated', () => {
    fc.assert(fc.property(e164.chain((number) => written(number).map((text) => [number, text] as const)), ([number, text]) => {
      expect(normalizePhoneNumber(text)).toBe(number);
    }));
  });

  it('answers only E.164 or nothing, and is idempotent', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), e164, fc.stringMatching(/^[+0-9 ()-]{0,20}$/)), (text) => {
        const normalized = normalizePhoneNumber(text);
        if (normalized === undefined) return;
        expect(normalized).toMatch(/^\+[1-9]\d{6,14}$/);
        expect(normalizePhoneNumber(normalized)).toBe(normalized);
      }),
    );
  });

  it('refuses numbers without a country code, with a leading 0 country code, or too long', () => {
    for (const text of ['4155550100', '+0123456789', '+1234567890123456', '+12345', '', '+1 415 555 0100 ext 2', '++14155550100']) {
      expect(normalizePhoneNumber(text), text).toBeUndefined();
    }
  });
});

describe('inferTimezone', () => {
  it('answers a zone the runtime knows, or nothing, and the same for any writing of the number', () => {
    fc.assert(fc.property(e164.chain((number) => written(number).map((text) => [number, text] as const)), ([number, text]) => {
      const zone = inferTimezone(number);
      if (zone !== undefined) expect(isIanaTimezone(zone)).toBe(true);
      expect(inferTimezone(text)).toBe(zone);
    }));
  });

  it('maps US and Canadian numbers by their area code, and leaves split area codes unknown', () => {
    const areaCodes = [...nanpAreaZones.keys()];
    fc.assert(
      fc.property(fc.constantFrom(...areaCodes), fc.integer({ min: 2_000_000, max: 9_999_999 }), (areaCode, local) => {
        const zone = inferTimezone(`+1${areaCode}${local}`);
        // libphonenumber-js may not know a new area code's country; it never gets a zone other than the table's.
        if (zone !== undefined) expect(zone).toBe(nanpAreaZones.get(areaCode));
      }),
    );
    expect(inferTimezone('+14155550100')).toBe('America/Los_Angeles');
    expect(inferTimezone('+12125550100')).toBe('America/New_York');
    expect(inferTimezone('+16135550100')).toBe('America/Toronto');
    for (const split of ['+18505550100', '+15415550100', '+12085550100', '+19075550100']) expect(inferTimezone(split), split).toBeUndefined();
    for (const zone of new Set(nanpAreaZones.values())) expect(isIanaTimezone(zone), zone).toBe(true);
  });

  it('names the one zone of a single-zone country and none for a multi-zone one', () => {
    expect(inferTimezone('+33142685300')).toBe('Europe/Paris');
    expect(inferTimezone('+442079460958')).toBe('Europe/London');
    expect(inferTimezone('+81312345678')).toBe('Asia/Tokyo');
    expect(inferTimezone('+4930123456')).toBe('Europe/Berlin');
    expect(inferTimezone('+5511987654321')).toBeUndefined(); // Brazil
    expect(inferTimezone('+61291234567')).toBeUndefined(); // Australia
    expect(inferTimezone('+15550103')).toBeUndefined(); // no country
  });

  it('gives way to the contact’s own time zone', () => {
    expect(contactTimezone({ phoneNumber: '+14155550100', timezone: 'Europe/Paris' })).toBe('Europe/Paris');
    expect(contactTimezone({ phoneNumber: '+14155550100' })).toBe('America/Los_Angeles');
  });
});
