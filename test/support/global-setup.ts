import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { buildAssets } from '../../infra/build-assets.ts';
import { ensureSecretsKeyFile, startLocalDatabase } from '../../infra/local/environment.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
    tableName: string;
    /** The local key that seals the secrets of this run's database. */
    secretsKeyFile: string;
  }
}

/**
 * One in-memory DynamoDB Local for the whole run, and one secrets key file beside it (not the one in `.data`);
 * tests keep apart by using organizations of their own. The developer pages' assets are built from the current
 * sources first, so that the tests serve what the code says.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  await buildAssets();
  const database = await startLocalDatabase({ tableName: 'agent-platform-test' });
  const keyDir = mkdtempSync(join(tmpdir(), 'secrets-key-'));
  project.provide('dynamodbEndpoint', database.endpoint);
  project.provide('tableName', database.tableName);
  project.provide('secretsKeyFile', ensureSecretsKeyFile(join(keyDir, 'secrets.key')));
  return async () => {
    await database.stop();
    rmSync(keyDir, { recursive: true, force: true });
  };
}
