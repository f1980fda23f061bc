import fc from 'fast-check';
import * as http from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { freePort } from '../../infra/local/free-port.ts';
import type { EgressPolicy } from '../../shared/platform/net/egress-guard.ts';
import { executeApiTool, type ApiToolDefinition, type ToolExecution } from '../../shared/agents/api-tool-executor.ts';
import { closeServer, listenOnLoopback } from '../support/loopback-server.ts';

// Only loopback may ever be connected to: see test/support/http-tripwire.ts.
vi.mock('node:http', async (importOriginal) => {
  const { loopbackOnlyHttp } = await import('../support/http-tripwire.ts');
  return loopbackOnlyHttp(await importOriginal<typeof import('node:http')>());
});

interface Recorded {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  rawHeaders: string[];
  body: Buffer;
}

const png = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a3b1d1b60000000049454e44ae426082',
  'hex',
);
const invalidUtf8 = Buffer.from([0xff, 0xfe, 0x00, 0x81, 0xc3, 0x28, 0xa0, 0xa1, 0xe2, 0x28, 0xa1]);

/** What each path of the test server answers. */
const routes: Record<string, (response: http.ServerResponse, recorded: Recorded) => void> = {
  '/echo': (response, recorded) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ method: recorded.method, url: recorded.url, body: recorded.body.toString() }));
  },
  '/json': (response) => response.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end('{"temp": 21,  "unit":"°C"}'),
  '/problem': (response) => response.writeHead(200, { 'content-type': 'application/problem+json' }).end('{"ok":true}'),
  '/text': (response) => response.writeHead(200, { 'content-type': 'text/plain' }).end('Sunny in Zürich'),
  '/latin1': (response) => response.writeHead(200, { 'content-type': 'text/plain; charset=iso-8859-1' }).end(Buffer.from('Zürich', 'latin1')),
  '/png': (response) => response.writeHead(200, { 'content-type': 'image/png' }).end(png),
  '/octet': (response) => response.writeHead(200, { 'content-type': 'application/octet-stream' }).end(invalidUtf8),
  '/untyped-binary': (response) => response.end(invalidUtf8),
  '/json-lies': (response) => response.writeHead(200, { 'content-type': 'application/json' }).end(invalidUtf8),
  '/empty': (response) => response.writeHead(204).end(),
  '/fail': (response) => response.writeHead(500, { 'content-type': 'text/plain' }).end('boom: database down'),
  '/fail-long': (response) => response.writeHead(503, { 'content-type': 'text/plain' }).end('é'.repeat(3000)),
  '/fail-empty': (response) => response.writeHead(502).end(),
  '/redirect': (response) => response.writeHead(302, { location: '/json' }).end('moved'),
  '/big': (response) => response.writeHead(200, { 'content-type': 'text/plain' }).end('a'.repeat(100_000)),
  '/big-unicode': (response) => response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end('€'.repeat(1000)),
  '/big-binary': (response) => response.writeHead(200, { 'content-type': 'image/png', 'content-length': '70000' }).end(Buffer.alloc(70_000)),
  '/slow': () => {
    // Never answers; the client gives up.
  },
};

let server: http.Server;
let port: number;
let connections = 0;
const requests: Recorded[] = [];

beforeAll(async () => {
  server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const recorded: Recorded = {
        method: request.method ?? '',
        url: request.url ?? '',
        headers: request.headers,
        rawHeaders: request.rawHeaders,
        body: Buffer.concat(chunks),
      };
      requests.push(recorded);
      const path = (request.url ?? '/').split('?')[0] as string;
      const route = routes[path] ?? routes[`/${path.split('/')[1]}`] ?? routes['/echo'];
      route?.(response, recorded);
    });
  });
  server.on('connection', () => {
    connections += 1;
  });
  port = await listenOnLoopback(server);
});
afterAll(() => closeServer(server));
beforeEach(() => {
  requests.length = 0;
});

const loopback: EgressPolicy = { allowLoopback: true };
const closed: EgressPolicy = { allowLoopback: false };
const options = { timeoutMs: 2000, maxResponseBytes: 64 * 1024, policy: loopback };

function tool(url: string, method = 'GET', headers: Record<string, string> = {}): ApiToolDefinition {
  return { name: 'TEST_TOOL', apiTool: { url, method, headers } };
}

function run(
  definition: ApiToolDefinition,
  args: Record<string, unknown> = {},
  extra: { sessionVariables?: Record<string, unknown>; toolCallId?: string; signal?: AbortSignal; options?: Partial<typeof options> } = {},
): Promise<ToolExecution> {
  return executeApiTool(
    definition,
    args,
    { toolCallId: extra.toolCallId ?? 'call_1', sessionVariables: extra.sessionVariables ?? {}, ...(extra.signal ? { signal: extra.signal } : {}) },
    { ...options, ...extra.options },
  );
}

const base = (): string => `http://127.0.0.1:${port}`;

describe('URL placeholders', () => {
  it('fills path and query, URL-encoding spaces, &, /, = and unicode, arguments over session variables', async () => {
    // Prepare
    const definition = tool(`${base()}/echo/users/{{id}}/orders?q={{q}}&lang={{ lang }}`);
    const args = { id: 'a b&c/d 東京', q: 'x&y=z #1' };

    // Act
    const execution = await run(definition, args, { sessionVariables: { id: 'from-session', lang: 'de' } });

    // Assess
    expect(execution.status).toBe('SUCCESS');
    expect(requests).toHaveLength(1);
    const url = new URL(requests[0]?.url as string, 'http://x');
    expect(requests[0]?.url).toBe('/echo/users/a%20b%26c%2Fd%20%E6%9D%B1%E4%BA%AC/orders?q=x%26y%3Dz%20%231&lang=de');
    expect(decodeURIComponent(url.pathname.split('/')[3] as string)).toBe('a b&c/d 東京');
    expect(url.searchParams.get('q')).toBe('x&y=z #1');
    expect(url.searchParams.get('lang')).toBe('de');
  });

  it('JSON-stringifies non-string values and leaves unknown placeholders as they are', async () => {
    // Act
    const execution = await run(tool(`${base()}/echo/{{n}}/{{missing}}?flag={{flag}}&raw={{other}}`), { n: 42, flag: true });

    // Assess
    expect(execution.status).toBe('SUCCESS');
    expect(requests[0]?.url).toBe('/echo/42/%7B%7Bmissing%7D%7D?flag=true&raw={{other}}');
  });

  it('does not append arguments that no placeholder uses to a GET query', async () => {
    // Act
    await run(tool(`${base()}/echo?city={{city}}`), { city: 'Bern', extra: 'unused' });

    // Assess
    expect(requests[0]?.url).toBe('/echo?city=Bern');
    expect(requests[0]?.body.length).toBe(0);
  });

  it('fills placeholders in the host position and in the user info', async () => {
    // Act
    const named = await run(tool(`http://{{host}}:${port}/echo`), { host: '127.0.0.1' });
    const part = await run(tool(`http://127.0.0.{{last}}:{{port}}/echo`), { last: 1, port: String(port) });
    const credentials = await run(tool(`http://user:{{password}}@127.0.0.1:${port}/echo`), { password: 'p@ss:w/rd #1' });

    // Assess
    expect([named.status, part.status, credentials.status]).toEqual(['SUCCESS', 'SUCCESS', 'SUCCESS']);
    expect(requests).toHaveLength(3);
    expect(requests[2]?.headers.authorization).toBe(`Basic ${Buffer.from('user:p@ss:w/rd #1').toString('base64')}`);
  });

  it('refuses, without a request, host placeholders that are unknown, empty or would smuggle a path, port or user', async () => {
    // Prepare
    const cases: Array<[string, Record<string, unknown>]> = [
      [`http://{{host}}:${port}/echo`, {}],
      [`http://{{host}}/echo`, { host: '' }],
      [`http://{{host}}/127.0.0.1`, { host: '' }],
      [`http://{{host}}:${port}/echo`, { host: `127.0.0.1:${port}/echo#` }],
      [`http://{{host}}/echo`, { host: `127.0.0.1:${port}` }],
      [`http://{{host}}/echo`, { host: `evil.example@127.0.0.1:${port}` }],
      [`http://{{host}}/echo`, { host: '[::1]' }],
      [`http://{{host}}/echo`, { host: '127.0.0.1\\evil' }],
      [`http://ab{{host}}/echo`, { host: '{{other}}', other: '127.0.0.1' }],
    ];

    // Act
    const executions = await Promise.all(cases.map(([url, args]) => run(tool(url), args)));

    // Assess
    for (const [index, execution] of executions.entries()) {
      expect(execution, cases[index]?.[0]).toMatchObject({ status: 'ERROR', error: { code: 'TOOL_INVALID_URL' } });
      expect(execution.httpStatus).toBeUndefined();
    }
    expect(requests).toHaveLength(0);
  });

  it("refuses arguments that would make a '.' or '..' path segment, but allows dots inside a segment or in the query", async () => {
    // Act
    const climbing = await Promise.all(['..', '.', '%2e%2e'].map((id) => run(tool(`${base()}/echo/users/{{id}}/profile`), { id })));
    const fine = await run(tool(`${base()}/echo/files/{{name}}?up={{up}}`), { name: 'report..v2.pdf', up: '..' });

    // Assess
    expect(climbing.map((execution) => execution.error?.code)).toEqual(['TOOL_INVALID_URL', 'TOOL_INVALID_URL', undefined]);
    expect(requests.map((request) => request.url)).toEqual(['/echo/users/%252e%252e/profile', '/echo/files/report..v2.pdf?up=..']);
    expect(fine.status).toBe('SUCCESS');
  });

  it('blocks a private address supplied through a host placeholder', async () => {
    // Act
    const execution = await run(tool('http://{{host}}/latest/meta-data/'), { host: '169.254.169.254' });

    // Assess
    expect(execution.error?.code).toBe('EGRESS_BLOCKED');
  });
});

describe('headers', () => {
  it('fills header placeholders from arguments and session variables, stripping CR/LF injection', async () => {
    // Prepare
    const definition = tool(`${base()}/echo`, 'GET', {
      'X-Api-Key': '{{secret}}',
      'X-User': 'user-{{ userId }}',
      'X-Static': 'static value',
      'X-Unknown': '{{nope}}',
    });

    // Act
    const execution = await run(definition, { userId: 'u1\r\nX-Injected: yes\r\n\r\nGET /smuggled HTTP/1.1' }, { sessionVariables: { secret: 's3cr3t' } });

    // Assess
    expect(execution.status).toBe('SUCCESS');
    expect(requests).toHaveLength(1);
    const headers = requests[0]?.headers ?? {};
    expect(headers['x-api-key']).toBe('s3cr3t');
    expect(headers['x-user']).toBe('user-u1X-Injected: yesGET /smuggled HTTP/1.1');
    expect(headers['x-injected']).toBeUndefined();
    expect(headers['x-static']).toBe('static value');
    expect(headers['x-unknown']).toBe('{{nope}}');
  });

  it('sends non-ASCII header values as UTF-8 bytes instead of failing', async () => {
    // Act
    const execution = await run(tool(`${base()}/echo`, 'GET', { 'X-City': '{{city}}' }), { city: 'Zürich 東京' });

    // Assess
    expect(execution.status).toBe('SUCCESS');
    expect(Buffer.from(requests[0]?.headers['x-city'] as string, 'latin1').toString('utf8')).toBe('Zürich 東京');
  });

  it('always sends Idempotency-Key = the tool call id, overriding the tool, plus user-agent and accept', async () => {
    // Act
    await run(tool(`${base()}/echo`, 'POST', { 'idempotency-key': 'customer-value', 'IDEMPOTENCY-KEY': 'other' }), {}, { toolCallId: 'call_abc123' });

    // Assess
    const recorded = requests[0] as Recorded;
    expect(recorded.headers['idempotency-key']).toBe('call_abc123');
    expect(recorded.rawHeaders.filter((name) => name.toLowerCase() === 'idempotency-key')).toHaveLength(1);
    expect(recorded.headers['user-agent']).toBe('agent-platform-tool/1');
    expect(recorded.headers.accept).toBe('application/json, text/plain;q=0.9, */*;q=0.5');
  });

  it('never takes framing or hop-by-hop headers from the tool', async () => {
    // Act
    const execution = await run(
      tool(`${base()}/echo`, 'POST', { 'Content-Length': '1', 'Transfer-Encoding': 'chunked', Host: 'evil.example', Connection: 'close', Expect: '100-continue' }),
      { a: 1 },
    );

    // Assess
    expect(execution.status).toBe('SUCCESS');
    const recorded = requests[0] as Recorded;
    expect(recorded.body.toString()).toBe('{"a":1}');
    expect(recorded.headers['content-length']).toBe('7');
    expect(recorded.headers['transfer-encoding']).toBeUndefined();
    expect(recorded.headers.host).toBe(`127.0.0.1:${port}`);
    expect(recorded.headers.expect).toBeUndefined();
  });

  it("lets the tool choose its own content-type and user-agent", async () => {
    // Act
    await run(tool(`${base()}/echo`, 'POST', { 'Content-Type': 'application/vnd.api+json', 'User-Agent': 'custom/2' }), { a: 1 });

    // Assess
    expect(requests[0]?.headers['content-type']).toBe('application/vnd.api+json');
    expect(requests[0]?.headers['user-agent']).toBe('custom/2');
  });
});

describe('method and body', () => {
  it.each(['POST', 'PUT', 'PATCH', 'DELETE'])('%s sends the arguments as a JSON body', async (method) => {
    // Prepare
    const args = { city: 'Zürich', days: 3, nested: { units: ['C'] } };

    // Act
    const execution = await run(tool(`${base()}/echo/{{city}}`, method.toLowerCase()), args);

    // Assess
    expect(execution.status).toBe('SUCCESS');
    const recorded = requests[0] as Recorded;
    expect(recorded.method).toBe(method);
    expect(recorded.headers['content-type']).toBe('application/json');
    expect(JSON.parse(recorded.body.toString())).toEqual(args);
    expect(recorded.headers['content-length']).toBe(String(recorded.body.length));
  });

  it('GET sends no body and no content-type', async () => {
    // Act
    const execution = await run(tool(`${base()}/echo`, 'GET'), { city: 'Bern' });

    // Assess
    expect(execution.status).toBe('SUCCESS');
    const recorded = requests[0] as Recorded;
    expect(recorded.method).toBe('GET');
    expect(recorded.body.length).toBe(0);
    expect(recorded.headers['content-type']).toBeUndefined();
    expect(recorded.headers['transfer-encoding']).toBeUndefined();
  });
});

describe('responses', () => {
  it('returns a JSON body verbatim as text, with status and duration', async () => {
    // Act
    const execution = await run(tool(`${base()}/json`));

    // Assess
    expect(execution).toEqual({ status: 'SUCCESS', result: '{"temp": 21,  "unit":"°C"}', httpStatus: 200, durationMs: expect.any(Number) });
    expect(execution.durationMs).toBeGreaterThan(0);
  });

  it('returns +json and text bodies as text, decoding a declared charset', async () => {
    // Act
    const [problem, text, latin1] = await Promise.all([run(tool(`${base()}/problem`)), run(tool(`${base()}/text`)), run(tool(`${base()}/latin1`))]);

    // Assess
    expect(problem.result).toBe('{"ok":true}');
    expect(text.result).toBe('Sunny in Zürich');
    expect(latin1.result).toBe('Zürich');
  });

  it('describes binary bodies instead of returning or choking on them', async () => {
    // Act
    const [image, octet, untyped, lying] = await Promise.all(
      ['/png', '/octet', '/untyped-binary', '/json-lies'].map((path) => run(tool(`${base()}${path}`))),
    );

    // Assess
    expect(image).toMatchObject({ status: 'SUCCESS', httpStatus: 200, result: `[binary response: image/png, ${png.length} bytes]` });
    expect(octet).toMatchObject({ status: 'SUCCESS', result: `[binary response: application/octet-stream, ${invalidUtf8.length} bytes]` });
    expect(untyped).toMatchObject({ status: 'SUCCESS', result: `[binary response: unknown type, ${invalidUtf8.length} bytes]` });
    expect(lying).toMatchObject({ status: 'SUCCESS', result: `[binary response: application/json, ${invalidUtf8.length} bytes]` });
  });

  it('says so when a 2xx has no body', async () => {
    // Act
    const execution = await run(tool(`${base()}/empty`, 'DELETE'));

    // Assess
    expect(execution).toMatchObject({ status: 'SUCCESS', httpStatus: 204, result: '[empty response: HTTP 204]' });
  });

  it('returns a non-2xx as ERROR with the status and the start of the body', async () => {
    // Act
    const [fail, long, empty] = await Promise.all(['/fail', '/fail-long', '/fail-empty'].map((path) => run(tool(`${base()}${path}`))));

    // Assess
    expect(fail).toMatchObject({
      status: 'ERROR',
      httpStatus: 500,
      result: 'HTTP 500: boom: database down',
      error: { code: 'TOOL_HTTP_ERROR', message: 'HTTP 500: boom: database down' },
    });
    expect(long?.result).toBe(`HTTP 503: ${'é'.repeat(1024)}…`);
    expect(empty?.result).toBe('HTTP 502: Bad Gateway');
  });

  it('does not follow redirects', async () => {
    // Act
    const execution = await run(tool(`${base()}/redirect`));

    // Assess
    expect(execution).toMatchObject({ status: 'ERROR', httpStatus: 302, error: { code: 'TOOL_HTTP_ERROR' } });
    expect(execution.result).toBe('HTTP 302: moved (redirect to /json not followed)');
    expect(requests.map((request) => request.url)).toEqual(['/redirect']);
  });

  it('cuts an oversized body and marks where', async () => {
    // Act
    const execution = await run(tool(`${base()}/big`), {}, { options: { maxResponseBytes: 1000 } });

    // Assess
    expect(execution.status).toBe('SUCCESS');
    expect(execution.result).toBe(`${'a'.repeat(1000)}…[truncated at 1000 bytes]`);
  });

  it('cuts an oversized UTF-8 body without a broken character', async () => {
    // Act: the euro sign is 3 bytes; 1000 bytes end one byte into a character.
    const execution = await run(tool(`${base()}/big-unicode`), {}, { options: { maxResponseBytes: 1000 } });

    // Assess
    expect(execution.result).toBe(`${'€'.repeat(333)}…[truncated at 1000 bytes]`);
  });

  it('describes an oversized binary body by its declared length', async () => {
    // Act
    const execution = await run(tool(`${base()}/big-binary`), {}, { options: { maxResponseBytes: 1000 } });

    // Assess
    expect(execution.result).toBe('[binary response: image/png, 70000 bytes]');
  });
});

describe('failures', () => {
  it('times out after the timeout, not waiting for an answer that never comes', async () => {
    // Prepare
    const start = performance.now();

    // Act
    const execution = await run(tool(`${base()}/slow`), {}, { options: { timeoutMs: 300 } });

    // Assess
    const elapsed = performance.now() - start;
    expect(execution).toMatchObject({ status: 'ERROR', error: { code: 'TOOL_TIMEOUT' } });
    expect(execution.result).toBe('The request to 127.0.0.1 timed out after 300 ms.');
    expect(elapsed).toBeGreaterThanOrEqual(295);
    // Far above the timeout, so that a busy machine cannot fail it; the server never answers, so waiting would hang.
    expect(elapsed).toBeLessThan(10_000);
    expect(execution.durationMs).toBeGreaterThanOrEqual(295);
  });

  it('reports an unreachable server as TOOL_NETWORK_ERROR', async () => {
    // Prepare: a port nobody listens on.
    const sparePort = await freePort();

    // Act
    const execution = await run(tool(`http://127.0.0.1:${sparePort}/`));

    // Assess
    expect(execution).toMatchObject({ status: 'ERROR', error: { code: 'TOOL_NETWORK_ERROR' } });
    expect(execution.result).toBe('Could not reach 127.0.0.1: connection refused.');
  });

  it('returns TOOL_ABORTED when the turn is cancelled', async () => {
    // Prepare
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);

    // Act
    const execution = await run(tool(`${base()}/slow`), {}, { signal: controller.signal });

    // Assess
    expect(execution).toMatchObject({ status: 'ERROR', error: { code: 'TOOL_ABORTED' } });
  });

  it('refuses arguments that cannot be JSON', async () => {
    // Act
    const execution = await run(tool(`${base()}/echo`, 'POST'), { big: 1n });

    // Assess
    expect(execution).toMatchObject({ status: 'ERROR', error: { code: 'TOOL_INVALID_REQUEST' } });
    expect(requests).toHaveLength(0);
  });
});

describe('egress', () => {
  const blockedTargets = [
    '127.0.0.1',
    'localhost',
    '[::1]',
    '169.254.169.254',
    '10.0.0.1',
    '192.168.1.1',
    '0.0.0.0',
    '[::ffff:127.0.0.1]',
    '[::ffff:a9fe:a9fe]',
    '[fd00:ec2::254]',
  ];

  it('with loopback not allowed, blocks every internal target without any connection', async () => {
    // Prepare
    const before = connections;

    // Act
    const executions = await Promise.all(
      blockedTargets.map((host) => run(tool(`http://${host}:${port}/echo?x={{x}}`), { x: 1 }, { options: { policy: closed } })),
    );

    // Assess
    for (const [index, execution] of executions.entries()) {
      const host = blockedTargets[index] as string;
      expect(execution, host).toMatchObject({ status: 'ERROR', error: { code: 'EGRESS_BLOCKED' } });
      expect(execution.httpStatus).toBeUndefined();
      expect(execution.result).toContain(new URL(`http://${host}/`).hostname.replace(/^\[|\]$/g, ''));
    }
    expect(connections).toBe(before);
    expect(requests).toHaveLength(0);
  });

  it('blocks a name resolving to loopback at lookup, naming the host and not the address', async () => {
    // Prepare
    const before = connections;

    // Act
    const execution = await run(tool(`http://localhost:${port}/echo`), {}, { options: { policy: closed } });

    // Assess
    expect(execution.error?.code).toBe('EGRESS_BLOCKED');
    expect(execution.result).toBe('Request blocked: the address of localhost is not allowed for outbound requests.');
    expect(execution.result).not.toMatch(/127\.0\.0\.1|::1/);
    expect(connections).toBe(before);
  });

  it('with loopback allowed, reaches 127.0.0.1 but still blocks private and metadata addresses', async () => {
    // Act
    const local = await run(tool(`${base()}/json`), {}, { options: { policy: loopback } });
    const blocked = await Promise.all(
      ['10.0.0.1', '10.255.1.2', '169.254.169.254', '192.168.1.1', '100.64.0.1'].map((host) =>
        run(tool(`http://${host}/`), {}, { options: { policy: loopback } }),
      ),
    );

    // Assess
    expect(local.status).toBe('SUCCESS');
    for (const execution of blocked) expect(execution.error?.code).toBe('EGRESS_BLOCKED');
  });
});

describe('property', () => {
  const wellFormed = (value: string): string => value.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
  const anyString = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)), maxLength: 40 }),
    fc.constantFrom('..', '.', '/', '?', '#', '\\', '%2e%2e', '@127.0.0.1', '\r\nX-Evil: 1'),
  );

  it('never throws; a path argument lands in its own segment or is refused, and never leaves the host', async () => {
    await fc.assert(
      fc.asyncProperty(anyString, anyString, async (id, header) => {
        // Prepare
        requests.length = 0;

        // Act
        const execution = await run(tool(`${base()}/echo/items/{{id}}/detail`, 'POST', { 'X-Value': '{{header}}' }), { id, header });

        // Assess
        if (execution.status === 'ERROR') {
          expect(execution.error?.code).toBe('TOOL_INVALID_URL');
          expect(['.', '..']).toContain(id);
          expect(requests).toHaveLength(0);
          return;
        }
        expect(requests).toHaveLength(1);
        const segments = (requests[0]?.url as string).split('/');
        expect(segments).toHaveLength(5);
        expect(decodeURIComponent(segments[3] as string)).toBe(wellFormed(id));
        expect(requests[0]?.headers['x-value']).not.toMatch(/[\r\n]/);
      }),
      { numRuns: 150 },
    );
  });
});
