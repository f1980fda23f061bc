import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const ivBytes = 12;
const tagBytes = 16;

/** AES-256-GCM with a fresh 96-bit IV: `iv`, `tag` (128 bits) and `ciphertext`, all three needed to decrypt. */
export function gcmEncrypt(key: Uint8Array, plaintext: Uint8Array, additionalData: Uint8Array): { iv: Buffer; tag: Buffer; ciphertext: Buffer } {
  const iv = randomBytes(ivBytes);
  const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(additionalData);
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return { iv, tag: cipher.getAuthTag(), ciphertext };
}

/** The plaintext, or a throw when anything (key, IV, tag, ciphertext, additional data) differs from the encryption's. */
export function gcmDecrypt(key: Uint8Array, sealed: { iv: Uint8Array; tag: Uint8Array; ciphertext: Uint8Array }, additionalData: Uint8Array): Buffer {
  // A fixed tag length: GCM would otherwise accept a truncated tag, which is easier to forge.
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.iv, { authTagLength: tagBytes }).setAAD(additionalData).setAuthTag(sealed.tag);
  return Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]);
}

/** IV, tag and ciphertext as one buffer, in that order (the local keyring's wrapped data keys). */
export const packGcm = (sealed: { iv: Buffer; tag: Buffer; ciphertext: Buffer }): Buffer => Buffer.concat([sealed.iv, sealed.tag, sealed.ciphertext]);

export const unpackGcm = (packed: Uint8Array): { iv: Buffer; tag: Buffer; ciphertext: Buffer } => {
  const bytes = Buffer.from(packed);
  return { iv: bytes.subarray(0, ivBytes), tag: bytes.subarray(ivBytes, ivBytes + tagBytes), ciphertext: bytes.subarray(ivBytes + tagBytes) };
};
