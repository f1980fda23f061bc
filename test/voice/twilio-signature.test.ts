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

  it("accepts the signature over the URL with the scheme's default port and without it, as Twilio's validator does; another port fails", () => {
    // Twilio signs https://host/… or https://host:443/… depending on how the URL reached it.
    const { authToken, params, signature } = documented;
    const withPort = 'https://mycompany.com:443/myapp.php?foo=1&bar=2';
    const signedWithPort = twilio.getExpectedTwilioSignature(authToken, withPort, params);

    const accepted = [
      [signature, withPort],
      [signedWithPort, documented.url],
      [twilio.getExpectedTwilioSignature(authToken, 'http://mycompany.com:80/myapp.php', params), 'http://mycompany.com/myapp.php'],
    ] as const;
    const refused = [
      [twilio.getExpectedTwilioSignature(authToken, 'https://mycompany.com:8443/myapp.php?foo=1&bar=2', params), documented.url],
      [twilio.getExpectedTwilioSignature(authToken, 'https://mycompany.com:80/myapp.php?foo=1&bar=2', params), documented.url],
    ] as const;

    for (const [given, url] of accepted) {
      expect(twilio.validateRequest(authToken, given, url, params), url).toBe(true);
      expect(isValidTwilioSignature(authToken, given, url, params), url).toBe(true);
    }
    for (const [given, url] of refused) {
      expect(twilio.validateRequest(authToken, given, url, params), url).toBe(false);
      expect(isValidTwilioSignature(authToken, given, url, params), url).toBe(false);
    }
  });

  it("agrees with the twilio package's validator on signatures over any URL's port variants", () => {
    const variant = fc.constantFrom('', ':443', ':80', ':8443');
    fc.assert(
      fc.property(token, fc.constantFrom('https', 'http'), fc.domain(), variant, variant, params, (authToken, scheme, host, signedPort, verifiedPort, fields) => {
        const signed = twilio.getExpectedTwilioSignature(authToken, `${scheme}://${host}${signedPort}/twilio/voice?x=1`, fields);
        const url = `${scheme}://${host}${verifiedPort}/twilio/voice?x=1`;
        expect(isValidTwilioSignature(authToken, signed, url, fields)).toBe(twilio.validateRequest(authToken, signed, url, fields));
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
