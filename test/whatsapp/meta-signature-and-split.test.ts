import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isValidMetaSignature, metaSignature } from '../../shared/whatsapp/meta-signature.ts';
import { splitForWhatsapp } from '../../shared/whatsapp/split-text.ts';

describe('X-Hub-Signature-256', () => {
  it("matches Meta's documented form: sha256= and the hex HMAC-SHA256 of the raw body under the app secret", () => {
    // HMAC-SHA256("key", "The quick brown fox jumps over the lazy dog"), a published test vector.
    expect(metaSignature('key', 'The quick brown fox jumps over the lazy dog')).toBe('sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8');
  });

  it('verifies only the exact body under the same secret', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string(), fc.string({ minLength: 1 }), (secret, body, extra) => {
        const signature = metaSignature(secret, body);
        expect(isValidMetaSignature(secret, signature, body)).toBe(true);
        expect(isValidMetaSignature(secret, signature, body + extra)).toBe(false);
        expect(isValidMetaSignature(secret + extra, signature, body)).toBe(false);
        expect(isValidMetaSignature(secret, undefined, body)).toBe(false);
        expect(isValidMetaSignature(secret, signature.toUpperCase().replace('SHA256=', 'sha256='), body)).toBe(signature === signature.toUpperCase().replace('SHA256=', 'sha256='));
      }),
    );
  });
});

describe('splitting a reply for WhatsApp', () => {
  const text = fc.array(fc.oneof(fc.constantFrom(' ', '\n', '\n\n', '😀'), fc.string({ minLength: 1, maxLength: 30 })), { maxLength: 200 }).map((parts) => parts.join(''));

  it('keeps every part within the limit and non-empty, and loses nothing but the whitespace at the cuts', () => {
    fc.assert(
      fc.property(text, fc.integer({ min: 8, max: 120 }), (reply, limit) => {
        const parts = splitForWhatsapp(reply, limit);
        for (const part of parts) {
          expect(part.length).toBeLessThanOrEqual(limit);
          expect(part.trim().length).toBeGreaterThan(0);
        }
        expect(parts.join('').replace(/\s+/g, '')).toBe(reply.replace(/\s+/g, ''));
      }),
    );
  });

  it('sends a reply within the limit as it is, and cuts at a paragraph before a space', () => {
    expect(splitForWhatsapp('Short reply.', 4096)).toEqual(['Short reply.']);
    expect(splitForWhatsapp('One two.\n\nThree four five', 20)).toEqual(['One two.', 'Three four five']);
    expect(splitForWhatsapp('', 10)).toEqual([]);
  });
});
