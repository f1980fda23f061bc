/**
 * The drift test: the code of each Lambda function, the declaration of its settings (functions/settings.ts), and the
 * variables the stack gives it agree. The code's side is read from each handler bundled as the stack bundles it
 * (test/support/setting-reads.ts); the stack's from the template of deploy/example.json, where every deployment
 * setting is set.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { App, type CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueConsumers, scheduledFunctions, tableStreamConsumers } from '../../functions/consumers.ts';
import { routeGroups } from '../../functions/route-groups.ts';
import { functionSettings, settingsOf } from '../../functions/settings.ts';
import { voiceRelayRoutes } from '../../functions/voice-relay/routes.ts';
import { loadDeploymentConfig } from '../../infra/deployment-config.ts';
import { functionEnvironment } from '../../infra/local/function-environment.ts';
import { AgentPlatformStack } from '../../infra/stack.ts';
import { secretSettings, settingNames, settingSources, type SettingName } from '../../shared/platform/config.ts';
import { settingsReadBy } from '../support/setting-reads.ts';

const repoRoot = resolve(import.meta.dirname, '../..');
const functions = [...routeGroups, voiceRelayRoutes, ...tableStreamConsumers, ...queueConsumers, ...scheduledFunctions];
type Settings = Readonly<Record<string, readonly SettingName[]>>;

/** What the code reads against what the declaration gives, both ways, one line per difference. */
function codeDrift(declared: Settings, reads: Readonly<Record<string, ReadonlySet<SettingName>>>): string[] {
  return Object.entries(reads).flatMap(([name, read]) => {
    const given = new Set(declared[name] ?? []);
    return [
      ...[...read].filter((setting) => !given.has(setting)).map((setting) => `${name} reads ${setting}, which functions/settings.ts does not give it`),
      ...[...given].filter((setting) => !read.has(setting)).map((setting) => `${name} is given ${setting}, which its code never reads`),
    ];
  });
}

/**
 * The settings the template gives each function (a secret's `_ARN` counted as the secret) against its declaration,
 * less what the stack never sets (`local` and `lambda` settings), both ways.
 */
function stackDrift(declared: Settings, variables: Readonly<Record<string, Record<string, unknown>>>): string[] {
  const settingOf = (variable: string): SettingName | undefined =>
    (settingNames as string[]).includes(variable) ? (variable as SettingName) : secretSettings.find((name) => variable === `${name}_ARN`);
  return Object.entries(variables).flatMap(([name, environment]) => {
    const given = new Set(Object.keys(environment).map(settingOf).filter((setting) => setting !== undefined));
    const expected = new Set((declared[name] ?? []).filter((setting) => settingSources[setting] !== 'local' && settingSources[setting] !== 'lambda'));
    return [
      ...[...expected].filter((setting) => !given.has(setting)).map((setting) => `the stack does not give ${name} ${setting}`),
      ...[...given].filter((setting) => !expected.has(setting)).map((setting) => `the stack gives ${name} ${setting}, which it does not read`),
    ];
  });
}

const reads: Record<string, Set<SettingName>> = {};
const variables: Record<string, Record<string, unknown>> = {};
const outdir = mkdtempSync(join(tmpdir(), 'settings-drift-'));

beforeAll(async () => {
  // One at a time: each build is already multi-threaded, and the machine is shared.
  for (const unit of functions) reads[unit.name] = await settingsReadBy(unit.entry);
  const { context } = JSON.parse(readFileSync(join(repoRoot, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> };
  const stack = new AgentPlatformStack(new App({ context: { ...context, 'aws:cdk:bundling-stacks': [] }, outdir }), 'Drift', {
    deployment: loadDeploymentConfig(join(repoRoot, 'deploy/example.json')),
  });
  const resources = Template.fromStack(stack).toJSON().Resources as Record<string, { Properties: { Environment: { Variables: Record<string, unknown> } } }>;
  for (const [name, fn] of stack.functions) variables[name] = resources[stack.getLogicalId(fn.node.defaultChild as CfnElement)]?.Properties.Environment.Variables ?? {};
}, 600_000);
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

describe('the settings of each function', () => {
  it('are declared for every function, and only for functions that exist', () => {
    expect(Object.keys(functionSettings).sort()).toEqual(functions.map((unit) => unit.name).sort());
  });

  it('are exactly what its bundled code reads', () => {
    expect(Object.keys(reads)).toHaveLength(functions.length);
    expect(codeDrift(functionSettings, reads)).toEqual([]);
  });

  it('are exactly what the stack gives it', () => {
    expect(Object.keys(variables).sort()).toEqual(functions.map((unit) => unit.name).sort());
    expect(stackDrift(functionSettings, variables)).toEqual([]);
  });

  it('fail the check on a deliberately removed setting, and on one given but never read', () => {
    const withoutTurnDeadline = { ...functionSettings, 'chat-messages': settingsOf('chat-messages').filter((setting) => setting !== 'TURN_TIMEOUT_SECONDS') };
    const withStripeOnAgents = { ...functionSettings, agents: [...settingsOf('agents'), 'STRIPE_PRICES' as const] };
    const { JWT_ISSUER: _removed, ...variablesWithoutIssuer } = variables.sessions ?? {};

    expect(codeDrift(withoutTurnDeadline, reads)).toEqual(['chat-messages reads TURN_TIMEOUT_SECONDS, which functions/settings.ts does not give it']);
    expect(codeDrift(withStripeOnAgents, reads)).toEqual(['agents is given STRIPE_PRICES, which its code never reads']);
    expect(stackDrift(functionSettings, { ...variables, sessions: variablesWithoutIssuer })).toEqual(['the stack does not give sessions JWT_ISSUER']);
    expect(stackDrift(withoutTurnDeadline, variables)).toEqual(['the stack gives chat-messages TURN_TIMEOUT_SECONDS, which it does not read']);
  });
});

describe("a local execution environment's variables", () => {
  const local = {
    PATH: '/usr/bin',
    AWS_ENDPOINT_URL_BEDROCK_RUNTIME: 'http://127.0.0.1:9',
    AWS_REGION: 'us-east-1',
    TABLE_NAME: 'agent-platform',
    STRIPE_SECRET_KEY: 'sk_test_local',
    STRIPE_WEBHOOK_SECRET_ARN: 'arn:aws:secretsmanager:us-east-1:111122223333:secret:hook-AbCdEf',
    OPENAI_COMPATIBLE_API_KEY: 'sk-local',
    WHATSAPP_INBOUND_QUEUE_URL: 'http://127.0.0.1:9/queue',
  };

  it('hold the settings its function reads, either form of a secret, what Lambda sets, and every variable that is no setting', () => {
    expect(functionEnvironment(settingsOf('usage'), local)).toEqual({
      PATH: '/usr/bin',
      AWS_ENDPOINT_URL_BEDROCK_RUNTIME: 'http://127.0.0.1:9',
      AWS_REGION: 'us-east-1',
      TABLE_NAME: 'agent-platform',
      STRIPE_SECRET_KEY: 'sk_test_local',
      STRIPE_WEBHOOK_SECRET_ARN: local.STRIPE_WEBHOOK_SECRET_ARN,
    });
    // The relay reads no AWS_REGION itself, but Lambda gives it to every function (its SDK clients read it).
    expect(functionEnvironment(settingsOf('event-relay'), local)).toEqual({ PATH: '/usr/bin', AWS_ENDPOINT_URL_BEDROCK_RUNTIME: 'http://127.0.0.1:9', AWS_REGION: 'us-east-1' });
    expect(functionEnvironment(undefined, local)).toEqual(local);
  });
});
