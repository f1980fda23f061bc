/**
 * `npm run --silent keys -- create --org ID --name NAME --scopes a,b`: creates an API key (and the organization
 * if it is new) and prints one JSON object on stdout.
 * `npm run --silent keys -- subscription set --org ID --status STATUS [--plan PLAN]`: the `manual` billing
 * provider's operator command: sets the subscription (any status, e.g. `past_due`), emitting
 * `subscription.updated`, and prints it. Works with the `npm start` running on DATA_DIR (the default `.data`), and
 * says which on stderr; with none running it fails (exit 1) rather than write to a database no server reads, unless
 * `--offline` asks it to start DynamoDB Local on that DATA_DIR for the moment (a key made before the first start).
 */
import { parseArgs } from 'node:util';
import { orgIdPattern } from '../../shared/platform/http/principal.ts';
import { issueApiKey } from '../../shared/identity/api-keys.ts';
import { changeSubscription } from '../../shared/billing/subscriptions.ts';
import { subscriptionStatuses, type SubscriptionStatus } from '../../shared/billing/billing-schemas.ts';
import { createApiKeyBody } from '../../shared/identity/api-key-schemas.ts';
import { runtime } from '../../shared/runtime.ts';
import { dataDirectory, describeInstance, findRunningInstance, noRunningInstance, startLocalDatabase, useLocalDatabase, type LocalDatabase } from './environment.ts';

const usage = [
  'usage: npm run --silent keys -- create --org ID --name NAME --scopes scope[,scope...] [--offline]',
  `       npm run --silent keys -- subscription set --org ID --status ${subscriptionStatuses.join('|')} [--plan PLAN] [--offline]`,
  'The npm start running on DATA_DIR (default .data) is used; --offline writes to DATA_DIR\'s database when none runs.',
].join('\n');

function fail(message: string): never {
  console.error(message);
  process.exit(2);
}

interface Options {
  org?: string | undefined;
  name?: string | undefined;
  scopes?: string | undefined;
  status?: string | undefined;
  plan?: string | undefined;
  offline?: boolean | undefined;
}
let parsed: { positionals: string[]; values: Options };
try {
  parsed = parseArgs({
    allowPositionals: true,
    options: {
      org: { type: 'string' },
      name: { type: 'string' },
      scopes: { type: 'string' },
      status: { type: 'string' },
      plan: { type: 'string' },
      offline: { type: 'boolean' },
    },
  });
} catch (error) {
  // An unknown option or a missing option value: say so with the usage, not with a stack trace.
  fail(`${(error as Error).message}\n${usage}`);
}
const { positionals, values } = parsed;
const command = positionals.join(' ');
const creating = command === 'create' && values.name !== undefined && values.scopes !== undefined && values.status === undefined && values.plan === undefined;
const settingSubscription = command === 'subscription set' && values.status !== undefined && values.name === undefined && values.scopes === undefined;
if (!values.org || !(creating || settingSubscription)) fail(usage);
const orgId = values.org.trim();
if (!orgIdPattern.test(orgId)) fail('--org must be 1 to 128 letters, digits, dots, dashes or underscores');
const input = creating ? createApiKeyBody.safeParse({ name: values.name, scopes: values.scopes?.split(',').map((scope) => scope.trim()) }) : undefined;
if (input && !input.success) fail(input.error.issues.map((issue) => `${issue.path.join('.') || 'input'}: ${issue.message}`).join('\n'));
const status = values.status as SubscriptionStatus | undefined;
if (settingSubscription && !subscriptionStatuses.includes(status as SubscriptionStatus)) fail(`--status must be one of ${subscriptionStatuses.join(', ')}`);

const dataDir = dataDirectory();
const running = findRunningInstance(dataDir);
// A key written where no server reads it would be refused (401) by the one the user talks to: say so instead.
if (!running && !values.offline) {
  console.error(`${noRunningInstance('keys', dataDir)}\nTo write to that DATA_DIR's database while nothing runs on it (e.g. a key made before the first start), add --offline.`);
  process.exit(1);
}
let ownDatabase: LocalDatabase | undefined;
try {
  if (running) {
    console.error(describeInstance(running, dataDir));
    useLocalDatabase({ endpoint: running.dynamodbEndpoint, tableName: running.tableName });
  } else {
    console.error(`No npm start is running on DATA_DIR ${dataDir}: writing to its database directly (--offline).`);
    ownDatabase = await startLocalDatabase({ dataDir });
    useLocalDatabase(ownDatabase);
  }
  const deps = runtime();
  await deps.orgs.ensure({ id: orgId, name: orgId, createdAt: deps.clock.now().toISOString() });
  if (input?.success) {
    const key = await issueApiKey(deps, orgId, input.data);
    console.log(JSON.stringify({ id: key.id, orgId: key.orgId, name: key.name, scopes: key.scopes, key: key.key }));
  } else {
    console.log(JSON.stringify(await changeSubscription(deps, orgId, { kind: 'set', status: status as SubscriptionStatus, plan: values.plan })));
  }
} catch (error) {
  console.error((error as Error).message);
  process.exitCode = 1;
} finally {
  await ownDatabase?.stop();
}
