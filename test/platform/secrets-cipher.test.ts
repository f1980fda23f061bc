import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureSecretsKeyFile } from '../../infra/local/environment.ts';
import { parseConfig } from '../../shared/platform/config.ts';
import type { SecretCipher, SecretContext } from '../../shared/platform/ports.ts';
import { dataKeyCache, EnvelopeCipher, SecretUnreadableError, type Keyring } from '../../shared/platform/secrets/envelope-cipher.ts';
import { createKmsClient, kmsKeyring } from '../../shared/platform/secrets/kms-keyring.ts';
import { localKeyring } from '../../shared/platform/secrets/local-keyring.ts';
import { secretCipherFromConfig } from '../../shared/platform/secrets/secret-cipher.ts';
import { startKmsStandIn, type KmsStandIn } from '../support/kms-stand-in.ts';

let kms: KmsStandIn;
beforeAll(async () => {
  kms = await startKmsStandIn();
});
afterAll(() => kms.close());

const context: SecretContext = { orgId: 'org-a', purpose: 'webhook-secret', id: '7b0c2a4e-1f7d-4a55-9a1e-0c4f3d2b1a00' };
const kmsCipher = () => new EnvelopeCipher(kmsKeyring(createKmsClient({ AWS_REGION: 'us-east-1', KMS_ENDPOINT: kms.url }), kms.keyArn));

/** The sealed value with one byte of its `index`th part changed. */
function tampered(sealed: string, index: number): string {
  const parts = sealed.slice('sealed:v1:'.length).split('.');
  const bytes = Buffer.from(parts[index] as string, 'base64url');
  bytes[bytes.length - 1] = (bytes[bytes.length - 1] as number) ^ 0x01;
  parts[index] = bytes.toString('base64url');
  return `sealed:v1:${parts.join('.')}`;
}

describe.each([
  ['the local key file', () => new EnvelopeCipher(localKeyring(randomBytes(32)))],
  ['KMS (its wire protocol, on a stand-in)', kmsCipher],
] as const)('EnvelopeCipher with %s', (_name, makeCipher: () => SecretCipher) => {
  it('opens what it sealed, for any string, and the sealed value never shows it', async () => {
    const cipher = makeCipher();
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'grapheme', maxLength: 200 }), async (secret) => {
        const sealed = await cipher.seal(secret, context);
        expect(sealed).toMatch(/^sealed:v1:[\w-]+(\.[\w-]*){4}$/);
        if (secret.length >= 4) expect(sealed).not.toContain(secret);
        expect(await cipher.open(sealed, context)).toBe(secret);
      }),
      { numRuns: 50 },
    );
  });

  it('seals the same secret differently every time (a data key and an IV of its own)', async () => {
    const cipher = makeCipher();
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    expect(await cipher.seal(secret, context)).not.toBe(await cipher.seal(secret, context));
  });

  it.each([
    ['another organization', { ...context, orgId: 'org-b' }],
    ['another item', { ...context, id: '00000000-0000-4000-8000-000000000000' }],
    ['another purpose', { ...context, purpose: 'function-tool-secret' }],
  ] as const)('refuses to open it under %s', async (_what, other: SecretContext) => {
    const cipher = makeCipher();
    const sealed = await cipher.seal('whsec_c2VjcmV0', context);
    await expect(cipher.open(sealed, other)).rejects.toThrow(SecretUnreadableError);
  });

  it.each([
    ['the wrapped data key', 1],
    ['the IV', 2],
    ['the tag', 3],
    ['the ciphertext', 4],
  ])('refuses to open it when %s was altered', async (_what, index) => {
    const cipher = makeCipher();
    const sealed = await cipher.seal('whsec_c2VjcmV0', context);
    await expect(cipher.open(tampered(sealed, index), context)).rejects.toThrow(SecretUnreadableError);
  });

  it('returns a value stored before sealing began (no `sealed:` prefix) as it is', async () => {
    expect(await makeCipher().open('whsec_bGVnYWN5', context)).toBe('whsec_bGVnYWN5');
  });
});

describe('EnvelopeCipher with KMS', () => {
  it('names the key that wrapped the data key, and KMS refuses a blob another key wrapped', async () => {
    const sealed = await kmsCipher().seal('whsec_c2VjcmV0', context);
    expect(Buffer.from(sealed.slice('sealed:v1:'.length).split('.')[0] as string, 'base64url').toString()).toBe(kms.keyArn);
    const local = new EnvelopeCipher(localKeyring(randomBytes(32)));
    await expect(kmsCipher().open(await local.seal('whsec_c2VjcmV0', context), context)).rejects.toThrow(SecretUnreadableError);
  });

  it('calls Decrypt once per data key while it is cached, and again once the cache entry expired', async () => {
    let now = 1_000_000;
    const cipher = new EnvelopeCipher(kmsKeyring(createKmsClient({ AWS_REGION: 'us-east-1', KMS_ENDPOINT: kms.url }), kms.keyArn), () => now);
    const sealed = await cipher.seal('whsec_c2VjcmV0', context);
    const before = kms.calls.length;
    for (let attempt = 0; attempt < 5; attempt += 1) expect(await cipher.open(sealed, context)).toBe('whsec_c2VjcmV0');
    expect(kms.calls.slice(before)).toEqual(['Decrypt']);
    now += dataKeyCache.ttlMs + 1;
    await cipher.open(sealed, context);
    expect(kms.calls.slice(before)).toEqual(['Decrypt', 'Decrypt']);
  });
});

describe('the data key cache', () => {
  it('keeps at most maxEntries data keys, dropping the oldest', async () => {
    const inner = localKeyring(randomBytes(32));
    let unwraps = 0;
    const counting: Keyring = { ...inner, unwrapDataKey: (...args) => ((unwraps += 1), inner.unwrapDataKey(...args)) };
    const cipher = new EnvelopeCipher(counting);
    const sealed = await Promise.all(Array.from({ length: dataKeyCache.maxEntries + 1 }, (_, index) => cipher.seal(`secret-${index}`, context)));
    for (const value of sealed) await cipher.open(value, context);
    expect(unwraps).toBe(dataKeyCache.maxEntries + 1);
    await cipher.open(sealed.at(-1) as string, context);
    expect(unwraps).toBe(dataKeyCache.maxEntries + 1);
    // The first one was dropped to make room for the last.
    await cipher.open(sealed[0] as string, context);
    expect(unwraps).toBe(dataKeyCache.maxEntries + 2);
  });
});

describe('configuration', () => {
  it('asks for a key when a secret is sealed without SECRETS_KMS_KEY_ID or SECRETS_KEY_FILE', async () => {
    const cipher = secretCipherFromConfig(parseConfig({}));
    await expect(cipher.seal('whsec_c2VjcmV0', context)).rejects.toThrow(/set SECRETS_KMS_KEY_ID .* or SECRETS_KEY_FILE/);
  });

  it('refuses both a KMS key and a key file', () => {
    expect(() => parseConfig({ SECRETS_KMS_KEY_ID: kms.keyArn, SECRETS_KEY_FILE: '/tmp/secrets.key' })).toThrow(/not both/);
  });

  it('says which key file it cannot read', async () => {
    const cipher = secretCipherFromConfig(parseConfig({ SECRETS_KEY_FILE: '/nonexistent/secrets.key' }));
    await expect(cipher.seal('whsec_c2VjcmV0', context)).rejects.toThrow(/\/nonexistent\/secrets\.key \(SECRETS_KEY_FILE\)/);
  });
});

describe('ensureSecretsKeyFile', () => {
  it('creates a 256-bit key readable by its owner only, once, and keeps it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'secrets-key-test-'));
    try {
      const file = ensureSecretsKeyFile(join(dir, 'data', 'secrets.key'));
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const key = readFileSync(file, 'utf8');
      expect(Buffer.from(key.trim(), 'base64')).toHaveLength(32);
      expect(ensureSecretsKeyFile(file)).toBe(file);
      expect(readFileSync(file, 'utf8')).toBe(key);
      const cipher = secretCipherFromConfig(parseConfig({ SECRETS_KEY_FILE: file }));
      expect(await cipher.open(await cipher.seal('whsec_c2VjcmV0', context), context)).toBe('whsec_c2VjcmV0');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
