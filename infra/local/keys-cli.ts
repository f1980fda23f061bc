/**
 * `npm run --silent keys -- create --org ID --name NAME --scopes a,b`: creates an API key (and the organization
 * if it is new) and prints one JSON object on stdout. Uses the database of a running `npm start` on the same
 * DATA_DIR, or starts DynamoDB Local on that DATA_DIR for the moment.
 */
import { parseArgs } from 'node:util';
import { orgIdPattern } from '../../shared/auth/principal.ts';
import { issueApiKey } from '../../shared/domain/api-keys.ts';
import { createApiKeyBody } from '../../shared/schemas/api-key.ts';
import { runtime } from '../../shared/runtime.ts';
import { dataDirectory, findRunningInstance, startLocalDatabase, useLocalDatabase, type LocalDatabase } from './environment.ts';

const usage = 'usage: npm run --silent keys -- create --org ID --name NAME --scopes scope[,scope...]';

function fail(message: string): never {
  console.error(message);
  process.exit(2);
}

let parsed: { positionals: string[]; values: { org?: string | undefined; name?: string | undefined; scopes?: string | undefined } };
try {
  parsed = parseArgs({
    allowPositionals: true,
    options: { org: { type: 'string' }, name: { type: 'string' }, scopes: { type: 'string' } },
  });
} catch (error) {
  // An unknown option or a missing option value: say so with the usage, not with a stack trace.
  fail(`${(error as Error).message}\n${usage}`);
}
const { positionals, values } = parsed;
if (positionals[0] !== 'create' || !values.org || !values.name || !values.scopes) fail(usage);
const orgId = values.org.trim();
if (!orgIdPattern.test(orgId)) fail('--org must be 1 to 128 letters, digits, dots, dashes or underscores');
const input = createApiKeyBody.safeParse({ name: values.name, scopes: values.scopes.split(',').map((scope) => scope.trim()) });
if (!input.success) fail(input.error.issues.map((issue) => `${issue.path.join('.') || 'input'}: ${issue.message}`).join('\n'));

const dataDir = dataDirectory();
const running = findRunningInstance(dataDir);
let ownDatabase: LocalDatabase | undefined;
try {
  if (running) {
    useLocalDatabase({ endpoint: running.dynamodbEndpoint, tableName: running.tableName });
  } else {
    ownDatabase = await startLocalDatabase({ dataDir });
    useLocalDatabase(ownDatabase);
  }
  const deps = runtime();
  await deps.orgs.ensure({ id: orgId, name: orgId, createdAt: deps.clock.now().toISOString() });
  const key = await issueApiKey(deps, orgId, input.data);
  console.log(JSON.stringify({ id: key.id, orgId: key.orgId, name: key.name, scopes: key.scopes, key: key.key }));
} catch (error) {
  console.error((error as Error).message);
  process.exitCode = 1;
} finally {
  await ownDatabase?.stop();
}
