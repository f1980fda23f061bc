import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * `X-Twilio-Signature`: base64 of HMAC-SHA1, keyed with the account's auth token, over the full URL Twilio
 * requested followed by each POST parameter's name and value, sorted by name (a WebSocket upgrade or a GET has
 * none). The same function signs (the local simulator) and verifies (the platform).
 */
export function twilioSignature(authToken: string, url: string, params: Readonly<Record<string, string>> = {}): string {
  const data = Object.keys(params)
    .sort()
    .reduce((signed, name) => signed + name + params[name], url);
  return createHmac('sha1', authToken).update(data, 'utf8').digest('base64');
}

/** Constant-time check of a request's `X-Twilio-Signature`. */
export function isValidTwilioSignature(
  authToken: string,
  signature: string | undefined,
  url: string,
  params: Readonly<Record<string, string>> = {},
): boolean {
  if (!signature) return false;
  const expected = Buffer.from(twilioSignature(authToken, url, params));
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
