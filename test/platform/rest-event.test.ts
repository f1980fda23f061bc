import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { isRestApiEvent, restToHttpApiEvent } from '../../shared/platform/http/rest-event.ts';

function restEvent(overrides: Partial<APIGatewayProxyEvent> = {}): APIGatewayProxyEvent {
  return {
    resource: '/v1/chat/chat/sessions/{id}/messages',
    path: '/v1/chat/chat/sessions/abc/messages',
    httpMethod: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Api-Key': 'k', Cookie: 'a=1; b=2' },
    multiValueHeaders: { Accept: ['text/event-stream', 'application/json'] },
    queryStringParameters: { tag: 'b' },
    multiValueQueryStringParameters: { tag: ['a', 'b'] },
    pathParameters: { id: 'abc' },
    stageVariables: null,
    body: '{"content":"hi"}',
    isBase64Encoded: false,
    requestContext: {
      accountId: '123456789012',
      apiId: 'api',
      domainName: 'api.example.com',
      domainPrefix: 'api',
      protocol: 'HTTP/1.1',
      httpMethod: 'POST',
      identity: { sourceIp: '203.0.113.9', userAgent: 'curl/8' },
      path: '/live/v1/chat/chat/sessions/abc/messages',
      requestId: 'req-1',
      requestTimeEpoch: 1_767_225_600_000,
      resourceId: 'r',
      resourcePath: '/v1/chat/chat/sessions/{id}/messages',
      stage: 'live',
    } as APIGatewayProxyEvent['requestContext'],
    ...overrides,
  };
}

describe('restToHttpApiEvent', () => {
  it('recognizes REST API events and not HTTP API ones', () => {
    const rest = restEvent();
    expect(isRestApiEvent(rest)).toBe(true);
    expect(isRestApiEvent(restToHttpApiEvent(rest))).toBe(false);
  });

  it('gives the v2 fields the handlers read', () => {
    const event = restToHttpApiEvent(restEvent());
    expect(event.routeKey).toBe('POST /v1/chat/chat/sessions/{id}/messages');
    expect(event.rawPath).toBe('/v1/chat/chat/sessions/abc/messages');
    expect(event.requestContext.http.method).toBe('POST');
    expect(event.requestContext.requestId).toBe('req-1');
    expect(event.headers).toMatchObject({ 'content-type': 'application/json', 'x-api-key': 'k', accept: 'text/event-stream, application/json' });
    expect(event.headers).not.toHaveProperty('cookie');
    expect(event.cookies).toEqual(['a=1', 'b=2']);
    expect(event.queryStringParameters).toEqual({ tag: 'a,b' });
    expect(event.rawQueryString).toBe('tag=a&tag=b');
    expect(event.pathParameters).toEqual({ id: 'abc' });
    expect(event.body).toBe('{"content":"hi"}');
  });

  it('lets a handler built for the HTTP API answer a REST API event', async () => {
    const { handler } = await import('../../functions/edge/handler.ts');
    const context = { awsRequestId: 'req-2', getRemainingTimeInMillis: () => 10_000 } as unknown as Context;
    const health = await handler(restEvent({ resource: '/health', path: '/health', httpMethod: 'GET', body: null }) as never, context);
    expect(health).toMatchObject({ statusCode: 200, body: '{"status":"ok"}' });
    const missing = await handler(restEvent({ resource: '/{proxy+}', path: '/nowhere', httpMethod: 'GET', body: null }) as never, context);
    expect(missing.statusCode).toBe(404);
    expect(missing.headers?.['x-request-id']).toBe('req-1');
  });
});
