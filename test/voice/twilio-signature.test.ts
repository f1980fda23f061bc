import fc from 'fast-check';
import twilio from 'twilio';
import { describe, expect, it } from 'vitest';
import { isValidTwilioSignature, twilioSignature } from '../../shared/telephony/twilio-signature.ts';

const token = fc.stringMatching(/^[0-9a-f]{32}$/);
const url = fc.webUrl({ withQueryParameters: true });
const params = fc.dictionary(fc.string({ minLength: 1, maxLength: 20 }), fc.string({ maxLength: 40 }), { maxKeys: 8 });

describe('X-Twilio-Signature', () => {
  it("matches the twilio package's own validator for any URL and parameters", () => {
    fc.assert(
      fc.property(token, url, params, (authToken, address, fields) => {
        const signature = twilioSignature(authToken, address, fields);
        expect(twilio.validateRequest(authToken, signature, address, fields)).toBe(true);
        expect(isValidTwilioSignature(authToken, signature, address, fields)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('fails under another token, another URL or an altered parameter', () => {
    fc.assert(
      fc.property(token, token, url, params, (authToken, other, address, fields) => {
        fc.pre(authToken !== other);
        const signature = twilioSignature(authToken, address, fields);
        expect(isValidTwilioSignature(other, signature, address, fields)).toBe(false);
        expect(isValidTwilioSignature(authToken, signature, `${address}x`, fields)).toBe(false);
        expect(isValidTwilioSignature(authToken, signature, address, { ...fields, Injected: 'yes' })).toBe(false);
        expect(isValidTwilioSignature(authToken, undefined, address, fields)).toBe(false);
      }),
      { numRuns: 200 },
    );
  });
});
