import * as z from 'zod';
import { scopes } from './scopes.ts';
import { statusByCode, type ErrorCode } from './error-envelope.ts';
import { routePaths, type RouteDefinition, type RouteGroup } from './route.ts';

/** The published API's semantic version: the latest release in CHANGELOG.md (a test keeps the two equal). */
export const apiVersion = '1.0.0';

type JsonSchema = Record<string, unknown>;
type Document = Record<string, unknown> & { paths: Record<string, Record<string, Operation>> };
type Operation = Record<string, unknown> & { responses: Record<string, JsonSchema> };

/** Resources many responses share, by name: the description and the typed client refer to them by that name. */
export type NamedComponents = Readonly<Record<string, z.ZodType>>;

const errorEnvelopeSchema = {
  type: 'object',
  required: ['error', 'meta'],
  additionalProperties: false,
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message', 'status'],
      additionalProperties: false,
      properties: {
        code: { type: 'string', description: 'Stable; branch on this, not on the message.' },
        message: { type: 'string' },
        status: { type: 'integer' },
        details: {
          type: 'array',
          items: {
            type: 'object',
            required: ['field', 'message'],
            additionalProperties: false,
            properties: { field: { type: 'string' }, message: { type: 'string' } },
          },
        },
      },
    },
    meta: {
      type: 'object',
      required: ['requestId', 'timestamp'],
      additionalProperties: false,
      properties: { requestId: { type: 'string' }, timestamp: { type: 'string', format: 'date-time' } },
    },
  },
};

const statusText: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  204: 'No content',
  302: 'Found: the `Location` header names where to get it',
  400: 'The request is invalid',
  401: 'No valid credential',
  402: 'Payment required: a payment method is missing or was declined',
  403: 'The credential lacks the scope, or the action is not allowed',
  404: 'Not found',
  409: 'Conflicts with the current state',
  410: 'Gone',
  413: 'The body is too large',
  415: 'The body is not JSON',
  422: 'Well-formed but unusable',
  500: 'Internal error',
  502: 'The model provider failed',
  503: 'A dependency is unavailable; retry',
};

/** The routes the description documents: every route but the internal ones. */
export const documentedRoutes = (groups: readonly RouteGroup[]): { operation: string; route: RouteDefinition }[] =>
  groups.flatMap((group) =>
    Object.entries(group.routes)
      .filter(([, route]) => !route.internal)
      .map(([operation, route]) => ({ operation, route })),
  );

/** The error codes a route can answer with: those its declaration implies, then its own domain's. */
export function errorCodesOf(route: RouteDefinition): ErrorCode[] {
  const codes: ErrorCode[] = [];
  if (route.query || route.body || route.idempotent) codes.push('VALIDATION_ERROR');
  if (route.scope !== 'public') codes.push('UNAUTHORIZED', 'FORBIDDEN', 'RATE_LIMITED', 'UPSTREAM_UNAVAILABLE');
  // A malformed id names nothing: 404, like an unknown one.
  if (route.params) codes.push('NOT_FOUND');
  if (route.body) codes.push('PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE');
  if (route.idempotent) codes.push('IDEMPOTENCY_KEY_REUSED', 'IDEMPOTENCY_IN_PROGRESS');
  codes.push(...(route.errors ?? []), 'GENERIC_ERROR');
  return [...new Set(codes)];
}

const pascal = (name: string) => name.charAt(0).toUpperCase() + name.slice(1);

/**
 * Names every schema the description needs, then converts each set with zod's own JSON Schema output: bodies as
 * clients send them (`io: 'input'`: defaults optional, transforms described by their input), responses as the API
 * writes them (`io: 'output'`: objects closed, so an undeclared field fails the contract check).
 */
function componentsOf(routes: { operation: string; route: RouteDefinition }[], namedComponents: NamedComponents) {
  const names = new Map<z.ZodType, string>();
  const outputs = z.registry<{ id: string }>();
  const inputs = z.registry<{ id: string }>();
  const name = (registry: typeof outputs, schema: z.ZodType, fallback: string) => {
    const known = names.get(schema);
    if (known) return known;
    names.set(schema, fallback);
    registry.add(schema, { id: fallback });
    return fallback;
  };
  for (const [id, schema] of Object.entries(namedComponents)) name(outputs, schema, id);
  const refs = routes.map(({ operation, route }) => ({
    response: route.response && name(outputs, route.response, `${pascal(operation)}Response`),
    events: route.events && name(outputs, route.events, `${pascal(operation)}Event`),
    body: route.body && name(inputs, route.body, `${pascal(operation)}Body`),
  }));
  const convert = (registry: typeof outputs, io: 'input' | 'output') => {
    const { schemas } = z.toJSONSchema(registry, {
      target: 'draft-2020-12',
      io,
      unrepresentable: 'any',
      uri: (id) => `#/components/schemas/${id}`,
    });
    return Object.fromEntries(Object.entries(schemas).map(([id, { $schema: _schema, $id: _id, ...schema }]) => [id, schema]));
  };
  return { refs, schemas: { ...convert(outputs, 'output'), ...convert(inputs, 'input') } };
}

const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });

/** Path or query parameters, one per property of the route's (object) schema. */
function parametersOf(schema: z.ZodType | undefined, location: 'path' | 'query'): JsonSchema[] {
  if (!schema) return [];
  const json = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input', unrepresentable: 'any' }) as {
    properties?: Record<string, JsonSchema>;
    required?: string[];
  };
  return Object.entries(json.properties ?? {}).map(([name, property]) => {
    const { description, ...rest } = property;
    return {
      name,
      in: location,
      required: location === 'path' || (json.required ?? []).includes(name),
      ...(description ? { description } : {}),
      schema: rest,
    };
  });
}

function errorResponsesOf(route: RouteDefinition): Record<string, JsonSchema> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of errorCodesOf(route)) {
    const status = statusByCode[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, codes]) => [
      String(status),
      {
        description: `${statusText[status] ?? 'Error'}: ${codes.join(', ')}`,
        content: {
          'application/json': {
            schema: {
              allOf: [ref('ErrorEnvelope'), { properties: { error: { properties: { code: { enum: codes }, status: { const: status } } } } }],
            },
          },
        },
      },
    ]),
  );
}

function operationOf(operation: string, route: RouteDefinition, refs: ReturnType<typeof componentsOf>['refs'][number]): Operation {
  const parameters = [...parametersOf(route.params, 'path'), ...parametersOf(route.query, 'query')];
  if (route.idempotent) {
    parameters.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description: 'Replays the first response to the same request for 24 hours; another request with the key is a 409.',
      schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,255}$' },
    });
  }
  // A stream one reads (rather than a reply one asks for) resumes where a dropped connection left off.
  if (route.events && route.method === 'GET') {
    parameters.push({ name: 'Last-Event-ID', in: 'header', required: false, description: 'Resumes after this event.', schema: { type: 'string' } });
  }
  const bodyMediaTypes = { json: 'application/json', form: 'application/x-www-form-urlencoded', csv: 'text/csv' } as const;
  const content: Record<string, JsonSchema> = {};
  if (refs.response) content['application/json'] = { schema: ref(refs.response) };
  if (refs.events) content['text/event-stream'] = { schema: ref(refs.events) };
  for (const mediaType of route.alsoAnswers ?? []) content[mediaType] = { schema: { type: 'string' } };
  const success: JsonSchema = {
    description: refs.events
      ? `${statusText[route.successStatus]}. As \`text/event-stream\`: each event's \`data:\` is one JSON document of the schema shown.`
      : (statusText[route.successStatus] as string),
    ...(Object.keys(content).length ? { content } : {}),
  };
  return {
    operationId: operation,
    summary: route.summary,
    tags: [route.path.split('/').filter((segment) => segment && !/^(v\d+|api|chat)$/.test(segment))[0] ?? 'platform'],
    ...(parameters.length ? { parameters } : {}),
    ...(refs.body ? { requestBody: { required: true, content: { [bodyMediaTypes[route.bodyFormat ?? 'json']]: { schema: ref(refs.body) } } } } : {}),
    responses: { [String(route.successStatus)]: success, ...errorResponsesOf(route) },
    security: route.scope === 'public' ? [] : [{ apiKey: [] }, { bearer: [] }],
    ...(route.scope === 'public' ? {} : { 'x-required-scope': route.scope }),
    ...(route.deprecated
      ? {
          deprecated: true,
          description: `Deprecated since ${route.deprecated.since}; removed after its Sunset date, ${route.deprecated.sunset}. Use ${route.deprecated.successor}.`,
        }
      : {}),
  };
}

/**
 * The operation at a route's alias: the route's own, under an operationId of its own (generators name a function
 * per operationId), marked with `x-alias-of` (the route's operationId), deprecated only when the route is.
 */
function aliasOf(operation: Operation, route: RouteDefinition, position: number): Operation {
  const suffix = (route.aliases?.length ?? 0) > 1 ? `Alias${position}` : 'Alias';
  return {
    ...operation,
    operationId: `${String(operation.operationId)}${suffix}`,
    description: [`Alias of \`${route.method} ${route.path}\`: answers exactly as it does (docs/api-conventions.md#aliases).`, operation.description].filter(Boolean).join('\n\n'),
    deprecated: route.deprecated !== undefined,
    'x-alias-of': operation.operationId,
  };
}

/** The OpenAPI 3.1 description of the documented routes, generated from their declarations (docs/openapi.md). */
export function buildOpenApiDocument(groups: readonly RouteGroup[], namedComponents: NamedComponents): Document {
  const routes = documentedRoutes(groups);
  const { refs, schemas } = componentsOf(routes, namedComponents);
  const paths: Document['paths'] = {};
  routes.forEach(({ operation, route }, index) => {
    const described = operationOf(operation, route, refs[index] as (typeof refs)[number]);
    routePaths(route).forEach((path, position) => {
      paths[path] ??= {};
      (paths[path] as Record<string, Operation>)[route.method.toLowerCase()] = position === 0 ? described : aliasOf(described, route, position);
    });
  });
  return {
    openapi: '3.1.1',
    info: {
      title: 'Agent Platform API',
      version: apiVersion,
      description: 'Create and operate chat and voice agents. What changed in each release: [the changelog](/docs/changelog).',
    },
    servers: [{ url: '/' }],
    paths,
    components: {
      schemas: { ...schemas, ErrorEnvelope: errorEnvelopeSchema },
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'An API key of the organization.' },
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: "A JWT of the organization's identity provider." },
      },
    },
    'x-scopes': [...scopes],
  };
}
