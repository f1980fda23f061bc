import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { closeServer, listenOnLoopback } from './loopback-server.ts';

export interface KmsStandIn {
  /** For the SDK's `endpoint` (KMS_ENDPOINT). */
  url: string;
  /** The ARN of its one symmetric key. */
  keyArn: string;
  /** The operations called so far, in order (`GenerateDataKey`, `Decrypt`). */
  calls: string[];
  close(): Promise<void>;
}

/**
 * A stand-in for AWS KMS that speaks its JSON wire protocol (POST, `X-Amz-Target: TrentService.<Operation>`,
 * `application/x-amz-json-1.1`, binary fields as base64, errors as `{__type, message}` with status 400), for the
 * two operations secrets at rest use. Like KMS, it binds each data key to its EncryptionContext: a Decrypt with
 * another context, or naming another key, fails. Its key material is in memory only.
 */
export async function startKmsStandIn(): Promise<KmsStandIn> {
  const keyId = crypto.randomUUID();
  const keyArn = `arn:aws:kms:us-east-1:111122223333:key/${keyId}`;
  const keyMaterial = randomBytes(32);
  const calls: string[] = [];
  // Sorted, as the context is a map whose order the client does not promise.
  const additionalData = (context: Record<string, string> = {}) =>
    Buffer.from(JSON.stringify(Object.entries(context).sort(([a], [b]) => a.localeCompare(b))));
  const knowsKey = (id: unknown) => id === keyArn || id === keyId;

  const operations: Record<string, (input: Record<string, any>) => Record<string, unknown>> = {
    GenerateDataKey(input) {
      if (!knowsKey(input.KeyId)) throw fault('NotFoundException', `Key '${input.KeyId}' does not exist`);
      if (input.KeySpec !== 'AES_256') throw fault('ValidationException', 'this stand-in generates AES_256 data keys only');
      const plaintext = randomBytes(32);
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', keyMaterial, iv).setAAD(additionalData(input.EncryptionContext));
      const sealed = Buffer.concat([cipher.update(plaintext), cipher.final()]);
      // The blob names its key, as a real KMS ciphertext blob does.
      const blob = Buffer.concat([Buffer.from(keyId), iv, cipher.getAuthTag(), sealed]);
      return { KeyId: keyArn, Plaintext: plaintext.toString('base64'), CiphertextBlob: blob.toString('base64') };
    },
    Decrypt(input) {
      const blob = Buffer.from(String(input.CiphertextBlob), 'base64');
      const blobKeyId = blob.subarray(0, keyId.length).toString();
      if (blobKeyId !== keyId) throw fault('InvalidCiphertextException', 'The ciphertext was not made by this KMS');
      if (input.KeyId !== undefined && !knowsKey(input.KeyId)) throw fault('IncorrectKeyException', 'The key ID in the request does not identify the key that encrypted the ciphertext');
      const rest = blob.subarray(keyId.length);
      try {
        const decipher = createDecipheriv('aes-256-gcm', keyMaterial, rest.subarray(0, 12), { authTagLength: 16 }).setAAD(additionalData(input.EncryptionContext));
        decipher.setAuthTag(rest.subarray(12, 28));
        const plaintext = Buffer.concat([decipher.update(rest.subarray(28)), decipher.final()]);
        return { KeyId: keyArn, Plaintext: plaintext.toString('base64'), EncryptionAlgorithm: 'SYMMETRIC_DEFAULT' };
      } catch {
        throw fault('InvalidCiphertextException', '');
      }
    },
  };

  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      const reply = (status: number, payload: unknown) => {
        response.writeHead(status, { 'content-type': 'application/x-amz-json-1.1', 'x-amzn-requestid': crypto.randomUUID() });
        response.end(JSON.stringify(payload));
      };
      const target = String(request.headers['x-amz-target'] ?? '');
      const operation = operations[target.replace(/^TrentService\./, '')];
      if (request.method !== 'POST' || !target.startsWith('TrentService.') || !operation) {
        return reply(400, { __type: 'UnknownOperationException', message: `Unknown operation ${target}` });
      }
      if (request.headers['content-type'] !== 'application/x-amz-json-1.1') {
        return reply(400, { __type: 'ValidationException', message: `Unexpected content type ${request.headers['content-type']}` });
      }
      calls.push(target.slice('TrentService.'.length));
      try {
        reply(200, operation(JSON.parse(body) as Record<string, unknown>));
      } catch (error) {
        const { type, message } = error as { type: string; message: string };
        reply(400, { __type: type, message });
      }
    });
  });
  const port = await listenOnLoopback(server);
  return { url: `http://127.0.0.1:${port}`, keyArn, calls, close: () => closeServer(server) };
}

function fault(type: string, message: string): Error & { type: string } {
  return Object.assign(new Error(message), { type });
}
