import { fork } from 'node:child_process';
import { resolve } from 'node:path';

/**
 * Runs a bench script of this folder in a child process of its own, on the database the parent names, and resolves
 * with the one message it sends back (its figures).
 */
export function childResult<T>(script: string, dynamodbEndpoint: string, tableName: string, env: Record<string, string> = {}): Promise<T> {
  return new Promise((done, fail) => {
    const child = fork(resolve(import.meta.dirname, script), {
      env: { ...process.env, BENCH_DYNAMODB_ENDPOINT: dynamodbEndpoint, TABLE_NAME: tableName, POWERTOOLS_LOG_LEVEL: 'WARN', ...env },
      execArgv: ['--disable-warning=ExperimentalWarning'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    child.once('message', (message: T) => done(message));
    child.once('exit', (code) => fail(new Error(`${script} exited with ${code}`)));
  });
}
