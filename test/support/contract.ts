import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { namedComponents, routeGroups } from '../../functions/route-groups.ts';
import { buildOpenApiDocument } from '../../shared/platform/http/openapi.ts';
import { pathMatcher } from '../../shared/platform/http/route.ts';

/**
 * The contract check: every response the integration tests receive through `startApi().request` must be one
 * that /openapi.json describes (its status listed for the route, its body valid against the schema there). A
 * handler that answers a field, a status or an error code its declaration does not list fails the test that saw it.
 */
const document = buildOpenApiDocument(routeGroups, namedComponents);
const documentId = 'https://api.invalid/openapi.json';

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats.default(ajv);
ajv.addSchema(document, documentId);

const documented = Object.entries(document.paths)
  .flatMap(([path, operations]) => Object.keys(operations).map((method) => ({ path, method, matches: pathMatcher(path) })))
  // Like API Gateway, a literal segment wins over a path parameter.
  .sort((a, b) => literalSegments(b.path) - literalSegments(a.path));

/** Routes left out of the description on purpose (the developer pages): their responses are not checked. */
const internal = routeGroups
  .flatMap((group) => Object.values(group.routes))
  .filter((route) => route.internal)
  .map((route) => ({ method: route.method.toLowerCase(), matches: pathMatcher(route.path) }));

function literalSegments(path: string): number {
  return path.split('/').filter((segment) => !segment.startsWith('{')).length;
}

const validators = new Map<string, ValidateFunction>();

function validatorAt(pointer: string[]): ValidateFunction {
  const fragment = pointer.map((token) => encodeURIComponent(token.replaceAll('~', '~0').replaceAll('/', '~1'))).join('/');
  const ref = `${documentId}#/${fragment}`;
  let validate = validators.get(ref);
  if (!validate) {
    validate = ajv.compile({ $ref: ref });
    validators.set(ref, validate);
  }
  return validate;
}

export interface ReceivedResponse {
  method: string;
  /** The request path, query string included. */
  url: string;
  status: number;
  headers: Headers;
  text: string;
}

/** Throws, saying what differs, when the response is not one the description allows. */
export function assertDocumentedResponse(response: ReceivedResponse): void {
  const method = response.method.toLowerCase();
  const path = new URL(response.url, 'http://api.invalid').pathname;
  if (internal.some((route) => route.method === method && route.matches(path))) return;
  const route = documented.find((candidate) => candidate.method === method && candidate.matches(path));
  const what = `${response.method} ${path} answered ${response.status}`;
  if (!route) {
    // No route: the catch-all's 404 or 405, in the envelope.
    check(validatorAt(['components', 'schemas', 'ErrorEnvelope']), parseJson(response.text, what), what);
    if (response.status !== 404 && response.status !== 405) throw new Error(`${what}, but no documented route matches`);
    return;
  }
  const responses = (document.paths[route.path] as Record<string, { responses: Record<string, { content?: Record<string, unknown> }> }>)[method]
    ?.responses as Record<string, { content?: Record<string, unknown> }>;
  const described = responses[String(response.status)];
  if (!described) throw new Error(`${what}; /openapi.json lists only ${Object.keys(responses).join(', ')} for ${method.toUpperCase()} ${route.path}`);
  const contentType = response.headers.get('content-type')?.split(';')[0]?.trim();
  if (!described.content) {
    if (response.text !== '') throw new Error(`${what} with a body; /openapi.json describes none`);
    return;
  }
  if (!contentType || !(contentType in described.content)) {
    throw new Error(`${what} as ${contentType}; /openapi.json describes ${Object.keys(described.content).join(', ')}`);
  }
  const validate = validatorAt(['paths', route.path, method, 'responses', String(response.status), 'content', contentType, 'schema']);
  if (contentType !== 'application/json' && contentType !== 'text/event-stream') {
    check(validate, response.text, what);
    return;
  }
  if (contentType === 'text/event-stream') {
    for (const data of eventData(response.text)) check(validate, parseJson(data, what), `${what}, event ${data}`);
    return;
  }
  check(validate, parseJson(response.text, what), what);
}

/** The `data:` of each event of a finished stream, without the `[DONE]` that ends a reply. */
function eventData(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => line.slice('data: '.length))
    .filter((data) => data !== '[DONE]');
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${what} with a body that is not JSON: ${text.slice(0, 200)}`);
  }
}

function check(validate: ValidateFunction, value: unknown, what: string): void {
  if (validate(value)) return;
  const problems = (validate.errors ?? []).map((error) => `${error.instancePath || '(root)'} ${error.message} ${JSON.stringify(error.params)}`);
  throw new Error(`${what} with a body /openapi.json does not allow:\n  ${problems.join('\n  ')}\nbody: ${JSON.stringify(value).slice(0, 1000)}`);
}
