import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import middy, { type MiddlewareObj } from '@middy/core';
import { executionModeStreamifyResponse } from '@middy/core/StreamifyResponse';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import type { z } from 'zod';
import type { Authenticator, Principal } from './principal.ts';
import { grants, type Scope } from './scopes.ts';
import {
  ForbiddenError,
  IdempotencyInProgressError,
  IdempotencyKeyReusedError,
  MethodNotAllowedError,
  NotFoundError,
  PayloadTooLargeError,
  RateLimitedError,
  retryAfterOf,
  UnsupportedMediaTypeError,
  ValidationError,
  type FieldIssue,
} from '../errors.ts';
import { logger } from '../logger.ts';
import { flushMetrics } from '../metrics.ts';
import { openSpan, startTracing, type TraceSpan } from '../tracing.ts';
import type { IdempotencyCompletion, IdempotencyStore, SealResponse, StoredResponse } from '../ports.ts';
import { unacceptableBodyPart } from '../schemas/storable-json.ts';
import { toErrorEnvelope } from './error-envelope.ts';
import { isRestApiEvent, restToHttpApiEvent } from './rest-event.ts';
import { pathMatcher, routeKeysOf, routePaths, type RouteDefinition, type RouteGroup } from './route.ts';

type Parsed<Schema> = Schema extends z.ZodType ? z.output<Schema> : undefined;

export interface RouteInput<Route extends RouteDefinition, Deps> {
  params: Parsed<Route['params']>;
  query: Parsed<Route['query']>;
  body: Parsed<Route['body']>;
  principal: Route['scope'] extends 'public' ? undefined : Principal;
  /** Settles when the credential is confirmed; already settled unless the route overlaps authentication. */
  verified: Promise<void>;
  deps: Deps;
  requestId: string;
  /** The body as sent (decoded from base64 if need be), for the routes that verify a signature over it. */
  rawBody: string;
  /** The query string as sent, without `?` (empty without one), for the routes that verify a signature over the URL. */
  rawQueryString: string;
  /** The request's headers, names lower-cased (for the few routes that read one, such as Last-Event-ID). */
  headers: Readonly<Record<string, string | undefined>>;
  /**
   * Checks the request's credential again, for responses that outlive a moment (streams): rejects with
   * UnauthorizedError once the key is deleted or the token has expired, and with ForbiddenError once it no longer
   * holds the route's scope for the same organization.
   */
  reauthorize(): Promise<void>;
  /**
   * On an idempotent route called with an `Idempotency-Key`: seals the response body the operation is about to
   * return, for the store to record in the transaction that creates the resource (no separate write afterwards).
   */
  sealResponse?: SealResponse | undefined;
  /**
   * The same for an operation that answers with a stream: `seal` takes the stream's whole text (a retry gets it back
   * as is) for the transaction that completes the work; `release` frees the key when the work failed, so that a
   * retry runs it again. The pipeline does neither once the stream has begun.
   */
  streamIdempotency?: { seal(text: string): IdempotencyCompletion; release(): Promise<void> } | undefined;
}

/** What each operation of a group does: it returns the response body, sent with the route's success status. */
export type RouteImplementations<Routes extends Record<string, RouteDefinition>, Deps> = {
  [Operation in keyof Routes]: (input: RouteInput<Routes[Operation], Deps>) => Promise<unknown>;
};

export interface PipelineDeps {
  authenticator: Authenticator;
  idempotency: IdempotencyStore;
  config: { MAX_BODY_BYTES: number };
  /** The request's rate limits (docs/usage-and-billing.md#rate-limits); without it, every request is admitted. */
  checkRequestRate?: (principal: Principal) => Promise<{ admitted: boolean; retryAfterSeconds: number; headers: Record<string, string> }>;
}

type Result = APIGatewayProxyStructuredResultV2;

interface ApiState {
  requestId: string;
  startedAt: number;
  route?: RouteDefinition;
  operation?: string;
  principal?: Principal;
  verified: Promise<void>;
  input?: { params: unknown; query: unknown; body: unknown };
  pending: Promise<unknown>[];
  /** `sealed`: the operation's store records the response; `streamed`: the operation records or releases it itself. */
  idempotency?: { orgId: string; key: string; claimId?: string; replay?: StoredResponse; sealed?: boolean; streamed?: boolean };
  /** The rate-limit headers every response of an authenticated request carries. */
  rateLimitHeaders?: Record<string, string>;
  /** The request's trace span, closed when the response (a stream included) has been sent. */
  span?: TraceSpan;
}

type Middleware = MiddlewareObj<APIGatewayProxyEventV2, Result, Error, Context, { api: ApiState }>;

/** The response headers of a server-sent event stream: never cached, never buffered by a proxy. */
export const serverSentEventHeaders: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
};

/** An implementation returns this to stream its response (server-sent events) instead of one JSON body. */
export class StreamingBody {
  readonly stream: Readable;
  readonly headers: Record<string, string>;

  constructor(stream: Readable, headers: Record<string, string>) {
    this.stream = stream;
    this.headers = headers;
  }
}

/**
 * An implementation returns this to answer something other than a JSON body: a page, a script, a cached document,
 * TwiML to a carrier, a redirect (with `statusCode` 302 and a `location` header).
 */
export class RawBody {
  readonly body: string;
  readonly headers: Record<string, string>;
  /** `body` is base64 of binary content (compressed assets). */
  readonly isBase64Encoded: boolean;
  /** Instead of the route's success status: 304 when the client's copy is current. */
  readonly statusCode: number | undefined;

  constructor(body: string, headers: Record<string, string>, options: { isBase64Encoded?: boolean; statusCode?: number } = {}) {
    this.body = body;
    this.headers = headers;
    this.isBase64Encoded = options.isBase64Encoded ?? false;
    this.statusCode = options.statusCode;
  }
}

/** The handler receives only (event, context); the pipeline's state reaches it through its context object. */
const stateByContext = new WeakMap<object, ApiState>();

const idempotencyKeyPattern = /^[A-Za-z0-9._:-]{1,255}$/;

export function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): Result {
  if (status === 204) return { statusCode: 204, headers };
  return {
    statusCode: status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
    body: JSON.stringify(body),
  };
}

/** The streaming path on AWS is a REST API, whose payload v1 events are turned into the v2 shape first. */
const normalizeEvent = (): Middleware => ({
  before: (request) => {
    if (isRestApiEvent(request.event)) request.event = restToHttpApiEvent(request.event);
  },
});

/** Request id, structured access log and the `x-request-id` header on every response, errors included. */
const requestContext = (): Middleware => ({
  before: (request) => {
    const requestId = request.event.requestContext?.requestId || crypto.randomUUID();
    request.internal.api = { requestId, startedAt: performance.now(), pending: [], verified: Promise.resolve() };
    stateByContext.set(request.context, request.internal.api);
  },
  after: async (request) => finish(request.internal.api, request.event, request.response),
  onError: async (request) => finish(request.internal.api, request.event, request.response),
});

async function finish(state: ApiState, event: APIGatewayProxyEventV2, response: Result | null | undefined): Promise<void> {
  if (response) response.headers = { ...response.headers, ...state.rateLimitHeaders, ...deprecationHeaders(state.route), 'x-request-id': state.requestId };
  await Promise.allSettled(state.pending);
  logger.info('request', {
    requestId: state.requestId,
    routeKey: event.routeKey,
    path: event.rawPath,
    status: response?.statusCode,
    durationMs: Math.round((performance.now() - state.startedAt) * 100) / 100,
    orgId: state.principal?.orgId,
  });
}

function deprecationHeaders(route: RouteDefinition | undefined): Record<string, string> {
  if (!route?.deprecated) return {};
  const { since, sunset, successor } = route.deprecated;
  return {
    deprecation: `@${Math.floor(Date.parse(since) / 1000)}`,
    sunset: new Date(sunset).toUTCString(),
    link: `<${successor}>; rel="successor-version"`,
  };
}

/** The request path is traced on AWS (X-Ray): the tracer's import, which only these functions bundle. */
const loadTracer = () => import('@aws-lambda-powertools/tracer');

/** A span per request, named by its route key, once the tracer (when tracing is on) has loaded. */
const traceRequest = (tracing: Promise<void>): Middleware => ({
  before: async (request) => {
    await tracing;
    request.internal.api.span = openSpan(request.event.routeKey, { route: request.event.routeKey });
  },
});

/**
 * The end of an invocation, after the response has left (for a stream, once it has ended): the span closes, with
 * the error of a 5xx, and the invocation's metrics are sent.
 */
function endInvocation(request: { internal: { api?: ApiState }; response: Result | null | undefined; error: unknown }): void {
  const status = request.response?.statusCode ?? 500;
  request.internal.api?.span?.end(status >= 500 ? (request.error ?? new Error(`status ${status}`)) : undefined);
  flushMetrics();
}

/** Turns any error into the envelope; a 500 is logged with its cause and shows the client nothing of it. */
const errorEnvelope = (): Middleware => ({
  onError: async (request) => {
    const state = request.internal.api;
    // An unconfirmed credential answers for itself first: nothing about the resource may reach it.
    await state?.verified.catch((authError: Error) => {
      request.error = authError;
    });
    const requestId = state?.requestId ?? crypto.randomUUID();
    const envelope = toErrorEnvelope(request.error, requestId);
    if (envelope.error.status >= 500) logger.error('unhandled error', { requestId, error: request.error as Error });
    const headers: Record<string, string> =
      request.error instanceof MethodNotAllowedError ? { allow: request.error.allowedMethods.join(', ') } : {};
    const retryAfter = retryAfterOf(request.error);
    if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
    request.response = jsonResponse(envelope.error.status, envelope, headers);
  },
});

const resolveRoute = (
  routes: Map<string, { operation: string; route: RouteDefinition }>,
  unmatched: readonly RouteDefinition[],
): Middleware => {
  const matchers = unmatched.flatMap((route) => routePaths(route).map((path) => ({ method: route.method, matches: pathMatcher(path) })));
  return {
    before: (request) => {
      const match = routes.get(request.event.routeKey);
      if (!match) throw noRouteError(request.event, matchers);
      request.internal.api.route = match.route;
      request.internal.api.operation = match.operation;
    },
  };
};

/** 405 with `Allow` when the path exists under other methods, 404 otherwise. */
function noRouteError(
  event: APIGatewayProxyEventV2,
  matchers: { method: string; matches: (path: string) => unknown }[],
): Error {
  const method = event.requestContext?.http?.method ?? 'GET';
  const allowed = matchers.filter((matcher) => matcher.matches(event.rawPath)).map((matcher) => matcher.method);
  if (allowed.length > 0 && !allowed.includes(method)) {
    return new MethodNotAllowedError(`${method} is not allowed on ${event.rawPath}; use ${allowed.join(', ')}.`, allowed);
  }
  return new NotFoundError(`No route ${method} ${event.rawPath}.`);
}

/** Authenticates the request's credential and checks that it holds the scope; bookkeeping goes to `pending`. */
async function verifyCredential(authenticator: Authenticator, headers: Readonly<Record<string, string | undefined>>, scope: Scope, pending: Promise<unknown>[]): Promise<Principal> {
  const authentication = await authenticator.authenticate(headers);
  if (authentication.pending) pending.push(authentication.pending);
  if (!grants(authentication.principal.scopes, scope)) throw new ForbiddenError(`This credential lacks the ${scope} scope.`);
  return authentication.principal;
}

const authorize = (deps: () => PipelineDeps): Middleware => ({
  before: async (request) => {
    const state = request.internal.api;
    const scope = state.route?.scope;
    if (!scope || scope === 'public') return;
    const headers = request.event.headers ?? {};
    const { authenticator } = deps();
    const verify = () => verifyCredential(authenticator, headers, scope, state.pending);
    const remembered = state.route?.overlapAuthentication ? authenticator.rememberedOrganization(headers) : undefined;
    if (!remembered) {
      state.principal = await verify();
      return;
    }
    // The organization is known; the key itself is confirmed while the implementation reads.
    state.principal = { orgId: remembered.orgId, scopes: [], ...(remembered.rateLimit ? { rateLimit: remembered.rateLimit } : {}), via: { kind: 'apiKey', keyId: remembered.keyId } };
    const confirmation = verify().then((principal) => {
      state.principal = principal;
    });
    confirmation.catch(() => undefined);
    state.verified = confirmation;
  },
});

/** Admits the request within its organization's (and key's) rate limits, or answers 429 RATE_LIMITED. */
const rateLimit = (deps: () => PipelineDeps): Middleware => ({
  before: async (request) => {
    const state = request.internal.api;
    const check = deps().checkRequestRate;
    if (!state.principal || !check) return;
    const outcome = await check(state.principal);
    state.rateLimitHeaders = outcome.headers;
    if (!outcome.admitted) throw new RateLimitedError(`Too many requests; retry in ${outcome.retryAfterSeconds} s.`, outcome.retryAfterSeconds);
  },
});

/** Parses the JSON body (bounded in size) and validates params, query and body with the route's zod schemas. */
const parseInput = (deps: () => PipelineDeps): Middleware => ({
  before: (request) => {
    const state = request.internal.api;
    const route = state.route as RouteDefinition;
    const { event } = request;
    // A malformed id cannot name anything, so it is answered like an unknown one.
    const params = parseWith(route.params, event.pathParameters ?? {}, () => {
      throw new NotFoundError('No such resource.');
    });
    const query = parseWith(route.query, event.queryStringParameters ?? {}, (issues) => {
      throw new ValidationError(describe('Invalid query parameters', issues), { details: issues });
    });
    const raw = route.body ? readBody(event, route.bodyFormat ?? 'json', route.maxBodyBytes ?? deps().config.MAX_BODY_BYTES) : undefined;
    const body = parseWith(route.body, raw, (issues) => {
      throw new ValidationError(describe('Invalid request body', issues), { details: issues });
    });
    state.input = { params, query, body };
  },
});

function bodyText(event: APIGatewayProxyEventV2, maxBytes: number): string {
  const text = event.body ? (event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body) : '';
  if (Buffer.byteLength(text, 'utf8') > maxBytes) throw new PayloadTooLargeError(`The body exceeds ${maxBytes} bytes.`);
  return text;
}

function readBody(event: APIGatewayProxyEventV2, format: 'json' | 'form' | 'csv', maxBytes: number): unknown {
  if (format === 'form') return readForm(event, maxBytes);
  if (format === 'csv') return readCsv(event, maxBytes);
  return readJson(event, maxBytes);
}

/** A `text/csv` body as its text; the route's schema and domain parse it. */
function readCsv(event: APIGatewayProxyEventV2, maxBytes: number): string {
  const text = bodyText(event, maxBytes);
  const contentType = event.headers?.['content-type'];
  if (!contentType || !/^text\/csv\b/i.test(contentType)) throw new UnsupportedMediaTypeError('Send the body as text/csv.');
  return text;
}

/** An `application/x-www-form-urlencoded` body as an object of its fields (the first value of a repeated name). */
function readForm(event: APIGatewayProxyEventV2, maxBytes: number): Record<string, string> {
  const text = bodyText(event, maxBytes);
  const contentType = event.headers?.['content-type'];
  if (text.length > 0 && contentType && !/^application\/x-www-form-urlencoded\b/i.test(contentType)) {
    throw new UnsupportedMediaTypeError('Send the body as application/x-www-form-urlencoded.');
  }
  const fields: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(text)) if (!(name in fields)) fields[name] = value;
  return fields;
}

function readJson(event: APIGatewayProxyEventV2, maxBytes: number): unknown {
  const text = bodyText(event, maxBytes);
  const contentType = event.headers?.['content-type'];
  if (text.length > 0 && contentType && !/^application\/([a-z0-9.+-]*\+)?json\b/i.test(contentType)) {
    throw new UnsupportedMediaTypeError('Send the body as application/json.');
  }
  if (text.trim().length === 0) throw new ValidationError('A JSON body is required.', { details: [{ field: 'body', message: 'is required' }] });
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    throw new ValidationError('The body is not valid JSON.', { details: [{ field: 'body', message: 'must be valid JSON' }] });
  }
  // Before the schemas: zod would drop a `__proto__` property silently.
  const unacceptable = unacceptableBodyPart(document);
  if (unacceptable) {
    const field = unacceptable.path.length > 0 ? unacceptable.path.join('.') : 'body';
    throw new ValidationError(`Invalid request body: ${field} ${unacceptable.message}`, { details: [{ field, message: unacceptable.message }] });
  }
  return document;
}

function parseWith(schema: z.ZodType | undefined, value: unknown, fail: (issues: FieldIssue[]) => never): unknown {
  if (!schema) return undefined;
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  return fail(
    result.error.issues.map((issue) => ({
      field: issue.path.length ? issue.path.join('.') : 'body',
      message: issue.message,
    })),
  );
}

function describe(prefix: string, issues: FieldIssue[]): string {
  return `${prefix}: ${issues.map((issue) => `${issue.field} ${issue.message}`).join('; ')}`;
}

/**
 * `Idempotency-Key` on creating POSTs: the first response is stored and replayed for 24 hours to the same key
 * with the same request; a different request with that key is a 409. Failed requests release the key.
 */
const idempotency = (deps: () => PipelineDeps): Middleware => ({
  before: async (request) => {
    const state = request.internal.api;
    const key = request.event.headers?.['idempotency-key'];
    if (!state.route?.idempotent || key === undefined || !state.principal) return;
    // A stored response goes only to a confirmed credential, and only one may hold the key (overlapping routes).
    await state.verified;
    if (!idempotencyKeyPattern.test(key)) {
      throw new ValidationError('Idempotency-Key must be 1 to 255 characters of letters, digits, . _ : or -.', {
        details: [{ field: 'Idempotency-Key', message: 'has an invalid format' }],
      });
    }
    const fingerprint = createHash('sha256')
      .update(`${request.event.routeKey}\n${request.event.rawPath}\n${JSON.stringify(state.input?.body ?? null)}`)
      .digest('hex');
    const claim = await deps().idempotency.claim(state.principal.orgId, key, fingerprint);
    if (claim.outcome === 'mismatch') throw new IdempotencyKeyReusedError('This Idempotency-Key was used with a different request.');
    if (claim.outcome === 'in-progress') throw new IdempotencyInProgressError('A request with this Idempotency-Key is still in progress.');
    state.idempotency = {
      orgId: state.principal.orgId,
      key,
      ...(claim.outcome === 'replay' ? { replay: claim.response } : { claimId: claim.claimId }),
    };
  },
  after: async (request) => {
    const record = request.internal.api.idempotency;
    const response = request.response;
    if (!record || record.replay || record.sealed || record.streamed || !response) return;
    await deps().idempotency.complete(record.orgId, record.key, toStoredResponse(response));
  },
  onError: async (request) => {
    const record = request.internal.api?.idempotency;
    // A request whose claim another took over must not free the key the other now holds.
    if (record && !record.replay && !(request.error instanceof IdempotencyInProgressError)) await deps().idempotency.release(record.orgId, record.key);
  },
});

/**
 * Builds the Lambda handler of one endpoint group: the middy pipeline, then dispatch by API Gateway `routeKey`
 * to the group's implementations.
 */
export function createHttpHandler<Routes extends Record<string, RouteDefinition>, Deps extends PipelineDeps>(
  group: RouteGroup<Routes>,
  implementations: RouteImplementations<Routes, Deps>,
  deps: () => Deps,
  options: { unmatched?: readonly RouteDefinition[] } = {},
) {
  const routes = new Map(Object.entries(group.routes).flatMap(([operation, route]) => routeKeysOf(route).map((key) => [key, { operation, route }] as const)));
  // Started with the module, so a cold start loads the tracer during init.
  const tracing = startTracing(loadTracer);
  return middy<APIGatewayProxyEventV2, Result, Error, Context, { api: ApiState }>({
    ...(group.streaming ? { executionMode: executionModeStreamifyResponse } : {}),
    requestEnd: endInvocation,
  })
    .use(normalizeEvent())
    .use(requestContext())
    .use(traceRequest(tracing))
    .use(errorEnvelope())
    .use(resolveRoute(routes, options.unmatched ?? []))
    .use(authorize(deps))
    .use(rateLimit(deps))
    .use(parseInput(deps))
    .use(idempotency(deps))
    .handler(async (event, context) => {
      const state = stateByContext.get(context);
      if (!state) throw new Error('pipeline state missing');
      const rawBody = event.body ? (event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body) : '';
      return dispatch(state, implementations, deps, event.headers ?? {}, rawBody, event.rawQueryString ?? '');
    });
}

async function reauthorize(state: ApiState, authenticator: Authenticator, headers: Readonly<Record<string, string | undefined>>): Promise<void> {
  const scope = state.route?.scope;
  if (!scope || scope === 'public' || !state.principal) return;
  const pending: Promise<unknown>[] = [];
  const principal = await verifyCredential(authenticator, headers, scope, pending);
  await Promise.allSettled(pending);
  if (principal.orgId !== state.principal.orgId) throw new ForbiddenError('This credential now belongs to another organization.');
}

function toStoredResponse(response: Result): StoredResponse {
  return {
    status: response.statusCode ?? 200,
    body: response.body ?? '',
    headers: Object.fromEntries(Object.entries(response.headers ?? {}).map(([name, value]) => [name, String(value)])),
  };
}

/** Seals the event stream the route sends, or releases its key; the pipeline leaves both to the operation. */
function streamIdempotency(state: ApiState, deps: PipelineDeps): RouteInput<RouteDefinition, unknown>['streamIdempotency'] {
  const record = state.idempotency;
  if (!record?.claimId) return undefined;
  const claimId = record.claimId;
  return {
    seal: (text) => deps.idempotency.seal(record.orgId, record.key, claimId, { status: 200, body: text, headers: { ...serverSentEventHeaders } }),
    release: () => deps.idempotency.release(record.orgId, record.key),
  };
}

/** Seals the success response the route will send with `body`, and notes that its store records it. */
function responseSealer(state: ApiState, deps: PipelineDeps): SealResponse | undefined {
  const record = state.idempotency;
  const route = state.route;
  if (!record?.claimId || !route) return undefined;
  const claimId = record.claimId;
  return (body) => {
    record.sealed = true;
    return deps.idempotency.seal(record.orgId, record.key, claimId, toStoredResponse(jsonResponse(route.successStatus, body)));
  };
}

async function dispatch<Deps extends PipelineDeps>(
  state: ApiState,
  implementations: Record<string, (input: never) => Promise<unknown>>,
  deps: () => Deps,
  requestHeaders: Readonly<Record<string, string | undefined>>,
  rawBody: string,
  rawQueryString: string,
): Promise<Result> {
  if (state.idempotency?.replay) {
    const { status, body, headers } = state.idempotency.replay;
    return { statusCode: status, headers: { ...headers, 'idempotent-replayed': 'true' }, ...(body ? { body } : {}) };
  }
  const route = state.route as RouteDefinition;
  const implementation = implementations[state.operation as string] as (input: unknown) => Promise<unknown>;
  const body = await implementation({
    ...state.input,
    principal: state.principal,
    verified: state.verified,
    deps: deps(),
    requestId: state.requestId,
    rawBody,
    rawQueryString,
    headers: requestHeaders,
    reauthorize: () => reauthorize(state, deps().authenticator, requestHeaders),
    sealResponse: responseSealer(state, deps()),
    streamIdempotency: streamIdempotency(state, deps()),
  });
  // Nothing leaves before the credential is confirmed, whatever the implementation did.
  await state.verified;
  if (body instanceof StreamingBody) {
    if (state.idempotency) state.idempotency.streamed = true;
    return { statusCode: 200, headers: body.headers, body: body.stream as unknown as string };
  }
  if (body instanceof RawBody) {
    return { statusCode: body.statusCode ?? route.successStatus, headers: body.headers, body: body.body, isBase64Encoded: body.isBase64Encoded };
  }
  return jsonResponse(route.successStatus, body);
}
