import type { z } from 'zod';
import type { Scope } from './scopes.ts';
import type { ErrorCode } from './error-envelope.ts';
import type { QueueDefinition } from '../queue/queue-definition.ts';

export const httpMethods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type HttpMethod = (typeof httpMethods)[number];

/**
 * One endpoint, declared once: the CDK stack and the local runtime serve exactly these, the handler dispatches on
 * them, and their zod schemas validate the input.
 */
export interface RouteDefinition {
  method: HttpMethod;
  /** API Gateway path syntax: `/v1/chat/agents/{id}`. */
  path: string;
  /** The scope a caller needs; `public` routes need no credentials. */
  scope: Scope | 'public';
  summary: string;
  successStatus: 200 | 201 | 202 | 204 | 302;
  params?: z.ZodType;
  query?: z.ZodType;
  body?: z.ZodType;
  /** How the body is sent: JSON (default), an HTML form (as carriers post their callbacks), or CSV text (imports). */
  bodyFormat?: 'json' | 'form' | 'csv';
  /** This route's body limit instead of `MAX_BODY_BYTES`: for bulk uploads such as the contacts CSV import. */
  maxBodyBytes?: number;
  /**
   * The success response's body (JSON). Every documented route with a body to answer declares it: /openapi.json
   * describes it and the integration tests check each response against it (docs/openapi.md).
   */
  response?: z.ZodType;
  /** Other media types the success body can be asked for with `Accept` (e.g. `text/csv`), as text. */
  alsoAnswers?: readonly string[];
  /** A route that can answer with server-sent events: the schema of each event's `data:`. */
  events?: z.ZodType;
  /**
   * The error codes of the route's own domain. Those the pipeline gives (validation, credentials, idempotency,
   * size, media type, 500) are derived from the rest of the declaration.
   */
  errors?: readonly ErrorCode[];
  /**
   * Left out of /openapi.json: provider callbacks and the developer pages that serve the description itself
   * (docs, playground). Internal routes need no response schema.
   */
  internal?: boolean;
  /** Accepts an `Idempotency-Key` header (POSTs that create something). */
  idempotent?: boolean;
  /**
   * The implementation may start reading while the API key is confirmed (when this process knows the key's
   * organization): for reads, one round trip instead of two. It must await `verified` before it writes anything;
   * the pipeline itself holds back every answer, success or error, until the key is confirmed.
   */
  overlapAuthentication?: boolean;
  /** A deprecated route: every response carries `Deprecation`, `Sunset` and a `Link` to the successor. */
  deprecated?: { since: string; sunset: string; successor: string };
  /**
   * Other paths that answer exactly as `path` does (the same handler, scope, input, errors): where a reader of the
   * spec's mixed layout looks next, e.g. `/v2/chat/agents/{id}` beside `/v1/chat/agents/{id}`
   * (docs/api-conventions.md#aliases). Never on an `idempotent` route: a replay is bound to the path it was sent to.
   */
  aliases?: readonly string[];
}

export interface RouteGroup<Routes extends Record<string, RouteDefinition> = Record<string, RouteDefinition>> {
  /** Names the Lambda function and its log group. */
  name: string;
  /** The handler module, relative to the repository root; it exports `handler`. */
  entry: string;
  routes: Routes;
  /** Responds through Lambda response streaming (a Function URL or REST API streaming on AWS). */
  streaming?: boolean;
  /** Runs conversation turns: may invoke Bedrock models, gets the turn deadline, and opens its tools' signing secrets. */
  runsTurns?: boolean;
  /** Creates or rotates secrets kept at rest: may seal them (KMS data keys), never open them (docs/security.md). */
  sealsSecrets?: boolean;
  /** Opens secrets kept at rest (the carrier's auth token, to sign requests and verify callbacks). */
  opensSecrets?: boolean;
  /**
   * Works with calls (docs/voice.md): gets the addresses the carrier and ConversationRelay use, reads (`read`: signs
   * download URLs) or writes call recordings, and may create each call's backstop schedule.
   */
  telephony?: { recordings?: 'read' | 'write'; schedulesBackstops?: boolean };
  /** Works with WhatsApp customers' media (docs/whatsapp.md#media): `read` signs download URLs of the copies kept. */
  whatsappMedia?: 'read' | 'write';
  /** Tells providers where to call this deployment (gets PUBLIC_BASE_URL): WhatsApp's webhook URL of each number. */
  namesPublicUrl?: boolean;
  /** Also receives every request no route matches (API Gateway's `$default` route), to answer 404 or 405. */
  catchAll?: boolean;
  /** A directory (relative to the repository root) deployed beside the handler as `assets/`: pages and scripts it serves. */
  assets?: string;
  /** Reads or writes knowledge stores' vectors (gets the vector store's configuration and rights; docs/knowledge.md). */
  usesKnowledge?: boolean;
  /** Queues its handlers send to, by the variable that carries the queue's URL (see functions/consumers.ts). */
  queueUrls?: Record<string, QueueDefinition>;
  /** Memory (and so CPU share) on Lambda, MB, when not the default of its kind (functions/lambda-functions.ts: the rule in docs/performance.md). */
  memoryMb?: number;
}

export function defineRouteGroup<const Routes extends Record<string, RouteDefinition>>(group: RouteGroup<Routes>): RouteGroup<Routes> {
  return group;
}

/**
 * How long a group's function may run, declared once for the stack and the local runtime. An HTTP API gives up on
 * an integration after 30 s, so its functions finish before; a streaming group answers through the REST API's
 * response streaming, which allows Lambda's own maximum of 15 minutes.
 */
export const functionTimeoutSeconds = (group: Pick<RouteGroup, 'streaming'>): number => (group.streaming ? 900 : 29);

export const routeKeyOf = (route: Pick<RouteDefinition, 'method' | 'path'>): string => `${route.method} ${route.path}`;

/** Every path a route answers at: its own, then its aliases. */
export const routePaths = (route: Pick<RouteDefinition, 'path' | 'aliases'>): string[] => [route.path, ...(route.aliases ?? [])];

/** The API Gateway route key of each path a route answers at. */
export const routeKeysOf = (route: Pick<RouteDefinition, 'method' | 'path' | 'aliases'>): string[] => routePaths(route).map((path) => routeKeyOf({ method: route.method, path }));

/** Compiles an API Gateway path template into a matcher that returns its path parameters, percent-decoded. */
export function pathMatcher(path: string): (candidate: string) => Record<string, string> | undefined {
  const names: string[] = [];
  const source = path
    .split('/')
    .map((segment) => {
      const parameter = /^\{([A-Za-z0-9_]+)\}$/.exec(segment);
      if (!parameter) return segment.replace(/[.*+?^$()|[\]\\]/g, '\\$&');
      names.push(parameter[1] as string);
      return '([^/]+)';
    })
    .join('/');
  const pattern = new RegExp(`^${source}/?$`);
  return (candidate) => {
    const match = pattern.exec(candidate);
    if (!match) return undefined;
    const values = names.map((_, index) => decodedSegment(match[index + 1] as string));
    // A malformed percent-encoding names nothing: the path matches no route, and is answered 404.
    if (values.includes(undefined)) return undefined;
    return Object.fromEntries(names.map((name, index) => [name, values[index] as string]));
  };
}

function decodedSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}
