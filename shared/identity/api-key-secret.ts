import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const keyPrefix = 'apk_';

/** A new key: `apk_` and 32 base64url characters (192 random bits). Only its hash is ever stored. */
export function generateApiKey(): string {
  return keyPrefix + randomBytes(24).toString('base64url');
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** The readable start of a key, shown in listings so people can tell keys apart. */
export function displayPrefix(key: string): string {
  return key.slice(0, keyPrefix.length + 6);
}

export function hashesEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && timingSafeEqual(left, right);
}
