import type { TestProject } from 'vitest/node';
import { startLocalDatabase } from '../../infra/local/environment.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
    tableName: string;
  }
}

/** One in-memory DynamoDB Local for the whole run; tests keep apart by using organizations of their own. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const database = await startLocalDatabase({ tableName: 'agent-platform-test' });
  project.provide('dynamodbEndpoint', database.endpoint);
  project.provide('tableName', database.tableName);
  return () => database.stop();
}
