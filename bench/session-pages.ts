import { childResult } from './child-result.ts';
import type { Percentiles } from './turns.ts';

/** Section 8: an organization's long session list read page by page through the local runtime (issue 15). */
export interface SessionPagesResult {
  sessions: number;
  openSessions: number;
  /** How long writing them took (the store's own create, 16 at a time): context for a re-run. */
  seedSeconds: number;
  limit: number;
  requests: number;
  pageOneMs: Percentiles;
  deepPage: number;
  /** Page 50 reached as clients do, with the nextCursor of page 49. */
  deepPageMs: Percentiles;
  /** Page 50 asked for by number without a cursor: the 49 pages before it are read and passed over. */
  deepPageByNumberMs: Percentiles;
  /** Page 1 of `state=OPEN`: the index of open sessions, and a count of the idle ones among them. */
  openPageOneMs: Percentiles;
  /** GET of one session: the same authentication and one GetItem. */
  floorMs: Percentiles;
  /** DynamoDB Local's reported read capacity of one page's Query and the counters' Query. */
  readUnitsPerPage: number;
}

export function measureSessionPages(dynamodbEndpoint: string, tableName: string): Promise<SessionPagesResult> {
  return childResult<SessionPagesResult>('session-pages-runtime.ts', dynamodbEndpoint, tableName);
}
