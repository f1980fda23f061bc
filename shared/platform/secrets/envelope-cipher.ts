import type { SecretCipher, SecretContext } from '../ports.ts';
import { gcmDecrypt, gcmEncrypt } from './aes-gcm.ts';

/**
 * A sealed secret that cannot be opened: altered, copied from another item or organization, or sealed under a key
 * this deployment cannot use. Not a domain error: the request or delivery fails with a 500.
 */
export class SecretUnreadableError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'SecretUnreadableError';
  }
}

/** Where data keys come from and go back to: KMS on AWS, the local key file on this machine. */
export interface Keyring {
  /** A fresh 256-bit data key, in the clear and wrapped with `context` under the key `keyId` (a KMS key ARN, or `local`). */
  generateDataKey(context: Record<string, string>): Promise<{ keyId: string; plaintext: Uint8Array; wrapped: Uint8Array }>;
  /** Unwraps a data key wrapped under `keyId` with the same `context`; throws otherwise. */
  unwrapDataKey(wrapped: Uint8Array, keyId: string, context: Record<string, string>): Promise<Uint8Array>;
}

const prefix = 'sealed:v1:';

/** Whether a stored secret is sealed; one without the prefix was stored in the clear before sealing began. */
export const isSealed = (stored: string): boolean => stored.startsWith(prefix);

/** The context as KMS's EncryptionContext and, serialized in a fixed order, as the AES-GCM additional data. */
const contextMap = (context: SecretContext): Record<string, string> => ({ orgId: context.orgId, purpose: context.purpose, id: context.id });
/** The context as the additional data AES-GCM authenticates (the data key's wrapping locally, the secret's everywhere). */
export const additionalData = (context: Record<string, string>): Buffer => Buffer.from(JSON.stringify(context));

const b64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64url');

/** How long and how many unwrapped data keys a process keeps, so signing does not call KMS for every attempt. */
export const dataKeyCache = { ttlMs: 5 * 60 * 1000, maxEntries: 1000 };

/**
 * Envelope encryption: every seal asks the keyring for a new data key, encrypts the secret with it (AES-256-GCM,
 * the context as additional data) and stores the wrapped data key beside the ciphertext:
 * `sealed:v1:<keyId>.<wrappedKey>.<iv>.<tag>.<ciphertext>`, each part base64url. The context binds the value to
 * its item twice: KMS (or the local key) unwraps the data key only with it, and GCM authenticates it.
 *
 * Unwrapped data keys are kept in memory for {@link dataKeyCache}.ttlMs (at most maxEntries of them), keyed by the
 * wrapped key and the context.
 */
export class EnvelopeCipher implements SecretCipher {
  private readonly keyring: Keyring;
  private readonly now: () => number;
  private readonly dataKeys = new Map<string, { key: Uint8Array; until: number }>();

  constructor(keyring: Keyring, now: () => number = Date.now) {
    this.keyring = keyring;
    this.now = now;
  }

  async seal(plaintext: string, context: SecretContext): Promise<string> {
    const encryptionContext = contextMap(context);
    const dataKey = await this.keyring.generateDataKey(encryptionContext);
    const { iv, tag, ciphertext } = gcmEncrypt(dataKey.plaintext, Buffer.from(plaintext, 'utf8'), additionalData(encryptionContext));
    const parts = [Buffer.from(dataKey.keyId), dataKey.wrapped, iv, tag, ciphertext];
    return prefix + parts.map(b64).join('.');
  }

  async open(stored: string, context: SecretContext): Promise<string> {
    if (!isSealed(stored)) return stored;
    const parts = stored.slice(prefix.length).split('.').map((part) => Buffer.from(part, 'base64url'));
    if (parts.length !== 5) throw new SecretUnreadableError(`A sealed ${context.purpose} of ${context.id} is malformed.`);
    const [keyId, wrapped, iv, tag, ciphertext] = parts as [Buffer, Buffer, Buffer, Buffer, Buffer];
    const encryptionContext = contextMap(context);
    try {
      const dataKey = await this.dataKey(keyId.toString(), wrapped, encryptionContext);
      return gcmDecrypt(dataKey, { iv, tag, ciphertext }, additionalData(encryptionContext)).toString('utf8');
    } catch (error) {
      throw new SecretUnreadableError(`The sealed ${context.purpose} of ${context.id} (org ${context.orgId}) cannot be opened.`, { cause: error });
    }
  }

  private async dataKey(keyId: string, wrapped: Buffer, context: Record<string, string>): Promise<Uint8Array> {
    const cacheKey = `${keyId}.${b64(wrapped)}.${JSON.stringify(context)}`;
    const now = this.now();
    const cached = this.dataKeys.get(cacheKey);
    if (cached && cached.until > now) return cached.key;
    const key = await this.keyring.unwrapDataKey(wrapped, keyId, context);
    this.dataKeys.delete(cacheKey);
    // Map order is insertion order: the first entry is the oldest, dropped to stay within the bound.
    if (this.dataKeys.size >= dataKeyCache.maxEntries) this.dataKeys.delete(this.dataKeys.keys().next().value as string);
    this.dataKeys.set(cacheKey, { key, until: now + dataKeyCache.ttlMs });
    return key;
  }
}
