import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { buildAssets } from '../../infra/build-assets.ts';
import { ensureSecretsKeyFile, prepareTable, startLocalDatabase } from '../../infra/local/environment.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
    /** The tables' common prefix; a worker's own is test/support/database.ts's testTableName(). */
    tablePrefix: string;
    /** The local key that seals the secrets of this run's database. */
    secretsKeyFile: string;
  }
}

/**
 * One in-memory DynamoDB Local for the whole run with a table per worker, and one secrets key file beside it (not
 * the one in `.data`); tests keep apart by using organizations of their own. The developer pages' assets are built from the current
 * sources first, so that the tests serve what the code says.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  await buildAssets();
  const tablePrefix = 'agent-platform-test';
  const database = await startLocalDatabase({ tableName: `${tablePrefix}-1` });
  // VITEST_POOL_ID runs from 1 to maxWorkers.
  for (let poolId = 2; poolId <= project.config.maxWorkers; poolId += 1) await prepareTable(database.endpoint, `${tablePrefix}-${poolId}`);
  const keyDir = mkdtempSync(join(tmpdir(), 'secrets-key-'));
  project.provide('dynamodbEndpoint', database.endpoint);
  project.provide('tablePrefix', tablePrefix);
  project.provide('secretsKeyFile', ensureSecretsKeyFile(join(keyDir, 'secrets.key')));
  return async () => {
    await database.stop();
    rmSync(keyDir, { recursive: true, force: true });
  };
}
