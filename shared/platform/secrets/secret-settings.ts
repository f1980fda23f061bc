import type { SecretsProvider } from '@aws-lambda-powertools/parameters/secrets';
import type { Config, SecretSettingName } from '../config.ts';
import { logger } from '../logger.ts';
import { traceAwsClient } from '../tracing.ts';

type SecretSettingsConfig = Pick<Config, 'AWS_REGION' | 'SECRETS_MANAGER_ENDPOINT'> & Partial<Pick<Config, SecretSettingName | `${SecretSettingName}_ARN`>>;

/**
 * How long a value read from Secrets Manager is used before it is read again: a rotated key reaches every execution
 * environment within this, at one GetSecretValue per secret and environment per 5 minutes.
 */
export const secretCacheSeconds = 300;

/** One provider (a Secrets Manager client and its cache) per region and endpoint: on AWS, one per process. */
const providers = new Map<string, Promise<SecretsProvider>>();

/** The configured region; on a stand-in (tests), its endpoint and placeholder credentials. */
const secretsManagerClientConfig = (config: SecretSettingsConfig) => ({
  region: config.AWS_REGION,
  ...(config.SECRETS_MANAGER_ENDPOINT ? { endpoint: config.SECRETS_MANAGER_ENDPOINT, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
});

/**
 * A secret setting's value, one code path for both places it comes from: the variable itself when set (the local
 * runtime and tests read their environment), else the Secrets Manager secret `<NAME>_ARN` names (what the stack
 * gives), read with Powertools Parameters on first use in the execution environment and cached for
 * `secretCacheSeconds`. Undefined when neither is set, or when the secret has no value yet (the stack creates it
 * empty): the feature then behaves as unconfigured. Any other failure (no right to read it, Secrets Manager
 * unreachable) throws.
 */
export async function secretSetting(config: SecretSettingsConfig, name: SecretSettingName): Promise<string | undefined> {
  const value = config[name];
  if (value) return value;
  const arn = config[`${name}_ARN`];
  if (!arn) return undefined;
  // Loaded on first use: functions that never read a secret never evaluate the Secrets Manager client.
  const clientConfig = secretsManagerClientConfig(config);
  const providerKey = `${clientConfig.region}\n${config.SECRETS_MANAGER_ENDPOINT ?? ''}`;
  let provider = providers.get(providerKey);
  if (!provider) {
    provider = import('@aws-lambda-powertools/parameters/secrets').then(({ SecretsProvider }) => {
      const created = new SecretsProvider({ clientConfig });
      // Its GetSecretValue calls show in the request's trace (on the functions the stack traces).
      traceAwsClient(created.client);
      return created;
    });
    providers.set(providerKey, provider);
  }
  const { ParameterNotFoundError } = await import('@aws-lambda-powertools/parameters/errors');
  try {
    const secret = await (await provider).get(arn, { maxAge: secretCacheSeconds, throwOnMissing: true });
    if (typeof secret !== 'string') throw new Error(`The secret ${arn} (${name}) holds binary data; put the value as a SecretString`);
    // A value pasted with its line end is still the key.
    return secret.trim() || undefined;
  } catch (error) {
    if (!(error instanceof ParameterNotFoundError)) throw error;
    logger.warn('a secret setting has no value yet: put one in its secret', { setting: name, secretArn: arn });
    return undefined;
  }
}
