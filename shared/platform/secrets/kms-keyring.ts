import { DecryptCommand, GenerateDataKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import type { Config } from '../config.ts';
import type { Keyring } from './envelope-cipher.ts';
import { traceAwsClient } from '../tracing.ts';

/**
 * Data keys from AWS KMS: `GenerateDataKey` (AES_256) under the customer-managed key `keyId` for each seal,
 * `Decrypt` to unwrap, both with the context as EncryptionContext (which CloudTrail records with each call).
 */
export function kmsKeyring(client: KMSClient, keyId: string): Keyring {
  return {
    async generateDataKey(context) {
      const result = await client.send(new GenerateDataKeyCommand({ KeyId: keyId, KeySpec: 'AES_256', EncryptionContext: context }));
      if (!result.Plaintext || !result.CiphertextBlob || !result.KeyId) throw new Error(`KMS returned no data key for ${keyId}.`);
      return { keyId: result.KeyId, plaintext: result.Plaintext, wrapped: result.CiphertextBlob };
    },
    async unwrapDataKey(wrapped, wrappedUnder, context) {
      // Naming the key makes KMS refuse a blob wrapped under any other key, rather than use whichever key it names.
      const result = await client.send(new DecryptCommand({ CiphertextBlob: wrapped, KeyId: wrappedUnder, EncryptionContext: context }));
      if (!result.Plaintext) throw new Error(`KMS returned no plaintext for a data key of ${wrappedUnder}.`);
      return result.Plaintext;
    },
  };
}

/** The client for the configured region; on a stand-in (tests), its endpoint and placeholder credentials. */
export const createKmsClient = (config: Pick<Config, 'AWS_REGION' | 'KMS_ENDPOINT'>): KMSClient =>
  traceAwsClient(
    new KMSClient({
      region: config.AWS_REGION,
      ...(config.KMS_ENDPOINT ? { endpoint: config.KMS_ENDPOINT, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
    }),
  );
