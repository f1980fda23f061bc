import { childResult } from './child-result.ts';
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
  return childResult<MessagePagesResult>('message-pages-runtime.ts', dynamodbEndpoint, tableName);
}
