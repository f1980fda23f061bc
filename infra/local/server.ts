import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { accountInvocation } from '../../shared/platform/cost-accounting.ts';
import { functionTimeoutSeconds, pathMatcher, routeKeyOf, routePaths, type RouteGroup } from '../../shared/platform/http/route.ts';
import { installAwsLambdaGlobal, LocalResponseStream, streamingHandlerMarker } from './awslambda.ts';
import { localLambdaContext } from './lambda-context.ts';

type LambdaHandler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2 | string | object>;

type StreamingHandler = (event: APIGatewayProxyEventV2, stream: LocalResponseStream, context: Context) => Promise<void>;

const repoRoot = resolve(import.meta.dirname, '../..');
/** API Gateway HTTP API's own payload limit; our handlers enforce their smaller one. */
const gatewayMaxBodyBytes = 10 * 1024 * 1024;
const textContentType = /^(text\/|application\/(json|xml|x-www-form-urlencoded|[a-z0-9.+-]*\+json|[a-z0-9.+-]*\+xml)\b)/i;

interface LocalRoute {
  group: RouteGroup;
  routeKey: string;
  method: string;
  matches: (path: string) => Record<string, string> | undefined;
  literalSegments: number;
}

/**
 * Serves the route groups the way API Gateway does: each request becomes an HTTP API payload v2 event handed to
 * the very handler module that runs on Lambda; what no route matches goes to the catch-all group as `$default`.
 */
export function createLocalServer(groups: readonly RouteGroup[]): { server: Server; preload(): Promise<void> } {
  const routes: LocalRoute[] = groups
    .flatMap((group) =>
      Object.values(group.routes).flatMap((route) =>
        routePaths(route).map((path) => ({
          group,
          routeKey: routeKeyOf({ method: route.method, path }),
          method: route.method,
          matches: pathMatcher(path),
          literalSegments: path.split('/').filter((segment) => !segment.startsWith('{')).length,
        })),
      ),
    )
    // Like API Gateway, a literal segment wins over a path parameter.
    .sort((a, b) => b.literalSegments - a.literalSegments);
  installAwsLambdaGlobal();
  const catchAll = groups.find((group) => group.catchAll);
  const handlers = new Map<RouteGroup, Promise<LambdaHandler>>();
  const load = (group: RouteGroup): Promise<LambdaHandler> => {
    let loaded = handlers.get(group);
    if (!loaded) {
      loaded = import(pathToFileURL(join(repoRoot, group.entry)).href).then((module: { handler: LambdaHandler }) => module.handler);
      handlers.set(group, loaded);
    }
    return loaded;
  };

  const server = createServer(async (request, response) => {
    try {
      const url = new URL(request.url ?? '/', 'http://local');
      const method = (request.method ?? 'GET').toUpperCase();
      let pathParameters: Record<string, string> | undefined;
      const route = routes.find((candidate) => {
        if (candidate.method !== method) return false;
        pathParameters = candidate.matches(url.pathname);
        return pathParameters !== undefined;
      });
      const group = route?.group ?? catchAll;
      if (!group) return sendGatewayError(response, 404, 'Not Found');
      const body = await readBody(request);
      if (body === undefined) return sendGatewayError(response, 413, 'Request Entity Too Large');
      const event = toEvent(request, url, method, route?.routeKey ?? '$default', route ? pathParameters : undefined, body);
      const handler = await load(group);
      const context = localLambdaContext(`local-${group.name}`, event.requestContext.requestId, Date.now() + functionTimeoutSeconds(group) * 1000);
      // Streaming groups sit behind the REST API on AWS, the others behind the HTTP API (docs/streaming.md).
      const trigger = group.streaming ? 'rest-api' : 'http-api';
      if (streamingHandlerMarker in handler) {
        const stream = new LocalResponseStream(response);
        // A client that leaves mid-stream destroys the stream with an error; it ends that response, never the runtime.
        stream.on('error', () => undefined);
        await accountInvocation(group.name, trigger, () => (handler as unknown as StreamingHandler)(event, stream, context));
        return;
      }
      writeResult(response, await accountInvocation(group.name, trigger, () => handler(event, context)));
    } catch (error) {
      if ((error as { code?: string }).code === 'ABORT_ERROR') return;
      console.error(JSON.stringify({ level: 'ERROR', message: 'handler failed', error: String((error as Error)?.stack ?? error) }));
      if (!response.headersSent) sendGatewayError(response, 500, 'Internal Server Error');
      else response.destroy();
    }
  });
  server.keepAliveTimeout = 65_000;
  return { server, preload: async () => void (await Promise.all(groups.map(load))) };
}

function readBody(request: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolveBody, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= gatewayMaxBodyBytes) chunks.push(chunk);
    });
    request.on('end', () => resolveBody(size > gatewayMaxBodyBytes ? undefined : Buffer.concat(chunks)));
    request.on('error', reject);
    // A client that hangs up mid-body never sends the end.
    request.on('close', () => {
      if (!request.complete) reject(Object.assign(new Error('client disconnected'), { code: 'ABORT_ERROR' }));
    });
  });
}

function toEvent(
  request: IncomingMessage,
  url: URL,
  method: string,
  routeKey: string,
  pathParameters: Record<string, string> | undefined,
  body: Buffer,
): APIGatewayProxyEventV2 {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined && name !== 'cookie') headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  const queryStringParameters: Record<string, string> = {};
  for (const [name, value] of url.searchParams) {
    queryStringParameters[name] = name in queryStringParameters ? `${queryStringParameters[name]},${value}` : value;
  }
  const isText = textContentType.test(headers['content-type'] ?? 'application/json');
  const now = new Date();
  return {
    version: '2.0',
    routeKey,
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    ...(request.headers.cookie ? { cookies: request.headers.cookie.split(/;\s*/) } : {}),
    headers,
    ...(url.searchParams.size > 0 ? { queryStringParameters } : {}),
    ...(pathParameters && Object.keys(pathParameters).length > 0 ? { pathParameters } : {}),
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: 'local',
      http: {
        method,
        path: url.pathname,
        protocol: `HTTP/${request.httpVersion}`,
        sourceIp: request.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey,
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    ...(body.length > 0 ? { body: isText ? body.toString('utf8') : body.toString('base64') } : {}),
    isBase64Encoded: body.length > 0 && !isText,
  };
}

/** Applies API Gateway's rules for payload v2 results, including its inference for plain return values. */
function writeResult(response: ServerResponse, result: APIGatewayProxyStructuredResultV2 | string | object): void {
  const structured =
    typeof result === 'object' && result !== null && 'statusCode' in result
      ? (result as APIGatewayProxyStructuredResultV2)
      : { statusCode: 200, headers: { 'content-type': 'application/json' }, body: typeof result === 'string' ? result : JSON.stringify(result) };
  for (const [name, value] of Object.entries(structured.headers ?? {})) response.setHeader(name, String(value));
  if (structured.cookies?.length) response.setHeader('set-cookie', structured.cookies);
  response.statusCode = structured.statusCode ?? 200;
  const body = structured.body ?? '';
  response.end(structured.isBase64Encoded ? Buffer.from(body, 'base64') : body);
}

function sendGatewayError(response: ServerResponse, status: number, message: string): void {
  response.statusCode = status;
  response.setHeader('content-type', 'application/json');
  response.end(JSON.stringify({ message }));
}
