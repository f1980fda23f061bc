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

/**
 * Constant-time check of a request's `X-Twilio-Signature`, over the URL without its port and with the scheme's
 * default port (`https://host/…` and `https://host:443/…`): Twilio signs one or the other, and its own validator
 * (twilio-node's `validateRequest`) accepts both.
 */
export function isValidTwilioSignature(
  authToken: string,
  signature: string | undefined,
  url: string,
  params: Readonly<Record<string, string>> = {},
): boolean {
  if (!signature) return false;
  const given = Buffer.from(signature);
  return [withoutPort(url), withDefaultPort(url)].some((candidate) => {
    const expected = Buffer.from(twilioSignature(authToken, candidate, params));
    return expected.length === given.length && timingSafeEqual(expected, given);
  });
}

/** `scheme://userinfo@host:port` and the rest, split without normalising anything (the signed characters stay). */
function splitAuthority(url: string): { scheme: string; userInfo: string; host: string; port: string; rest: string } | undefined {
  const match = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)/i.exec(url);
  if (!match) return undefined;
  const [prefix, scheme, authority] = match as unknown as [string, string, string];
  const userInfoEnd = authority.lastIndexOf('@');
  const hostAndPort = authority.slice(userInfoEnd + 1);
  // In an IPv6 literal the port's colon comes after the closing bracket.
  const portStart = hostAndPort.indexOf(':', hostAndPort.lastIndexOf(']') + 1);
  return {
    scheme,
    userInfo: authority.slice(0, userInfoEnd + 1),
    host: portStart === -1 ? hostAndPort : hostAndPort.slice(0, portStart),
    port: portStart === -1 ? '' : hostAndPort.slice(portStart),
    rest: url.slice(prefix.length),
  };
}

function withoutPort(url: string): string {
  const parts = splitAuthority(url);
  return parts ? parts.scheme + parts.userInfo + parts.host + parts.rest : url;
}

function withDefaultPort(url: string): string {
  const parts = splitAuthority(url);
  if (!parts || parts.port) return url;
  return parts.scheme + parts.userInfo + parts.host + (parts.scheme.toLowerCase() === 'https://' ? ':443' : ':80') + parts.rest;
}
