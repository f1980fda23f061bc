import { fork } from 'node:child_process';
import { resolve } from 'node:path';
import type { Percentiles } from './turns.ts';

/** Section 7: a long message history read page by page through the local runtime (issue 15). */
export interface MessagePagesResult {
  messages: number;
  limit: number;
  requests: number;
  pageOneMs: Percentiles;
  deepPage: number;
  deepPageMs: Percentiles;
  /** GET of the session itself: the same authentication and the one GetItem every messages page also makes. */
  floorMs: Percentiles;
  /** DynamoDB Local's reported read capacity of one page's range Query. */
  readUnitsPerPage: number;
  /** For context: reading the whole history once, as every page did before. */
  wholeHistoryReadMs: number;
}

export function measureMessagePages(dynamodbEndpoint: string, tableName: string): Promise<MessagePagesResult> {
  return new Promise((done, fail) => {
    const child = fork(resolve(import.meta.dirname, 'message-pages-runtime.ts'), {
      env: { ...process.env, BENCH_DYNAMODB_ENDPOINT: dynamodbEndpoint, TABLE_NAME: tableName, POWERTOOLS_LOG_LEVEL: 'WARN' },
      execArgv: ['--disable-warning=ExperimentalWarning'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    child.once('message', (message: MessagePagesResult) => done(message));
    child.once('exit', (code) => fail(new Error(`message pages bench exited with ${code}`)));
  });
}
