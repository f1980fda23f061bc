import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { closeServer, listenOnLoopback } from './loopback-server.ts';

export interface SecretsManagerStandIn {
  /** For `AWS_ENDPOINT_URL_SECRETS_MANAGER`, which the SDK's Secrets Manager client honours. */
  url: string;
  /** Creates a secret, with no value (as the stack creates them) unless one is given; returns its complete ARN. */
  createSecret(name: string, value?: string): string;
  /** A new AWSCURRENT version, as `aws secretsmanager put-secret-value` makes. */
  putSecretValue(secretId: string, value: string): void;
  /** The SecretId of each GetSecretValue received, in order. */
  reads: string[];
  close(): Promise<void>;
}

interface StoredSecret {
  arn: string;
  name: string;
  createdDate: number;
  current?: { versionId: string; value: string };
}

/**
 * A stand-in for AWS Secrets Manager's GetSecretValue, speaking its JSON wire protocol (POST /, `X-Amz-Target:
 * secretsmanager.GetSecretValue`, `application/x-amz-json-1.1`, errors as `{__type, Message}` with status 400;
 * API reference: https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_GetSecretValue.html). No more
 * forgiving than the service: a request must be SigV4-signed for secretsmanager in the client's region, name an
 * existing secret by name or complete ARN, and a secret with no value yet (CreateSecret without SecretString, as
 * the stack makes them) answers ResourceNotFoundException for the AWSCURRENT stage, as the service does.
 */
export async function startSecretsManagerStandIn(region = 'us-east-1'): Promise<SecretsManagerStandIn> {
  const secrets = new Map<string, StoredSecret>();
  const reads: string[] = [];
  const find = (secretId: string) => [...secrets.values()].find((secret) => secret.arn === secretId || secret.name === secretId);

  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      const reply = (status: number, payload: unknown) => {
        response.writeHead(status, { 'content-type': 'application/x-amz-json-1.1', 'x-amzn-requestid': crypto.randomUUID() });
        response.end(JSON.stringify(payload));
      };
      const fail = (type: string, message: string) => reply(400, { __type: type, Message: message });
      const authorization = String(request.headers.authorization ?? '');
      if (!new RegExp(`^AWS4-HMAC-SHA256 Credential=[^/]+/\\d{8}/${region}/secretsmanager/aws4_request, SignedHeaders=[^,]+, Signature=[0-9a-f]{64}$`).test(authorization)) {
        return fail('UnrecognizedClientException', 'The security token included in the request is invalid.');
      }
      if (request.method !== 'POST' || request.headers['x-amz-target'] !== 'secretsmanager.GetSecretValue') {
        return fail('UnknownOperationException', `Unknown operation ${String(request.headers['x-amz-target'])}`);
      }
      if (request.headers['content-type'] !== 'application/x-amz-json-1.1') return fail('ValidationException', 'Unexpected content type');
      const input = JSON.parse(body) as { SecretId?: string; VersionStage?: string; VersionId?: string };
      if (!input.SecretId) return fail('InvalidParameterException', 'Invalid SecretId: must be provided.');
      reads.push(input.SecretId);
      const secret = find(input.SecretId);
      if (!secret) return fail('ResourceNotFoundException', "Secrets Manager can't find the specified secret.");
      const stage = input.VersionStage ?? 'AWSCURRENT';
      if (stage !== 'AWSCURRENT' || !secret.current || (input.VersionId && input.VersionId !== secret.current.versionId)) {
        return fail('ResourceNotFoundException', `Secrets Manager can't find the specified secret value for staging label: ${stage}`);
      }
      reply(200, {
        ARN: secret.arn,
        CreatedDate: secret.createdDate,
        Name: secret.name,
        SecretString: secret.current.value,
        VersionId: secret.current.versionId,
        VersionStages: ['AWSCURRENT'],
      });
    });
  });
  const putSecretValue = (secretId: string, value: string) => {
    const secret = find(secretId);
    if (!secret) throw new Error(`no secret ${secretId}`);
    secret.current = { versionId: crypto.randomUUID(), value };
  };
  const port = await listenOnLoopback(server);
  return {
    url: `http://127.0.0.1:${port}`,
    createSecret(name, value) {
      // A complete ARN ends with a hyphen and six random characters.
      const arn = `arn:aws:secretsmanager:${region}:111122223333:secret:${name}-${randomBytes(3).toString('hex')}`;
      secrets.set(arn, { arn, name, createdDate: Date.now() / 1000 });
      if (value !== undefined) putSecretValue(arn, value);
      return arn;
    },
    putSecretValue,
    reads,
    close: () => closeServer(server),
  };
}
