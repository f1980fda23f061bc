import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * `X-Hub-Signature-256`: `sha256=` and the hex HMAC-SHA256 of the raw request body, keyed with the Meta app's
 * secret. The same function signs (the local simulator) and verifies (the platform).
 */
export function metaSignature(appSecret: string, rawBody: string): string {
  return `sha256=${createHmac('sha256', appSecret).update(rawBody, 'utf8').digest('hex')}`;
}

/** Constant-time check of a notification's `X-Hub-Signature-256` over its body exactly as sent. */
export function isValidMetaSignature(appSecret: string, signature: string | undefined, rawBody: string): boolean {
  if (!signature) return false;
  const expected = Buffer.from(metaSignature(appSecret, rawBody));
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
