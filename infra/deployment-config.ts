import { readFileSync } from 'node:fs';
import * as z from 'zod';
import { planSchema } from '../shared/billing/billing-schemas.ts';
import { createModelCatalog, modelId } from '../shared/models/model-catalog.ts';
import { parseConfig, secretSettings, settingSchema, settingSources, type SecretSettingName, type SettingName } from '../shared/platform/config.ts';

/**
 * The deployment configuration: one JSON file per deployment, named on the command line
 * (`npx cdk deploy -c config=deploy/production.json`), checked here before anything is synthesized. It holds what
 * differs between deployments; secrets are never in it, only the ARNs of secrets that already exist (docs/deploy.md).
 */

/** The retention periods CloudWatch Logs accepts, in days. */
export const logRetentionPeriods = [1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653] as const;

/**
 * The geographies of Bedrock's cross-region inference profiles (`us.anthropic.claude-…`): a model id with one of these
 * prefixes names a profile, which routes to the model in several regions.
 */
export const inferenceProfileGeographies = ['us', 'us-gov', 'eu', 'apac', 'jp', 'au', 'ca', 'global'] as const;

const bedrockModelId = z
  .string()
  .regex(/^[a-z0-9-]+\.[A-Za-z0-9][A-Za-z0-9.:_-]*$/, 'must be a Bedrock model id (anthropic.claude-…) or a cross-region inference profile id (us.anthropic.claude-…)');
const modelName = z.string().regex(/^[^,\s]+$/, 'must be a model name without commas or spaces');
const providerAndName = z.string().regex(/^[a-z-]+\/.+$/, 'must look like provider/name, e.g. bedrock/anthropic.claude-3-5-haiku-20241022-v1:0');
const arnOf = (service: string, resource: string, example: string) =>
  z.string().regex(new RegExp(`^arn:aws[a-z-]*:${service}:${resource}$`), `must be ${example}`);

const domainName = z.string().regex(/^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/, 'must be a lower-case domain name, e.g. api.example.com');

/** Fargate's CPU units, and the memory (MiB) it pairs with each (ECS developer guide, "Task CPU and memory"). */
const fargateCpuUnits = [256, 512, 1024, 2048, 4096] as const;
/** Every whole GiB from one size to another, in MiB. */
const gibibytes = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, index) => (from + index) * 1024);
const fargateMemoryMiB: Record<(typeof fargateCpuUnits)[number], number[]> = {
  256: [512, 1024, 2048],
  512: gibibytes(1, 4),
  1024: gibibytes(2, 8),
  2048: gibibytes(4, 16),
  4096: gibibytes(8, 30),
};

export const deploymentConfigSchema = z.strictObject({
  /** A custom domain for the base address, with its ACM certificate (in us-east-1, CloudFront's region). */
  domain: z
    .strictObject({
      name: domainName,
      certificateArn: arnOf('acm', 'us-east-1:\\d{12}:certificate/.+', 'an ACM certificate ARN in us-east-1 (CloudFront reads its certificates there)'),
    })
    .optional(),
  /** A WAFv2 web ACL of scope CLOUDFRONT for the distribution. */
  webAclArn: arnOf('wafv2', 'us-east-1:\\d{12}:global/webacl/.+', 'a WAFv2 web ACL ARN of scope CLOUDFRONT (arn:aws:wafv2:us-east-1:…:global/webacl/…)').optional(),
  /** How long the functions' and APIs' logs are kept. */
  logRetentionDays: z
    .number()
    .refine((days) => (logRetentionPeriods as readonly number[]).includes(days), `must be one of CloudWatch Logs' periods: ${logRetentionPeriods.join(', ')}`)
    .default(30),
  /** Who the operations alarms notify (docs/deploy.md#dashboards-and-alarms). */
  alarmEmail: z.email().optional(),
  models: z
    .strictObject({
      bedrock: z
        .strictObject({
          llms: z.array(bedrockModelId).default([]),
          embeddings: z.array(bedrockModelId).default([]),
          rerank: z.array(bedrockModelId).default([]),
          /** Speech-to-speech models the media worker converses with (Amazon Nova Sonic). */
          sts: z.array(z.enum(['amazon.nova-sonic-v1:0'])).default([]),
        })
        .default({ llms: [], embeddings: [], rerank: [], sts: [] }),
      /** Any Chat Completions endpoint (its Realtime API at `<baseUrl>/realtime`); its API key is the secret OPENAI_COMPATIBLE_API_KEY. */
      openAiCompatible: z
        .strictObject({
          baseUrl: z.url(),
          llms: z.array(modelName).default([]),
          embeddings: z.array(modelName).default([]),
          stt: z.array(modelName).default([]),
          realtime: z.array(modelName).default([]),
        })
        .optional(),
      /**
       * The speech models of calls through the media worker (docs/voice.md#speech-providers); each provider's key
       * is its secret `<PROVIDER>_API_KEY`, Amazon's models use the worker's role.
       */
      speech: z
        .strictObject({
          deepgram: z.strictObject({ stt: z.array(modelName).default([]) }).optional(),
          cartesia: z.strictObject({ tts: z.array(modelName).default([]) }).optional(),
          rime: z.strictObject({ tts: z.array(modelName).default([]) }).optional(),
          elevenlabs: z.strictObject({ tts: z.array(modelName).default([]) }).optional(),
          amazon: z.strictObject({ stt: z.array(modelName).default([]), tts: z.array(modelName).default([]) }).optional(),
        })
        .default({}),
      /** The LLMs (`provider/name`) that take images, such as a WhatsApp customer's photo. */
      imageInput: z.array(providerAndName).default([]),
      /** The LLM an agent gets when created without a model; the built-in model otherwise. */
      defaultLlm: providerAndName.optional(),
      /** The LLM that analyses ended sessions; each session's agent's own model otherwise. */
      analysisModel: providerAndName.optional(),
    })
    .default({ bedrock: { llms: [], embeddings: [], rerank: [], sts: [] }, speech: {}, imageInput: [] }),
  auth: z
    .strictObject({
      /** Bearer JWTs from the organizations' identity provider, beside API keys (docs/auth.md). */
      jwt: z
        .strictObject({
          jwksUrl: z.url(),
          issuer: z.string().min(1),
          audience: z.string().min(1),
          orgClaim: z.string().min(1).optional(),
          algorithms: z.array(z.string().min(1)).min(1).optional(),
          clockToleranceSeconds: z.number().optional(),
          maxLifetimeSeconds: z.number().optional(),
        })
        .optional(),
    })
    .default({}),
  /** Plans replacing or adding to the defaults (free, pro, enterprise), by id (docs/usage-and-billing.md#plans). */
  plans: z.record(planSchema.shape.id, planSchema.omit({ id: true })).optional(),
  billing: z
    .strictObject({
      provider: z.enum(['manual', 'stripe']).default('manual'),
      /** The Stripe price of each plan, by plan id; the Stripe keys are the secrets STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET. */
      stripePrices: z.record(z.string(), z.string().regex(/^price_\w+$/, 'must be a Stripe price id (price_…)')).optional(),
      pastDueGraceDays: z.number().optional(),
    })
    .default({ provider: 'manual' }),
  twilio: z.strictObject({ apiBaseUrl: z.url().optional(), ringTimeoutSeconds: z.number().optional(), backstopGraceSeconds: z.number().optional() }).default({}),
  whatsapp: z.strictObject({ graphApiUrl: z.url().optional(), sendRetryMs: z.array(z.number()).optional() }).default({}),
  webhooks: z
    .strictObject({ retryScheduleSeconds: z.array(z.number()).optional(), timeoutMs: z.number().optional(), deliveryRetentionDays: z.number().optional() })
    .default({}),
  eventStream: z
    .strictObject({
      logRetentionHours: z.number().optional(),
      pollMs: z.number().optional(),
      reauthorizeMs: z.number().optional(),
      overlapMs: z.number().optional(),
      heartbeatMs: z.number().optional(),
    })
    .default({}),
  limits: z
    .strictObject({
      maxBodyBytes: z.number().optional(),
      idempotencyTtlSeconds: z.number().optional(),
      sessionIdleTimeoutSeconds: z.number().optional(),
      maxToolRounds: z.number().optional(),
      replayMaxSessions: z.number().optional(),
      replayMaxTurns: z.number().optional(),
      toolTimeoutMs: z.number().optional(),
      toolMaxResponseBytes: z.number().optional(),
      quotaCacheSeconds: z.number().optional(),
      usageRollupSeconds: z.number().optional(),
      documentProcessingTimeoutSeconds: z.number().optional(),
    })
    .default({}),
  /**
   * The media worker (docs/deploy.md#the-media-worker): an ECS Fargate service behind a load balancer, for the calls
   * that do not go through ConversationRelay. Off by default: a deployment that only uses ConversationRelay pays
   * nothing for it.
   */
  mediaWorker: z
    .strictObject({
      enabled: z.boolean().default(false),
      /** Its public name and the ACM certificate for it, in the stack's region (the load balancer reads it there). */
      domain: z
        .strictObject({
          name: domainName,
          certificateArn: arnOf('acm', '[a-z0-9-]+:\\d{12}:certificate/.+', "an ACM certificate ARN in the stack's region"),
        })
        .optional(),
      /** Fargate's sizes: CPU units (1024 is one vCPU) and MiB of memory within what Fargate pairs with them. */
      cpu: z.union(fargateCpuUnits.map((units) => z.literal(units))).default(1024),
      memoryMiB: z.number().int().default(2048),
      minTasks: z.number().int().min(1).max(100).default(1),
      maxTasks: z.number().int().min(1).max(100).default(4),
      /** The active calls per task autoscaling holds the average to. */
      callsPerTask: z.number().int().min(1).max(1000).default(20),
    })
    .superRefine((worker, context) => {
      const memory = fargateMemoryMiB[worker.cpu];
      if (!memory.includes(worker.memoryMiB)) {
        context.addIssue({ code: 'custom', path: ['memoryMiB'], message: `with cpu ${worker.cpu}, must be one of Fargate's sizes: ${memory.length > 3 ? `${memory[0]}–${memory.at(-1)} MiB in steps of 1024` : `${memory.join(', ')} MiB`}` });
      }
      if (worker.minTasks > worker.maxTasks) context.addIssue({ code: 'custom', path: ['minTasks'], message: `must be at most maxTasks (${worker.maxTasks})` });
      // Twilio connects Media Streams only over wss:// with a certificate it trusts (its errors 31910 and 31922).
      if (worker.enabled && !worker.domain) context.addIssue({ code: 'custom', path: ['domain'], message: 'is required when the media worker is enabled: Twilio connects Media Streams only over wss:// with a certificate it trusts' });
    })
    .default({ enabled: false, cpu: 1024, memoryMiB: 2048, minTasks: 1, maxTasks: 4, callsPerTask: 20 }),
  /**
   * Secrets that already exist, by setting: the stack grants reading them. A secret setting in use and not named
   * here gets a secret the stack creates empty, to be given its value once (docs/deploy.md#secrets).
   */
  secrets: z.partialRecord(z.enum(secretSettings), arnOf('secretsmanager', '[a-z0-9-]+:\\d{12}:secret:.+', 'a Secrets Manager secret ARN')).default({}),
});

export type DeploymentConfig = z.output<typeof deploymentConfigSchema>;
type DeploymentSettingName = { [Name in SettingName]: (typeof settingSources)[Name] extends 'deployment' ? Name : never }[SettingName];

/**
 * Where in the file each deployment setting is: the value there (a list joined with commas, an object as JSON) is
 * the setting, checked with the rule the functions parse it with. Every `deployment` setting of config.ts has its key.
 */
export const settingKeys = {
  MAX_BODY_BYTES: 'limits.maxBodyBytes',
  JWT_JWKS_URL: 'auth.jwt.jwksUrl',
  JWT_ISSUER: 'auth.jwt.issuer',
  JWT_AUDIENCE: 'auth.jwt.audience',
  JWT_ORG_CLAIM: 'auth.jwt.orgClaim',
  JWT_ALGORITHMS: 'auth.jwt.algorithms',
  JWT_CLOCK_TOLERANCE_SECONDS: 'auth.jwt.clockToleranceSeconds',
  JWT_MAX_LIFETIME_SECONDS: 'auth.jwt.maxLifetimeSeconds',
  BEDROCK_MODELS: 'models.bedrock.llms',
  BEDROCK_EMBEDDING_MODELS: 'models.bedrock.embeddings',
  BEDROCK_RERANK_MODELS: 'models.bedrock.rerank',
  BEDROCK_STS_MODELS: 'models.bedrock.sts',
  OPENAI_COMPATIBLE_BASE_URL: 'models.openAiCompatible.baseUrl',
  OPENAI_COMPATIBLE_MODELS: 'models.openAiCompatible.llms',
  OPENAI_COMPATIBLE_EMBEDDING_MODELS: 'models.openAiCompatible.embeddings',
  OPENAI_COMPATIBLE_STT_MODELS: 'models.openAiCompatible.stt',
  OPENAI_COMPATIBLE_REALTIME_MODELS: 'models.openAiCompatible.realtime',
  IMAGE_INPUT_MODELS: 'models.imageInput',
  DEEPGRAM_STT_MODELS: 'models.speech.deepgram.stt',
  CARTESIA_TTS_MODELS: 'models.speech.cartesia.tts',
  RIME_TTS_MODELS: 'models.speech.rime.tts',
  ELEVENLABS_TTS_MODELS: 'models.speech.elevenlabs.tts',
  AMAZON_STT_MODELS: 'models.speech.amazon.stt',
  AMAZON_TTS_MODELS: 'models.speech.amazon.tts',
  DEFAULT_LLM: 'models.defaultLlm',
  ANALYSIS_MODEL_ID: 'models.analysisModel',
  WEBHOOK_RETRY_SCHEDULE_SECONDS: 'webhooks.retryScheduleSeconds',
  WEBHOOK_TIMEOUT_MS: 'webhooks.timeoutMs',
  WEBHOOK_DELIVERY_RETENTION_DAYS: 'webhooks.deliveryRetentionDays',
  EVENT_LOG_RETENTION_HOURS: 'eventStream.logRetentionHours',
  EVENT_STREAM_POLL_MS: 'eventStream.pollMs',
  EVENT_STREAM_REAUTHORIZE_MS: 'eventStream.reauthorizeMs',
  EVENT_STREAM_OVERLAP_MS: 'eventStream.overlapMs',
  EVENT_STREAM_HEARTBEAT_MS: 'eventStream.heartbeatMs',
  IDEMPOTENCY_TTL_SECONDS: 'limits.idempotencyTtlSeconds',
  SESSION_IDLE_TIMEOUT_SECONDS: 'limits.sessionIdleTimeoutSeconds',
  MAX_TOOL_ROUNDS: 'limits.maxToolRounds',
  REPLAY_MAX_SESSIONS: 'limits.replayMaxSessions',
  REPLAY_MAX_TURNS: 'limits.replayMaxTurns',
  TOOL_TIMEOUT_MS: 'limits.toolTimeoutMs',
  TOOL_MAX_RESPONSE_BYTES: 'limits.toolMaxResponseBytes',
  QUOTA_CACHE_SECONDS: 'limits.quotaCacheSeconds',
  USAGE_ROLLUP_SECONDS: 'limits.usageRollupSeconds',
  DOCUMENT_PROCESSING_TIMEOUT_SECONDS: 'limits.documentProcessingTimeoutSeconds',
  PLANS: 'plans',
  BILLING_PROVIDER: 'billing.provider',
  STRIPE_PRICES: 'billing.stripePrices',
  PAST_DUE_GRACE_DAYS: 'billing.pastDueGraceDays',
  TWILIO_API_BASE_URL: 'twilio.apiBaseUrl',
  CALL_RING_TIMEOUT_SECONDS: 'twilio.ringTimeoutSeconds',
  CALL_BACKSTOP_GRACE_SECONDS: 'twilio.backstopGraceSeconds',
  WHATSAPP_GRAPH_API_URL: 'whatsapp.graphApiUrl',
  WHATSAPP_SEND_RETRY_MS: 'whatsapp.sendRetryMs',
} as const satisfies Record<DeploymentSettingName, string>;

/** Where a secret in use is: the secret the file names, or one the stack makes. */
export type SecretSource = { arn: string } | 'create';

/** What the checked file gives the functions: each deployment setting it sets, and the secrets in use. */
export interface Deployment {
  config: DeploymentConfig;
  /** The value of each deployment setting the file sets, as the functions read it from their environment. */
  settings: Partial<Record<SettingName, string>>;
  /** Each secret setting the configured features use: the ARN the file names, or `create` for one the stack makes. */
  secrets: Partial<Record<SecretSettingName, SecretSource>>;
}

export class DeploymentConfigError extends Error {
  override name = 'DeploymentConfigError';
}

/** Reads and checks a deployment configuration file; a bad file throws one error naming every bad key. */
export function loadDeploymentConfig(file: string): Deployment {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new DeploymentConfigError(`Cannot read the deployment configuration ${file}: ${(error as Error).message}`);
  }
  return checkDeploymentConfig(raw, file);
}

/** Checks a deployment configuration (the parsed file; `{}` gives every default). */
export function checkDeploymentConfig(raw: unknown, source = 'the deployment configuration'): Deployment {
  const problems: string[] = [];
  const parsed = deploymentConfigSchema.safeParse(raw);
  if (!parsed.success) {
    problems.push(...parsed.error.issues.map((issue) => `${issue.path.join('.') || '(the file)'}: ${issue.message}`));
    throw failure(source, problems);
  }
  const config = parsed.data;
  const settings: Partial<Record<SettingName, string>> = {};
  for (const [name, key] of Object.entries(settingKeys) as [DeploymentSettingName, string][]) {
    const value = valueAt(config, key);
    // An empty list is no list: the function gets no variable.
    if (value === undefined || (Array.isArray(value) && value.length === 0)) continue;
    const setting = name === 'ANALYSIS_MODEL_ID' ? analysisModelId(String(value)) : asVariable(value);
    const checked = settingSchema(name).safeParse(setting);
    if (checked.success) settings[name] = setting;
    else problems.push(...checked.error.issues.map((issue) => `${key}: ${issue.message}`));
  }
  if (problems.length === 0) problems.push(...catalogProblems(config, settings));

  const inUse = new Set<SecretSettingName>();
  if (config.models.openAiCompatible) inUse.add('OPENAI_COMPATIBLE_API_KEY');
  const speech = config.models.speech;
  if (speech.deepgram?.stt.length) inUse.add('DEEPGRAM_API_KEY');
  if (speech.cartesia?.tts.length) inUse.add('CARTESIA_API_KEY');
  if (speech.rime?.tts.length) inUse.add('RIME_API_KEY');
  if (speech.elevenlabs?.tts.length) inUse.add('ELEVENLABS_API_KEY');
  if (config.billing.provider === 'stripe') {
    inUse.add('STRIPE_SECRET_KEY');
    inUse.add('STRIPE_WEBHOOK_SECRET');
  }
  const secrets: Deployment['secrets'] = {};
  for (const name of secretSettings) {
    const arn = config.secrets[name];
    if (arn && !inUse.has(name)) problems.push(`secrets.${name}: nothing configured uses it (${secretUsers[name]})`);
    if (inUse.has(name)) secrets[name] = arn ? { arn } : 'create';
  }
  if (config.billing.stripePrices && config.billing.provider !== 'stripe') problems.push('billing.stripePrices: billing.provider is not stripe');
  if (problems.length > 0) throw failure(source, problems);
  return { config, settings, secrets };
}

const secretUsers: Record<SecretSettingName, string> = {
  OPENAI_COMPATIBLE_API_KEY: 'it is the key of models.openAiCompatible',
  STRIPE_SECRET_KEY: 'it is used when billing.provider is stripe',
  STRIPE_WEBHOOK_SECRET: 'it is used when billing.provider is stripe',
  DEEPGRAM_API_KEY: 'it is the key of models.speech.deepgram',
  CARTESIA_API_KEY: 'it is the key of models.speech.cartesia',
  RIME_API_KEY: 'it is the key of models.speech.rime',
  ELEVENLABS_API_KEY: 'it is the key of models.speech.elevenlabs',
};

function failure(source: string, problems: string[]): DeploymentConfigError {
  return new DeploymentConfigError(`Invalid deployment configuration ${source}:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
}

function valueAt(config: DeploymentConfig, key: string): unknown {
  return key.split('.').reduce<unknown>((value, part) => (value === undefined || value === null ? undefined : (value as Record<string, unknown>)[part]), config);
}

/** How a value of the file is written as an environment variable: lists comma-separated, objects as JSON. */
function asVariable(value: unknown): string {
  if (Array.isArray(value)) return value.join(',');
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** The catalog id of `provider/name` (an LLM), as the functions name ANALYSIS_MODEL_ID. */
function analysisModelId(value: string): string {
  const [provider = '', ...name] = value.split('/');
  return modelId(provider as Parameters<typeof modelId>[0], 'LLM', name.join('/'));
}

/** The default and analysis models must be LLMs of the catalog these settings make. */
function catalogProblems(config: DeploymentConfig, settings: Partial<Record<SettingName, string>>): string[] {
  let catalog: ReturnType<typeof createModelCatalog>;
  try {
    catalog = createModelCatalog(parseConfig(settings));
  } catch {
    return [`models.defaultLlm: ${config.models.defaultLlm} is not one of the LLMs configured (builtin/builtin-assistant, bedrock/<models.bedrock.llms>, openai-compatible/<models.openAiCompatible.llms>)`];
  }
  const analysis = config.models.analysisModel;
  if (analysis && !catalog.byName('LLM', analysis)) return [`models.analysisModel: ${analysis} is not one of the LLMs configured`];
  return [];
}
