import fc from 'fast-check';
import twilio from 'twilio';
import { describe, expect, it } from 'vitest';
import { isValidTwilioSignature, twilioSignature } from '../../shared/voice/twilio-signature.ts';

const token = fc.stringMatching(/^[0-9a-f]{32}$/);
const url = fc.webUrl({ withQueryParameters: true });
const params = fc.dictionary(fc.string({ minLength: 1, maxLength: 20 }), fc.string({ maxLength: 40 }), { maxKeys: 8 });

/**
 * Twilio's worked example ("Validating requests", twilio.com/docs/usage/security#validating-requests; the same vector
 * is the RequestValidatorTest fixture of twilio-php and twilio-csharp): auth token 12345, this URL and these form
 * parameters give this signature.
 */
const documented = {
  authToken: '12345',
  url: 'https://mycompany.com/myapp.php?foo=1&bar=2',
  params: { CallSid: 'CA1234567890ABCDE', Caller: '+14158675309', Digits: '1234', From: '+14158675309', To: '+18005551212' },
  signature: 'RSOYDt4T1cUTdK1PDd93/VVr8B8=',
};

describe('X-Twilio-Signature', () => {
  it("gives Twilio's documented example signature, which the twilio package's validator accepts; other queries fail", () => {
    const { authToken, url, params, signature } = documented;
    expect(twilioSignature(authToken, url, params)).toBe(signature);
    expect(twilio.validateRequest(authToken, signature, url, params)).toBe(true);
    expect(isValidTwilioSignature(authToken, signature, url, params)).toBe(true);
    for (const other of [`${url}&extra=1`, url.replace('?foo=1&bar=2', ''), url.replace('foo=1&bar=2', 'bar=2&foo=1')]) {
      expect(isValidTwilioSignature(authToken, signature, other, params), other).toBe(false);
    }
  });

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
