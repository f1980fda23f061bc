import type { APIGatewayProxyEvent, APIGatewayProxyEventV2 } from 'aws-lambda';

/** Whether a Lambda event came from an API Gateway REST API (payload v1) rather than an HTTP API (v2). */
export function isRestApiEvent(event: unknown): event is APIGatewayProxyEvent {
  return typeof event === 'object' && event !== null && 'httpMethod' in event && 'resource' in event && !('routeKey' in event);
}

/**
 * A REST API proxy event (payload v1; the streaming path on AWS) in the HTTP API payload v2 shape the handlers
 * expect: routeKey from the matched resource, lower-cased headers (repeated ones joined with `, `, cookies moved
 * to `cookies`), query string values joined with `,` as HTTP API does, and the raw query string rebuilt.
 */
export function restToHttpApiEvent(event: APIGatewayProxyEvent): APIGatewayProxyEventV2 {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(event.headers ?? {})) {
    if (value !== undefined) headers[name.toLowerCase()] = value;
  }
  // multiValueHeaders holds every value of a repeated header; headers only the last.
  for (const [name, values] of Object.entries(event.multiValueHeaders ?? {})) {
    if (values?.length) headers[name.toLowerCase()] = values.join(', ');
  }
  const cookieHeader = headers.cookie;
  delete headers.cookie;
  const cookies = cookieHeader
    ?.split(';')
    .map((cookie) => cookie.trim())
    .filter(Boolean);

  const multiQuery: Record<string, string[]> = {};
  for (const [name, value] of Object.entries(event.queryStringParameters ?? {})) {
    if (value !== undefined) multiQuery[name] = [value];
  }
  for (const [name, values] of Object.entries(event.multiValueQueryStringParameters ?? {})) {
    if (values?.length) multiQuery[name] = values;
  }
  const query = Object.entries(multiQuery);
  const rawQueryString = query
    .flatMap(([name, values]) => values.map((value) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`))
    .join('&');

  const definedOnly = (record: Record<string, string | undefined> | null) =>
    Object.fromEntries(Object.entries(record ?? {}).filter((entry): entry is [string, string] => entry[1] !== undefined));
  const pathParameters = definedOnly(event.pathParameters);
  const stageVariables = definedOnly(event.stageVariables);

  const context = event.requestContext;
  const routeKey = `${event.httpMethod} ${event.resource}`;
  return {
    version: '2.0',
    routeKey,
    // `event.path` is the path below the stage (requestContext.path would include the stage).
    rawPath: event.path,
    rawQueryString,
    ...(cookies?.length ? { cookies } : {}),
    headers,
    ...(query.length ? { queryStringParameters: Object.fromEntries(query.map(([name, values]) => [name, values.join(',')])) } : {}),
    ...(Object.keys(pathParameters).length ? { pathParameters } : {}),
    ...(Object.keys(stageVariables).length ? { stageVariables } : {}),
    requestContext: {
      accountId: context.accountId,
      apiId: context.apiId,
      domainName: context.domainName ?? headers.host ?? '',
      domainPrefix: context.domainPrefix ?? '',
      http: {
        method: event.httpMethod,
        path: event.path,
        protocol: context.protocol,
        sourceIp: context.identity.sourceIp,
        userAgent: context.identity.userAgent ?? headers['user-agent'] ?? '',
      },
      requestId: context.requestId,
      routeKey,
      stage: context.stage,
      time: context.requestTime ?? new Date(context.requestTimeEpoch).toISOString(),
      timeEpoch: context.requestTimeEpoch,
    },
    ...(event.body !== null && event.body !== undefined ? { body: event.body } : {}),
    isBase64Encoded: event.isBase64Encoded,
  };
}
