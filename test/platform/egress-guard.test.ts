import type { LookupAddress } from 'node:dns';
import * as http from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { freePort } from '../../infra/local/free-port.ts';
import {
  assertUrlAllowed,
  classifyAddress,
  createGuardedLookup,
  EgressBlockedError,
  egressPolicyFromConfig,
  guardedFetch,
  guardedRequest,
  isAddressAllowed,
  policyForPort,
  OutboundNetworkError,
  staticEgressRefusal,
  OutboundTimeoutError,
  type AddressClass,
  type EgressPolicy,
  type Resolver,
} from '../../shared/platform/net/egress-guard.ts';
import { parseConfig } from '../../shared/platform/config.ts';
import { closeServer, listenOnLoopback } from '../support/loopback-server.ts';

// Only loopback may ever be connected to: see test/support/http-tripwire.ts.
vi.mock('node:http', async (importOriginal) => {
  const { loopbackOnlyHttp } = await import('../support/http-tripwire.ts');
  return loopbackOnlyHttp(await importOriginal<typeof import('node:http')>());
});

const closed: EgressPolicy = { allowLoopback: false };
const loopback: EgressPolicy = { allowLoopback: true };
const everything: EgressPolicy = { allowLoopback: true, allowPrivate: true };

describe('classifyAddress', () => {
  const cases: Array<[string, AddressClass]> = [
    ['8.8.8.8', 'public'],
    ['93.184.216.34', 'public'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.1', 'public'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'shared'],
    ['100.127.255.255', 'shared'],
    ['100.128.0.1', 'public'],
    ['169.254.0.1', 'link-local'],
    ['169.254.169.254', 'metadata'],
    ['169.254.170.2', 'metadata'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['2606:4700:4700::1111', 'public'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['::', 'unspecified'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['fec0::1', 'private'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf::1', 'link-local'],
    ['fd00:ec2::254', 'metadata'],
    ['FD00:EC2:0:0:0:0:0:254', 'metadata'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'reserved'],
    ['2001:0::1', 'reserved'],
    ['100::1', 'reserved'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::FFFF:10.0.0.1', 'private'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:a9fe:a9fe', 'metadata'],
    ['::ffff:0.0.0.0', 'unspecified'],
    ['::ffff:8.8.8.8', 'public'],
    ['::ffff:0:127.0.0.1', 'loopback'],
    ['::127.0.0.1', 'loopback'],
    ['64:ff9b::10.0.0.1', 'private'],
    ['64:ff9b::808:808', 'public'],
    ['64:ff9b:1::1', 'private'],
    ['2002:7f00:1::', 'loopback'],
    ['2002:a9fe:a9fe::1', 'metadata'],
    ['2002:808:808::1', 'public'],
    ['not-an-ip', 'invalid'],
    ['', 'invalid'],
    ['127.1', 'invalid'],
  ];

  it.each(cases)('%s is %s', (address, expected) => {
    // Act / Assess
    expect(classifyAddress(address)).toBe(expected);
  });
});

describe('policy', () => {
  it('allows public addresses always, loopback only when configured, private only with allowPrivate', () => {
    // Act / Assess
    expect(isAddressAllowed('8.8.8.8', closed)).toBe(true);
    expect(isAddressAllowed('127.0.0.1', closed)).toBe(false);
    expect(isAddressAllowed('127.0.0.1', loopback)).toBe(true);
    expect(isAddressAllowed('::1', loopback)).toBe(true);
    expect(isAddressAllowed('10.0.0.1', loopback)).toBe(false);
    expect(isAddressAllowed('169.254.1.1', loopback)).toBe(false);
    expect(isAddressAllowed('10.0.0.1', everything)).toBe(true);
    expect(isAddressAllowed('100.64.0.1', everything)).toBe(true);
    expect(isAddressAllowed('fe80::1', everything)).toBe(true);
  });

  it('never allows metadata, unspecified, multicast, reserved or invalid addresses', () => {
    // Act / Assess
    for (const address of ['169.254.169.254', 'fd00:ec2::254', '0.0.0.0', '::', '224.0.0.1', '240.0.0.1', 'nope']) {
      expect(isAddressAllowed(address, everything), address).toBe(false);
    }
  });

  it('opens loopback only on the configured ports and never allows private ranges from configuration', () => {
    // Act / Assess
    expect(egressPolicyFromConfig({ LOOPBACK_EGRESS_PORTS: [[8080, 8080]], EGRESS_DENIED_PORTS: [[3000, 3000]] })).toEqual({
      allowLoopback: true,
      loopbackPorts: [[8080, 8080]],
      deniedPorts: [[3000, 3000]],
      allowPrivate: false,
    });
    expect(egressPolicyFromConfig({ LOOPBACK_EGRESS_PORTS: [], EGRESS_DENIED_PORTS: [] })).toMatchObject({ allowLoopback: false, allowPrivate: false });
  });
});

/** A resolver answering from a table, recording the options it was given; no DNS traffic. */
function fakeResolver(table: Record<string, string[]>): Resolver & { calls: Array<{ hostname: string; family: unknown }> } {
  const calls: Array<{ hostname: string; family: unknown }> = [];
  const resolver = ((hostname, options, callback) => {
    calls.push({ hostname, family: options.family });
    const addresses = table[hostname];
    if (!addresses) {
      const error: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
      error.code = 'ENOTFOUND';
      return process.nextTick(callback, error, []);
    }
    const answer: LookupAddress[] = addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    process.nextTick(callback, null, answer);
  }) as Resolver & { calls: typeof calls };
  resolver.calls = calls;
  return resolver;
}

function lookupOnce(
  policy: EgressPolicy,
  resolver: Resolver,
  hostname: string,
  options: { all?: boolean; family?: number },
): Promise<{ error: NodeJS.ErrnoException | null; address: unknown; family: unknown }> {
  const lookup = createGuardedLookup(policy, resolver);
  return new Promise((resolve) => {
    lookup(hostname, options, (error, address, family) => resolve({ error, address, family }));
  });
}

describe('createGuardedLookup', () => {
  const resolver = fakeResolver({
    'api.example.com': ['93.184.216.34', '2606:2800:220:1::1'],
    'mixed.example.com': ['93.184.216.34', '10.0.0.7'],
    'metadata.example.com': ['169.254.169.254'],
    'mapped.example.com': ['::ffff:127.0.0.1'],
    'empty.example.com': [],
  });

  it('answers every address when Node asks for all of them', async () => {
    // Act
    const answer = await lookupOnce(closed, resolver, 'api.example.com', { all: true });

    // Assess
    expect(answer.error).toBeNull();
    expect(answer.address).toEqual([
      { address: '93.184.216.34', family: 4 },
      { address: '2606:2800:220:1::1', family: 6 },
    ]);
  });

  it('answers the first address and its family when Node asks for one, passing the family through', async () => {
    // Act
    const answer = await lookupOnce(closed, resolver, 'api.example.com', { family: 4 });

    // Assess
    expect(answer).toEqual({ error: null, address: '93.184.216.34', family: 4 });
    expect(resolver.calls.at(-1)).toEqual({ hostname: 'api.example.com', family: 4 });
  });

  it('refuses a name when ANY of its addresses is disallowed, naming the host but not the address', async () => {
    // Act
    const answer = await lookupOnce(closed, resolver, 'mixed.example.com', { all: true });

    // Assess
    expect(answer.error).toBeInstanceOf(EgressBlockedError);
    expect(answer.error).toMatchObject({ code: 'EGRESS_BLOCKED', hostname: 'mixed.example.com', addressClass: 'private' });
    expect(answer.error?.message).toContain('mixed.example.com');
    expect(answer.error?.message).not.toContain('10.0.0.7');
  });

  it('refuses metadata and IPv4-mapped loopback answers even with everything else allowed', async () => {
    // Act
    const metadata = await lookupOnce(everything, resolver, 'metadata.example.com', { all: true });
    const mapped = await lookupOnce(closed, resolver, 'mapped.example.com', {});

    // Assess
    expect(metadata.error).toMatchObject({ code: 'EGRESS_BLOCKED', addressClass: 'metadata' });
    expect(mapped.error).toMatchObject({ code: 'EGRESS_BLOCKED', addressClass: 'loopback' });
  });

  it('passes resolution failures through and treats an empty answer as not found', async () => {
    // Act
    const missing = await lookupOnce(closed, resolver, 'missing.example.com', { all: true });
    const empty = await lookupOnce(closed, resolver, 'empty.example.com', { all: true });

    // Assess
    expect(missing.error?.code).toBe('ENOTFOUND');
    expect(empty.error?.code).toBe('ENOTFOUND');
  });

  it('judges IP literals itself without resolving', async () => {
    // Prepare
    const calls = resolver.calls.length;

    // Act
    const blocked = await lookupOnce(closed, resolver, '127.0.0.1', { all: true });
    const allowed = await lookupOnce(loopback, resolver, '127.0.0.1', {});

    // Assess
    expect(blocked.error).toBeInstanceOf(EgressBlockedError);
    expect(allowed).toEqual({ error: null, address: '127.0.0.1', family: 4 });
    expect(resolver.calls.length).toBe(calls);
  });

  it('assertUrlAllowed resolves localhost for real and refuses it without loopback', async () => {
    // Act / Assess
    await expect(assertUrlAllowed(new URL('http://localhost/'), closed)).rejects.toBeInstanceOf(EgressBlockedError);
    await expect(assertUrlAllowed(new URL('http://[::1]/'), closed)).rejects.toBeInstanceOf(EgressBlockedError);
    await expect(assertUrlAllowed(new URL('http://localhost/'), loopback)).resolves.toBeUndefined();
  });
});

describe('guardedRequest', () => {
  let server: http.Server;
  let port: number;
  let connections = 0;
  const requests: Array<{ method: string | undefined; url: string | undefined }> = [];

  beforeAll(async () => {
    server = http.createServer((request, response) => {
      requests.push({ method: request.method, url: request.url });
      const path = new URL(request.url ?? '/', 'http://x').pathname;
      if (path === '/slow') return; // never answers
      if (path === '/redirect') {
        response.writeHead(302, { location: '/target' }).end('moved');
        return;
      }
      if (path === '/big') {
        response.writeHead(200, { 'content-type': 'text/plain' });
        response.end('a'.repeat(50_000));
        return;
      }
      if (path === '/drip') {
        // Headers at once, then a body that never finishes: the timeout must cover the whole response.
        response.writeHead(200, { 'content-type': 'text/plain' });
        response.write('partial');
        return;
      }
      response.writeHead(200, { 'content-type': 'text/plain', 'x-path': path }).end(`hello ${request.method}`);
    });
    server.on('connection', () => {
      connections += 1;
    });
    port = await listenOnLoopback(server);
  });
  afterAll(() => closeServer(server));

  const init = { method: 'GET', headers: {}, timeoutMs: 2000, maxResponseBytes: 1024 };

  it('returns status, headers and body from an allowed loopback server', async () => {
    // Act
    const response = await guardedRequest(new URL(`http://127.0.0.1:${port}/hi`), init, loopback);

    // Assess
    expect(response.status).toBe(200);
    expect(response.headers['x-path']).toBe('/hi');
    expect(response.body.toString()).toBe('hello GET');
    expect(response.truncated).toBe(false);
  });

  it('reaches localhost through the guarded lookup when loopback is allowed', async () => {
    // Act
    const response = await guardedRequest(new URL(`http://localhost:${port}/named`), init, loopback);

    // Assess
    expect(response.status).toBe(200);
  });

  it('returns a redirect as is, without following it', async () => {
    // Prepare
    const before = requests.length;

    // Act
    const response = await guardedRequest(new URL(`http://127.0.0.1:${port}/redirect`), init, loopback);

    // Assess
    expect(response.status).toBe(302);
    expect(response.headers.location).toBe('/target');
    expect(requests.slice(before).map((request) => request.url)).toEqual(['/redirect']);
  });

  it('cuts the body at maxResponseBytes and marks it truncated', async () => {
    // Act
    const response = await guardedRequest(new URL(`http://127.0.0.1:${port}/big`), init, loopback);

    // Assess
    expect(response.body.length).toBe(1024);
    expect(response.truncated).toBe(true);
  });

  it('keeps a body of exactly maxResponseBytes whole', async () => {
    // Act
    const response = await guardedRequest(new URL(`http://127.0.0.1:${port}/x`), { ...init, maxResponseBytes: 'hello GET'.length }, loopback);

    // Assess
    expect(response.body.toString()).toBe('hello GET');
    expect(response.truncated).toBe(false);
  });

  it('times out in total, also when the headers came in time but the body does not finish', async () => {
    for (const path of ['/slow', '/drip']) {
      // Prepare
      const start = performance.now();

      // Act
      const error = await guardedRequest(new URL(`http://127.0.0.1:${port}${path}`), { ...init, timeoutMs: 300 }, loopback).catch((e: unknown) => e);

      // Assess
      expect(error, path).toBeInstanceOf(OutboundTimeoutError);
      // The servers never finish: any end well short of the test's own time limit is the timeout's.
      expect(performance.now() - start).toBeLessThan(10_000);
    }
  });

  it('stops when the signal aborts, rejecting with its reason', async () => {
    // Prepare
    const controller = new AbortController();
    const reason = new Error('turn cancelled');
    setTimeout(() => controller.abort(reason), 50);

    // Act
    const error = await guardedRequest(new URL(`http://127.0.0.1:${port}/slow`), { ...init, signal: controller.signal }, loopback).catch((e: unknown) => e);

    // Assess
    expect(error).toBe(reason);
  });

  it('does not start when the signal is already aborted', async () => {
    // Prepare
    const before = connections;

    // Act
    const error = await guardedRequest(new URL(`http://127.0.0.1:${port}/x`), { ...init, signal: AbortSignal.abort() }, loopback).catch((e: unknown) => e);

    // Assess
    expect((error as Error).name).toBe('AbortError');
    expect(connections).toBe(before);
  });

  it('reports refused connections as OutboundNetworkError without the address', async () => {
    // Prepare: a port nobody listens on.
    const sparePort = await freePort();

    // Act
    const error = await guardedRequest(new URL(`http://localhost:${sparePort}/`), init, loopback).catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(OutboundNetworkError);
    expect(error).toMatchObject({ code: 'OUTBOUND_NETWORK_ERROR', reason: 'ECONNREFUSED' });
    expect((error as Error).message).toBe('Could not reach localhost: connection refused.');
  });

  it('refuses loopback, private, link-local, metadata and unspecified targets before any connection', async () => {
    // Prepare
    const before = { connections, requests: requests.length };
    const targets = [
      `http://127.0.0.1:${port}/`,
      `http://localhost:${port}/`,
      `http://[::1]:${port}/`,
      `http://0.0.0.0:${port}/`,
      `http://[::ffff:127.0.0.1]:${port}/`,
      `http://2130706433:${port}/`,
      `http://169.254.169.254/latest/meta-data/`,
      `http://10.0.0.1:${port}/`,
      `http://192.168.1.1:${port}/`,
      `https://[fd00:ec2::254]/`,
    ];

    // Act
    const errors = await Promise.all(targets.map((target) => guardedRequest(new URL(target), init, closed).catch((e: unknown) => e)));

    // Assess
    for (const [index, error] of errors.entries()) expect(error, targets[index]).toBeInstanceOf(EgressBlockedError);
    expect(connections).toBe(before.connections);
    expect(requests.length).toBe(before.requests);
  });

  it('keeps private and metadata targets blocked when loopback is allowed', async () => {
    // Act
    const errors = await Promise.all(
      ['http://10.0.0.1/', 'http://169.254.169.254/', 'http://[fe80::1]/', 'http://100.64.0.1/'].map((target) =>
        guardedRequest(new URL(target), init, loopback).catch((e: unknown) => e),
      ),
    );

    // Assess
    for (const error of errors) expect(error).toBeInstanceOf(EgressBlockedError);
  });

  it('has its tripwire armed: a host other than loopback never reaches node:http', async () => {
    // Act: a public name the policy allows; the mocked node:http refuses it before any lookup or connect.
    const error = await guardedRequest(new URL('http://tripwire.example/'), init, everything).catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(OutboundNetworkError);
    expect(((error as Error).cause as Error).message).toMatch(/^tripwire/);
  });

  it('refuses schemes other than http and https', async () => {
    // Act
    const error = await guardedRequest(new URL('file:///etc/passwd'), init, everything).catch((e: unknown) => e);

    // Assess
    expect(error).toMatchObject({ code: 'OUTBOUND_NETWORK_ERROR', reason: 'ERR_UNSUPPORTED_PROTOCOL' });
  });
});

describe('guardedFetch', () => {
  let server: http.Server;
  let port: number;
  let connections = 0;
  let finish: (() => void) | undefined;

  beforeAll(async () => {
    server = http.createServer((request, response) => {
      // Streams: the first chunk now, the rest when the test says so.
      response.writeHead(200, { 'content-type': 'text/event-stream', 'x-method': request.method ?? '' });
      response.write('data: first\n\n');
      finish = () => response.end('data: second\n\n');
    });
    server.on('connection', () => {
      connections += 1;
    });
    port = await listenOnLoopback(server);
  });
  afterAll(() => closeServer(server));

  it('streams the body as it arrives from an allowed server', async () => {
    const response = await guardedFetch(loopback)(`http://127.0.0.1:${port}/v1/chat`, { method: 'POST', body: '{}', headers: { authorization: 'Bearer k' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-method')).toBe('POST');
    const reader = response.body!.getReader();
    // The first chunk arrives while the server still holds the response open.
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: first\n\n');
    finish?.();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: second\n\n');
    expect((await reader.read()).done).toBe(true);
  });

  it('refuses a disallowed target before connecting', async () => {
    const before = connections;
    await expect(guardedFetch(closed)(`http://127.0.0.1:${port}/`)).rejects.toBeInstanceOf(EgressBlockedError);
    await expect(guardedFetch(everything)('http://169.254.169.254/latest/meta-data/')).rejects.toBeInstanceOf(EgressBlockedError);
    expect(connections).toBe(before);
  });

  it('ends the body with the abort reason when the caller aborts', async () => {
    const controller = new AbortController();
    const response = await guardedFetch(loopback)(`http://127.0.0.1:${port}/`, { signal: controller.signal });
    const reader = response.body!.getReader();
    await reader.read();
    controller.abort(new Error('turn over'));
    await expect(reader.read()).rejects.toThrow();
    finish?.();
  });
});

describe('ports', () => {
  const opened: EgressPolicy = { allowLoopback: true, loopbackPorts: [[8080, 8080], [9000, 9099]], deniedPorts: [[9050, 9050]] };

  it('opens loopback on the listed ports only, and never on a denied one', () => {
    // Act / Assess
    expect(policyForPort(opened, 8080)).toEqual({ allowLoopback: true, allowPrivate: false });
    expect(policyForPort(opened, 9099)).toEqual({ allowLoopback: true, allowPrivate: false });
    expect(policyForPort(opened, 8081)).toEqual({ allowLoopback: false, allowPrivate: false });
    expect(policyForPort(opened, 9050)).toBe('denied');
  });

  it('refuses a denied port on any address, before connecting', async () => {
    // Prepare
    const init = { method: 'GET', headers: {}, timeoutMs: 1000, maxResponseBytes: 100 };

    // Act
    const errors = await Promise.all(
      ['http://127.0.0.1:9050/', 'http://93.184.215.14:9050/', 'http://tripwire.example:9050/'].map((url) =>
        guardedRequest(new URL(url), init, opened).catch((error: unknown) => error),
      ),
    );

    // Assess
    for (const error of errors) expect(error).toMatchObject({ code: 'EGRESS_BLOCKED', addressClass: 'platform-port' });
  });

  it('refuses loopback on a port that is not listed', async () => {
    // Act
    const error = await guardedRequest(new URL('http://127.0.0.1:8081/'), { method: 'GET', headers: {}, timeoutMs: 1000, maxResponseBytes: 100 }, opened).catch(
      (caught: unknown) => caught,
    );

    // Assess
    expect(error).toMatchObject({ code: 'EGRESS_BLOCKED', addressClass: 'loopback' });
  });

  it('judges from the URL alone what it can (the check tool creation shares), and leaves other names to resolution', () => {
    // Act / Assess
    const refusal = (url: string) => staticEgressRefusal(new URL(url), opened);
    expect(refusal('http://localhost:8081/')).toMatchObject({ code: 'EGRESS_BLOCKED', addressClass: 'loopback' });
    expect(refusal('http://api.LOCALHOST./')).toMatchObject({ code: 'EGRESS_BLOCKED', addressClass: 'loopback' });
    expect(refusal('http://metadata.google.internal/')).toMatchObject({ code: 'EGRESS_BLOCKED', addressClass: 'metadata' });
    expect(refusal('http://[fd00:ec2::254]/')).toMatchObject({ code: 'EGRESS_BLOCKED', addressClass: 'metadata' });
    expect(refusal('http://example.com:9050/')).toMatchObject({ code: 'EGRESS_BLOCKED', addressClass: 'platform-port' });
    expect(refusal('ftp://example.com/')).toMatchObject({ code: 'OUTBOUND_NETWORK_ERROR', reason: 'ERR_UNSUPPORTED_PROTOCOL' });
    for (const allowed of ['http://localhost:8080/', 'https://internal.example.com/', 'https://93.184.215.14/']) expect(refusal(allowed), allowed).toBeUndefined();
  });

  it('reads LOOPBACK_EGRESS_PORTS as ports and ranges, and refuses anything else at start-up', () => {
    // Act / Assess
    expect(parseConfig({ LOOPBACK_EGRESS_PORTS: '8080, 9000-9099' }).LOOPBACK_EGRESS_PORTS).toEqual([[8080, 8080], [9000, 9099]]);
    expect(parseConfig({}).LOOPBACK_EGRESS_PORTS).toEqual([]);
    for (const bad of ['0', '70000', '9-1', 'http', '80-']) {
      expect(() => parseConfig({ LOOPBACK_EGRESS_PORTS: bad }), bad).toThrow(/LOOPBACK_EGRESS_PORTS/);
    }
  });
});
