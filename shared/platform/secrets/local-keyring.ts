import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { gcmDecrypt, gcmEncrypt, packGcm, unpackGcm } from './aes-gcm.ts';
import { additionalData, type Keyring } from './envelope-cipher.ts';

export const localKeyId = 'local';

/**
 * The keyring of the local runtime: a 256-bit key read from a file (base64), which wraps each data key with
 * AES-256-GCM, the context as additional data. It plays the part KMS plays on AWS, so sealing runs the same code.
 */
export function localKeyring(key: Uint8Array): Keyring {
  if (key.length !== 32) throw new Error(`The local secrets key must be 32 bytes; it is ${key.length}.`);
  return {
    async generateDataKey(context) {
      const plaintext = randomBytes(32);
      return { keyId: localKeyId, plaintext, wrapped: packGcm(gcmEncrypt(key, plaintext, additionalData(context))) };
    },
    async unwrapDataKey(wrapped, keyId, context) {
      if (keyId !== localKeyId) throw new Error(`Sealed under ${keyId}, not under the local key file.`);
      return gcmDecrypt(key, unpackGcm(wrapped), additionalData(context));
    },
  };
}

/** The key of a local key file (base64 of 32 bytes, as `npm start` writes it). */
export async function readLocalKey(file: string): Promise<Uint8Array> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new Error(`Cannot read the secrets key file ${file} (SECRETS_KEY_FILE); npm start creates one in DATA_DIR.`, { cause: error });
  }
  return Buffer.from(text.trim(), 'base64');
}
