import { childResult } from './child-result.ts';
import type { Percentiles } from './turns.ts';

/** Section 8: the developer pages (issue 10): /openapi.json served from memory, the playground's weight. */
export interface DeveloperPagesResult {
  requests: number;
  /** The first GET of the process: builds the description, then serves it. */
  firstOpenApiMs: number;
  openApiMs: Percentiles;
  openApiBytes: number;
  /** GET /health through the same pipeline: the floor of any route of the edge function. */
  floorMs: Percentiles;
  /** The JavaScript /playground loads, gzipped as served. */
  playgroundJsGzipBytes: number;
  /** For context: the reference page's Scalar bundle, gzipped as served. */
  docsJsGzipBytes: number;
}

export function measureDeveloperPages(dynamodbEndpoint: string, tableName: string): Promise<DeveloperPagesResult> {
  return childResult<DeveloperPagesResult>('developer-pages-runtime.ts', dynamodbEndpoint, tableName);
}
