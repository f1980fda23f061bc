/**
 * Secret settings (OpenAI-compatible API key, Stripe's secret key and webhook secret): locally the variable itself,
 * on AWS the Secrets Manager secret its `_ARN` names, read through Powertools Parameters against a stand-in that
 * speaks Secrets Manager's wire protocol.
 */
import { createServer } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../shared/platform/config.ts';
import { secretCacheSeconds, secretSetting } from '../../shared/platform/secrets/secret-settings.ts';
import { closeServer, listenOnLoopback } from '../support/loopback-server.ts';
import { startSecretsManagerStandIn, type SecretsManagerStandIn } from '../support/secrets-manager-stand-in.ts';

let secretsManager: SecretsManagerStandIn;
beforeAll(async () => {
  secretsManager = await startSecretsManagerStandIn();
});
afterAll(() => secretsManager.close());
afterEach(() => vi.useRealTimers());

/** The configuration a function gets from the stack: the secret's ARN, never its value. */
const onAws = (arn: string) => parseConfig({ OPENAI_COMPATIBLE_API_KEY_ARN: arn, SECRETS_MANAGER_ENDPOINT: secretsManager.url });

describe('a secret setting', () => {
  it('is the variable itself where the environment holds it (the local runtime), with no Secrets Manager call', async () => {
    const reads = secretsManager.reads.length;
    expect(await secretSetting(parseConfig({ OPENAI_COMPATIBLE_API_KEY: 'sk-local' }), 'OPENAI_COMPATIBLE_API_KEY')).toBe('sk-local');
    expect(await secretSetting(parseConfig({}), 'OPENAI_COMPATIBLE_API_KEY')).toBeUndefined();
    expect(secretsManager.reads.length).toBe(reads);
  });

  it('is read from the secret its ARN names on first use, then from the cache until it is 5 minutes old, when a rotated value comes in', async () => {
    // Prepare
    const arn = secretsManager.createSecret('agent-platform/openai-key', 'sk-first\n');
    const config = onAws(arn);

    // Act
    const first = await secretSetting(config, 'OPENAI_COMPATIBLE_API_KEY');
    secretsManager.putSecretValue(arn, 'sk-rotated');
    const cached = await secretSetting(config, 'OPENAI_COMPATIBLE_API_KEY');
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + (secretCacheSeconds + 1) * 1000);
    const refreshed = await secretSetting(config, 'OPENAI_COMPATIBLE_API_KEY');

    // Assess
    expect(first).toBe('sk-first');
    expect(cached).toBe('sk-first');
    expect(refreshed).toBe('sk-rotated');
    expect(secretsManager.reads.filter((id) => id === arn)).toHaveLength(2);
  });

  it('is unset while the secret the stack created has no value yet, and set as soon as one is put', async () => {
    const arn = secretsManager.createSecret('agent-platform/stripe-webhook');
    const config = parseConfig({ STRIPE_WEBHOOK_SECRET_ARN: arn, SECRETS_MANAGER_ENDPOINT: secretsManager.url });

    const empty = await secretSetting(config, 'STRIPE_WEBHOOK_SECRET');
    secretsManager.putSecretValue(arn, 'whsec_now');
    const filled = await secretSetting(config, 'STRIPE_WEBHOOK_SECRET');

    expect(empty).toBeUndefined();
    expect(filled).toBe('whsec_now');
  });

  it('fails loudly when Secrets Manager refuses the read', async () => {
    const arn = secretsManager.createSecret('agent-platform/elsewhere', 'sk');
    // Signed for another region than the service's: it refuses the credential scope.
    const config = parseConfig({ AWS_REGION: 'eu-west-1', OPENAI_COMPATIBLE_API_KEY_ARN: arn, SECRETS_MANAGER_ENDPOINT: secretsManager.url });

    await expect(secretSetting(config, 'OPENAI_COMPATIBLE_API_KEY')).rejects.toThrow('The security token included in the request is invalid.');
  });

  it("reads Secrets Manager's documented GetSecretValue response", async () => {
    // The "Retrieve the encrypted secret value of a secret" example of the API reference
    // (https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_GetSecretValue.html#API_GetSecretValue_Examples),
    // answered as is to whatever is asked.
    const documented = {
      ARN: 'arn:aws:secretsmanager:us-west-2:123456789012:secret:MyTestSecret-a1b2c3',
      CreatedDate: 1523477145.713,
      Name: 'MyTestSecret',
      SecretString: '{"username":"diegor","password":"i29wwX!%9wFV"}',
      VersionId: 'a1b2c3d4-5678-90ab-cdef-EXAMPLEaaaaa',
      VersionStages: ['AWSCURRENT'],
    };
    const server = createServer((request, response) => {
      request.resume().on('end', () => {
        response.writeHead(200, { 'content-type': 'application/x-amz-json-1.1', 'x-amzn-requestid': crypto.randomUUID() });
        response.end(JSON.stringify(documented));
      });
    });
    const port = await listenOnLoopback(server);
    try {
      const config = parseConfig({ STRIPE_SECRET_KEY_ARN: documented.ARN, SECRETS_MANAGER_ENDPOINT: `http://127.0.0.1:${port}` });
      expect(await secretSetting(config, 'STRIPE_SECRET_KEY')).toBe(documented.SecretString);
    } finally {
      await closeServer(server);
    }
  });
});

describe('the configuration of a secret setting', () => {
  it('takes the value or the ARN of its secret, not both, and only a Secrets Manager ARN', () => {
    expect(() => parseConfig({ STRIPE_SECRET_KEY: 'sk_test', STRIPE_SECRET_KEY_ARN: 'arn:aws:secretsmanager:us-east-1:111122223333:secret:stripe-AbCdEf' })).toThrow(
      'set STRIPE_SECRET_KEY or STRIPE_SECRET_KEY_ARN, not both',
    );
    expect(() => parseConfig({ STRIPE_WEBHOOK_SECRET_ARN: 'arn:aws:ssm:us-east-1:111122223333:parameter/stripe' })).toThrow(
      'STRIPE_WEBHOOK_SECRET_ARN: must be a Secrets Manager secret ARN',
    );
  });
});
