import type { Config } from '../config.ts';
import type { SecretCipher } from '../ports.ts';
import { EnvelopeCipher } from './envelope-cipher.ts';

type SecretsConfig = Pick<Config, 'AWS_REGION' | 'KMS_ENDPOINT' | 'SECRETS_KMS_KEY_ID' | 'SECRETS_KEY_FILE'>;

/**
 * The cipher the configuration asks for: KMS with SECRETS_KMS_KEY_ID, the key file SECRETS_KEY_FILE otherwise.
 * Built on first use, so a function that never seals or opens a secret needs neither (nor loads the KMS client);
 * one that does fails then, saying which variable to set.
 */
export function secretCipherFromConfig(config: SecretsConfig): SecretCipher {
  let cipher: Promise<SecretCipher> | undefined;
  const built = () => (cipher ??= buildCipher(config));
  return {
    seal: async (plaintext, context) => (await built()).seal(plaintext, context),
    open: async (stored, context) => (await built()).open(stored, context),
  };
}

async function buildCipher(config: SecretsConfig): Promise<SecretCipher> {
  if (config.SECRETS_KMS_KEY_ID) {
    const { createKmsClient, kmsKeyring } = await import('./kms-keyring.ts');
    return new EnvelopeCipher(kmsKeyring(createKmsClient(config), config.SECRETS_KMS_KEY_ID));
  }
  if (config.SECRETS_KEY_FILE) {
    const { localKeyring, readLocalKey } = await import('./local-keyring.ts');
    return new EnvelopeCipher(localKeyring(await readLocalKey(config.SECRETS_KEY_FILE)));
  }
  throw new Error(
    'No key for secrets at rest: set SECRETS_KMS_KEY_ID (the KMS key; the stack sets it) or SECRETS_KEY_FILE (a local key file; npm start sets it).',
  );
}
