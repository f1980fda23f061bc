/**
 * The deployment configuration (`cdk deploy -c config=deploy/<file>.json`, infra/deployment-config.ts) and the
 * stack it makes, synthesized once from deploy/example.json, where every key is set (bundling skipped: the
 * template is under test here; test/infra/stack.test.ts deploys the bundles).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { App, type CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type * as z from 'zod';
import { queueConsumers } from '../../functions/consumers.ts';
import { routeGroups } from '../../functions/route-groups.ts';
import { settingsOf } from '../../functions/settings.ts';
import { voiceRelayRoutes } from '../../functions/voice-relay/routes.ts';
import { checkDeploymentConfig, deploymentConfigSchema, loadDeploymentConfig } from '../../infra/deployment-config.ts';
import { AgentPlatformStack } from '../../infra/stack.ts';
import { secretSettings, type SecretSettingName } from '../../shared/platform/config.ts';

interface Resource {
  Type: string;
  Properties: Record<string, any>;
  DeletionPolicy?: string;
}
interface Statement {
  Action: string | string[];
  Resource: unknown;
}

const repoRoot = resolve(import.meta.dirname, '../..');
const asArray = <T>(value: T | T[] | undefined): T[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);
const example = loadDeploymentConfig(join(repoRoot, 'deploy/example.json'));
const exampleFile = JSON.parse(readFileSync(join(repoRoot, 'deploy/example.json'), 'utf8')) as Record<string, any>;
/** Values a careless stack could copy from the synth's environment into the template. */
const secretValues = { OPENAI_COMPATIBLE_API_KEY: 'sk-sentinel-openai-5f1c', STRIPE_SECRET_KEY: 'sk_live_sentinel_9b2e', STRIPE_WEBHOOK_SECRET: 'whsec_sentinel_77aa' };

const outdir = mkdtempSync(join(tmpdir(), 'deployment-test-'));
let stack: AgentPlatformStack;
let resources: Record<string, Resource>;
let template: Template;

beforeAll(() => {
  const { context } = JSON.parse(readFileSync(join(repoRoot, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> };
  const saved = { ...process.env };
  Object.assign(process.env, secretValues);
  try {
    stack = new AgentPlatformStack(new App({ context: { ...context, 'aws:cdk:bundling-stacks': [] }, outdir }), 'Example', { deployment: example });
    template = Template.fromStack(stack);
  } finally {
    for (const name of Object.keys(secretValues)) if (!(name in saved)) delete process.env[name];
  }
  resources = template.toJSON().Resources as Record<string, Resource>;
}, 300_000);
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

const functionId = (name: string) => stack.getLogicalId(stack.functions.get(name)?.node.defaultChild as CfnElement);
const variablesOf = (name: string) => (resources[functionId(name)]?.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
const statementsOf = (name: string): Statement[] => {
  const roleId = (resources[functionId(name)]?.Properties.Role as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0];
  return Object.values(resources)
    .filter((policy) => policy.Type === 'AWS::IAM::Policy' && JSON.stringify(policy.Properties.Roles).includes(`"${roleId}"`))
    .flatMap((policy) => asArray(policy.Properties.PolicyDocument.Statement as Statement | Statement[]));
};
/** A template value with the stack's pseudo parameters filled in, as CloudFormation would in us-east-1. */
const resolved = (value: unknown): string => {
  if (typeof value === 'string') return value;
  const join = (value as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join'];
  if (join) return join[1].map(resolved).join(join[0]);
  const pseudo: Record<string, string> = { 'AWS::Partition': 'aws', 'AWS::Region': 'us-east-1', 'AWS::AccountId': '111122223333' };
  const ref = (value as { Ref?: string }).Ref;
  if (ref && pseudo[ref]) return pseudo[ref];
  return JSON.stringify(value);
};
const allFunctions = () => [...stack.functions.keys()];

describe('the deployment configuration file', () => {
  it('fails naming each key whose value is wrong, all at once', () => {
    const check = () =>
      checkDeploymentConfig({
        domain: { name: 'api.example.com' },
        logRetentionDays: 31,
        models: { bedrock: { llms: ['claude 3'] } },
        auth: { jwt: { jwksUrl: 'not a url', issuer: 'https://auth.example.com/', audience: 'agent-platform' } },
      });
    expect(check).toThrow(/^Invalid deployment configuration the deployment configuration:\n/);
    for (const key of ['domain.certificateArn:', 'logRetentionDays: must be one of', 'models.bedrock.llms.0: must be a Bedrock model id', 'auth.jwt.jwksUrl:']) expect(check).toThrow(key);
  });

  it("checks each setting with the rule the functions parse it with, and the models against the catalogue they make", () => {
    expect(() => checkDeploymentConfig({ limits: { maxToolRounds: 21 } })).toThrow('limits.maxToolRounds: Too big: expected number to be <=20');
    expect(() => checkDeploymentConfig({ webhooks: { retryScheduleSeconds: [5, 86_400] } })).toThrow('webhooks.retryScheduleSeconds:');
    expect(() => checkDeploymentConfig({ models: { defaultLlm: 'bedrock/anthropic.claude-3-5-haiku-20241022-v1:0' } })).toThrow('models.defaultLlm: bedrock/anthropic.claude-3-5-haiku-20241022-v1:0 is not one of the LLMs configured');
    expect(() => checkDeploymentConfig({ models: { analysisModel: 'openai-compatible/gpt-4o' } })).toThrow('models.analysisModel:');
    expect(() => checkDeploymentConfig({ plans: { pro: { name: 'Pro', quotas: { chat_messages: -1, voice_seconds: 0, knowledge_chunks: 0 }, concurrentCalls: 1, requestsPerSecond: 1, burst: 1 } } })).toThrow(
      'plans.pro.quotas.chat_messages:',
    );
  });

  it("refuses a media worker Fargate cannot run or Twilio cannot reach, naming each key", () => {
    const check = (mediaWorker: Record<string, unknown>) => () => checkDeploymentConfig({ mediaWorker });
    const domain = { name: 'media.example.com', certificateArn: 'arn:aws:acm:eu-west-1:123456789012:certificate/11111111-2222-3333-4444-555555555555' };

    expect(check({ enabled: true })).toThrow('mediaWorker.domain: is required when the media worker is enabled: Twilio connects Media Streams only over wss://');
    expect(check({ cpu: 300 })).toThrow('mediaWorker.cpu:');
    expect(check({ cpu: 1024, memoryMiB: 1024 })).toThrow("mediaWorker.memoryMiB: with cpu 1024, must be one of Fargate's sizes: 2048–8192 MiB in steps of 1024");
    expect(check({ cpu: 256, memoryMiB: 4096 })).toThrow("mediaWorker.memoryMiB: with cpu 256, must be one of Fargate's sizes: 512, 1024, 2048 MiB");
    expect(check({ minTasks: 3, maxTasks: 2 })).toThrow('mediaWorker.minTasks: must be at most maxTasks (2)');
    expect(check({ minTasks: 0 })).toThrow('mediaWorker.minTasks:');
    expect(check({ enabled: true, domain: { ...domain, certificateArn: 'arn:aws:iam::123456789012:server-certificate/media' } })).toThrow('mediaWorker.domain.certificateArn:');
    expect(checkDeploymentConfig({ mediaWorker: { enabled: true, domain, cpu: 512, memoryMiB: 4096 } }).config.mediaWorker).toEqual({
      enabled: true,
      domain,
      cpu: 512,
      memoryMiB: 4096,
      minTasks: 1,
      maxTasks: 4,
      callsPerTask: 20,
    });
    expect(checkDeploymentConfig({}).config.mediaWorker.enabled).toBe(false);
  });

  it('takes no secret value: an unknown key is refused, and a secret is named only by the ARN of a secret in use', () => {
    expect(() => checkDeploymentConfig({ billing: { provider: 'stripe', stripeSecretKey: 'sk_live_123' } })).toThrow('billing: Unrecognized key: "stripeSecretKey"');
    expect(() => checkDeploymentConfig({ secrets: { STRIPE_SECRET_KEY: 'sk_live_123' } })).toThrow('secrets.STRIPE_SECRET_KEY: must be a Secrets Manager secret ARN');
    expect(() => checkDeploymentConfig({ secrets: { STRIPE_SECRET_KEY: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:stripe-AbCdEf' } })).toThrow(
      'secrets.STRIPE_SECRET_KEY: nothing configured uses it',
    );
  });

  it('gives the settings as the functions read them, and each secret in use: the ARN named, or one for the stack to make', () => {
    expect(example.settings).toMatchObject({
      BEDROCK_MODELS: 'anthropic.claude-3-5-haiku-20241022-v1:0,us.anthropic.claude-sonnet-4-20250514-v1:0',
      JWT_ALGORITHMS: 'RS256,ES256',
      PLANS: JSON.stringify(exampleFile.plans),
      BILLING_PROVIDER: 'stripe',
      ANALYSIS_MODEL_ID: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(example.secrets).toEqual({
      OPENAI_COMPATIBLE_API_KEY: { arn: exampleFile.secrets.OPENAI_COMPATIBLE_API_KEY },
      STRIPE_SECRET_KEY: 'create',
      STRIPE_WEBHOOK_SECRET: 'create',
      DEEPGRAM_API_KEY: 'create',
      CARTESIA_API_KEY: 'create',
      RIME_API_KEY: 'create',
      ELEVENLABS_API_KEY: 'create',
    });
    expect(checkDeploymentConfig({}).settings).toEqual({ BILLING_PROVIDER: 'manual' });
  });

  it('makes `cdk synth` fail with the message naming the key, and says where the old -c options went', () => {
    const directory = mkdtempSync(join(tmpdir(), 'deployment-file-'));
    try {
      const bad = join(directory, 'bad.json');
      writeFileSync(bad, JSON.stringify({ models: { bedrock: { llms: ['gpt-4o'] } } }));
      // How `cdk synth -c config=…` runs the app: the context in CDK_CONTEXT_JSON.
      const synth = (context: Record<string, string>) =>
        spawnSync(process.execPath, ['infra/app.ts'], { cwd: repoRoot, encoding: 'utf8', env: { ...process.env, CDK_CONTEXT_JSON: JSON.stringify(context), CDK_OUTDIR: directory } });

      const badFile = synth({ config: bad });
      const oldOption = synth({ domainName: 'api.example.com' });
      const badWorker = join(directory, 'bad-worker.json');
      writeFileSync(badWorker, JSON.stringify({ mediaWorker: { enabled: true, cpu: 2048, memoryMiB: 2048 } }));
      const badWorkerFile = synth({ config: badWorker });

      expect(badFile.status).toBe(1);
      expect(badFile.stderr).toContain(`Invalid deployment configuration ${bad}:\n  - models.bedrock.llms.0: must be a Bedrock model id`);
      expect(badWorkerFile.status).toBe(1);
      expect(badWorkerFile.stderr).toContain(`Invalid deployment configuration ${badWorker}:\n  - mediaWorker.memoryMiB: with cpu 2048`);
      expect(badWorkerFile.stderr).toContain('  - mediaWorker.domain: is required when the media worker is enabled');
      expect(oldOption.status).toBe(1);
      expect(oldOption.stderr).toContain('-c domainName is now "domain.name" in the deployment configuration file');
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  }, 120_000);

  it('is documented key by key: deploy/example.json sets every key and docs/deploy.md describes every key', () => {
    const keys = keyPaths(deploymentConfigSchema);
    const docs = readFileSync(join(repoRoot, 'docs/deploy.md'), 'utf8');
    // The configuration's section only: other sections' tables (alarms, metrics) name other things.
    const start = docs.indexOf('## The configuration file');
    const configuration = docs.slice(start, docs.indexOf('\n## ', start));
    const documented = [...configuration.matchAll(/^\| `([A-Za-z.]+)` \|/gm)].map((match) => match[1]);

    expect(keys.length).toBeGreaterThan(40);
    for (const key of keys) expect(valueAt(exampleFile, key), `deploy/example.json ${key}`).toBeDefined();
    expect([...documented].sort()).toEqual([...keys].sort());
  });
});

describe('the stack of deploy/example.json', () => {
  const invokers = [
    ...routeGroups.filter((group) => group.runsTurns || group.usesKnowledge).map((group) => group.name),
    voiceRelayRoutes.name,
    ...queueConsumers.filter((consumer) => consumer.invokesModels).map((consumer) => consumer.name),
  ].sort();

  it('lets the functions that run turns, analyses and embeddings invoke the configured Bedrock models, each by its ARN, and no other', () => {
    const expected = [
      'arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0',
      // A cross-region profile, and its model in whichever region of its geography it routes to.
      'arn:aws:bedrock:us-east-1:111122223333:inference-profile/us.anthropic.claude-sonnet-4-20250514-v1:0',
      'arn:aws:bedrock:*::foundation-model/anthropic.claude-sonnet-4-20250514-v1:0',
      'arn:aws:bedrock:us-east-1::foundation-model/amazon.titan-embed-text-v2:0',
      'arn:aws:bedrock:us-east-1::foundation-model/cohere.rerank-v3-5:0',
    ].sort();
    const granted = allFunctions().filter((name) => statementsOf(name).some((statement) => asArray(statement.Action).includes('bedrock:InvokeModel')));

    expect(granted.sort()).toEqual(invokers);
    for (const name of granted) {
      const invoke = statementsOf(name).filter((statement) => asArray(statement.Action).includes('bedrock:InvokeModel'));
      expect(invoke, name).toHaveLength(1);
      expect(asArray(invoke[0]?.Action).sort(), name).toEqual(['bedrock:InvokeModel', 'bedrock:InvokeModelWithResponseStream']);
      expect(asArray(invoke[0]?.Resource).map(resolved).sort(), name).toEqual(expected);
    }
  });

  it('gives every function that runs turns or analyses the configured model ids, and the default and analysis models', () => {
    for (const name of ['chat-messages', 'voice-relay', 'whatsapp-inbound', 'analysis']) {
      expect(variablesOf(name), name).toMatchObject({
        BEDROCK_MODELS: example.settings.BEDROCK_MODELS,
        BEDROCK_EMBEDDING_MODELS: 'amazon.titan-embed-text-v2:0',
        BEDROCK_RERANK_MODELS: 'cohere.rerank-v3-5:0',
        OPENAI_COMPATIBLE_MODELS: 'gpt-4o-mini',
        OPENAI_COMPATIBLE_BASE_URL: 'https://api.openai.com/v1',
        DEFAULT_LLM: 'bedrock/anthropic.claude-3-5-haiku-20241022-v1:0',
      });
    }
    expect(variablesOf('analysis').ANALYSIS_MODEL_ID).toBe(example.settings.ANALYSIS_MODEL_ID);
  });

  it('gives the JWT settings to every function that authenticates requests', () => {
    const jwt = exampleFile.auth.jwt;
    for (const group of routeGroups) {
      expect(variablesOf(group.name), group.name).toMatchObject({
        JWT_JWKS_URL: jwt.jwksUrl,
        JWT_ISSUER: jwt.issuer,
        JWT_AUDIENCE: jwt.audience,
        JWT_ORG_CLAIM: jwt.orgClaim,
        JWT_ALGORITHMS: 'RS256,ES256',
        JWT_CLOCK_TOLERANCE_SECONDS: '5',
        JWT_MAX_LIFETIME_SECONDS: '86400',
      });
    }
  });

  it('makes the secrets not named by ARN, empty and kept when the stack goes, and tells where to put their values', () => {
    const made = Object.entries(resources).filter(([, candidate]) => candidate.Type === 'AWS::SecretsManager::Secret');
    const outputs = template.findOutputs('*') as Record<string, { Value: unknown }>;

    expect(made).toHaveLength(6);
    for (const [id, secret] of made) {
      expect(secret.DeletionPolicy, id).toBe('Retain');
      expect(Object.keys(secret.Properties)).toEqual(['Description']);
      expect(Object.values(outputs).map((output) => output.Value), id).toContainEqual({ Ref: id });
    }
    expect(Object.keys(outputs)).toEqual(
      expect.arrayContaining(['STRIPESECRETKEYSecretArn', 'STRIPEWEBHOOKSECRETSecretArn', 'DEEPGRAMAPIKEYSecretArn', 'CARTESIAAPIKEYSecretArn', 'RIMEAPIKEYSecretArn', 'ELEVENLABSAPIKEYSecretArn']),
    );
  });

  it('lets each function read exactly the secrets of the settings it reads, and gives it their ARNs, never a value', () => {
    const made = (name: string) => ({ Ref: Object.keys(resources).find((id) => resources[id]?.Type === 'AWS::SecretsManager::Secret' && id.startsWith(`Secret${name.replaceAll('_', '')}`)) });
    const arnOf: Partial<Record<SecretSettingName, unknown>> = { OPENAI_COMPATIBLE_API_KEY: exampleFile.secrets.OPENAI_COMPATIBLE_API_KEY, STRIPE_SECRET_KEY: made('STRIPE_SECRET_KEY'), STRIPE_WEBHOOK_SECRET: made('STRIPE_WEBHOOK_SECRET') };
    for (const name of allFunctions()) {
      const reads = secretSettings.filter((setting) => settingsOf(name).includes(setting));
      const grants = statementsOf(name).filter((statement) => asArray(statement.Action).some((action) => action.startsWith('secretsmanager:')));
      const variables = variablesOf(name);

      expect(grants.flatMap((statement) => asArray(statement.Resource)), name).toEqual(reads.map((setting) => arnOf[setting]));
      for (const statement of grants) expect(asArray(statement.Action).sort(), name).toEqual(['secretsmanager:DescribeSecret', 'secretsmanager:GetSecretValue']);
      for (const setting of secretSettings) {
        expect(variables[setting], `${name} ${setting}`).toBeUndefined();
        expect(variables[`${setting}_ARN`], `${name} ${setting}_ARN`).toEqual(reads.includes(setting) ? arnOf[setting] : undefined);
      }
    }
    // The key's users and the usage function (Stripe) are the readers.
    expect(allFunctions().filter((name) => settingsOf(name).includes('STRIPE_WEBHOOK_SECRET'))).toEqual(['usage']);
    expect(allFunctions().filter((name) => settingsOf(name).includes('OPENAI_COMPATIBLE_API_KEY')).sort()).toEqual(
      ['analysis', 'chat-messages', 'knowledge', 'knowledge-ingestion', 'knowledge-sweeper', 'knowledge-upload-router', 'replay', 'voice-relay', 'whatsapp-inbound'].sort(),
    );
  });

  it('holds no secret value: none in any property, none taken from the environment of the synth', () => {
    const text = JSON.stringify(template.toJSON());

    for (const value of Object.values(secretValues)) expect(text).not.toContain(value);
    expect(text).not.toMatch(/"(SecretString|GenerateSecretString|SecretStringTemplate)"/);
  });

  it("routes Stripe's webhook to the usage function, which bills with Stripe and reads the webhook secret", () => {
    const routes = Object.values(resources).filter((candidate) => candidate.Type === 'AWS::ApiGatewayV2::Route' && candidate.Properties.RouteKey === 'POST /v1/billing/stripe/webhook');
    expect(routes).toHaveLength(1);
    const integrationId = (routes[0]?.Properties.Target as { 'Fn::Join': [string, [string, { Ref: string }]] })['Fn::Join'][1][1].Ref;
    expect(resources[integrationId]?.Properties.IntegrationUri).toEqual({ 'Fn::GetAtt': [functionId('usage'), 'Arn'] });
    expect(variablesOf('usage')).toMatchObject({
      BILLING_PROVIDER: 'stripe',
      STRIPE_PRICES: JSON.stringify(exampleFile.billing.stripePrices),
      STRIPE_WEBHOOK_SECRET_ARN: { Ref: expect.stringMatching(/^SecretSTRIPEWEBHOOKSECRET/) },
    });
  });

  it('keeps every log group the configured number of days, and serves the configured domain behind the web ACL', () => {
    const groups = Object.values(resources).filter((candidate) => candidate.Type === 'AWS::Logs::LogGroup');
    expect(groups.length).toBeGreaterThan(allFunctions().length);
    for (const group of groups) expect(group.Properties.RetentionInDays).toBe(90);
    template.hasResourceProperties('AWS::CloudFront::Distribution', { DistributionConfig: { Aliases: ['api.example.com'], WebACLId: exampleFile.webAclArn } });
  });

  it("keeps every function's variables within Lambda's 4 KB, counting each reference as a long ARN", () => {
    for (const name of allFunctions()) {
      const bytes = Object.entries(variablesOf(name)).reduce((total, [key, value]) => total + key.length + (typeof value === 'string' ? value.length : 160), 0);
      expect(bytes, name).toBeLessThan(4096);
    }
  });
});

/** The keys of the file, by path (`models.bedrock.llms`); a record (plans, prices, secrets) is one key. */
function keyPaths(schema: z.ZodType, prefix = ''): string[] {
  const def = (schema as unknown as { def: { type: string; innerType?: z.ZodType; shape?: Record<string, z.ZodType> } }).def;
  if (def.type === 'optional' || def.type === 'default') return keyPaths(def.innerType as z.ZodType, prefix);
  if (def.type === 'object') return Object.entries(def.shape ?? {}).flatMap(([key, value]) => keyPaths(value, prefix ? `${prefix}.${key}` : key));
  return [prefix];
}

function valueAt(value: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((current, part) => (current as Record<string, unknown> | undefined)?.[part], value);
}
