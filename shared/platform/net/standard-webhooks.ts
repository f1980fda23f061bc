import { createHmac, randomBytes } from 'node:crypto';

/**
 * Signing by the Standard Webhooks scheme (what Svix and others use), for every request we send to a customer's
 * endpoint: function tools and webhooks. Receivers verify with any Standard Webhooks library.
 */
export function generateSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * `webhook-id`, `webhook-timestamp` and `webhook-signature`: `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, one
 * per secret, space-separated, so that a receiver holding either secret of a rotation verifies the request.
 */
export function signatureHeaders(secrets: string | readonly string[], id: string, body: string, now = new Date()): Record<string, string> {
  const timestamp = String(Math.floor(now.getTime() / 1000));
  const signatures = (typeof secrets === 'string' ? [secrets] : secrets).map((secret) => {
    const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
    return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
  });
  return { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signatures.join(' ') };
}
