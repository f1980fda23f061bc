import * as http from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { assertUrlAllowed, EgressBlockedError, guardedRequest, type EgressPolicy } from '../../shared/platform/net/egress-guard.ts';
import { closeServer, listenOnLoopback } from '../support/loopback-server.ts';

/**
 * A DNS server under our control, in process: `rebind.test` answers a public address the first time it is asked and
 * loopback ever after, the classic rebinding trick against check-then-connect. Only loopback is ever answered for a
 * connect, so even a broken guard could only reach the local test server.
 */
const answers = vi.hoisted(() => ({ rebindCalls: 0 }));
vi.mock('node:dns', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:dns')>();
  const lookup = ((hostname: string, options: unknown, callback: (...args: unknown[]) => void) => {
    if (hostname !== 'rebind.test') return (actual.lookup as (...args: unknown[]) => void)(hostname, options, callback);
    answers.rebindCalls += 1;
    const address = answers.rebindCalls === 1 ? '93.184.216.34' : '127.0.0.1';
    const all = typeof options === 'object' && options !== null && (options as { all?: boolean }).all;
    process.nextTick(() => (all ? callback(null, [{ address, family: 4 }]) : callback(null, address, 4)));
  }) as typeof actual.lookup;
  return { ...actual, lookup, default: { ...actual, lookup } };
});

const closed: EgressPolicy = { allowLoopback: false };
const loopback: EgressPolicy = { allowLoopback: true };

let server: http.Server;
let port: number;
let connections = 0;
beforeAll(async () => {
  server = http.createServer((request, response) => response.end(`host ${request.headers.host}`));
  server.on('connection', () => {
    connections += 1;
  });
  port = await listenOnLoopback(server);
});
afterAll(() => closeServer(server));

describe('DNS rebinding', () => {
  it('is caught at connect time: an earlier check that saw a public address does not let loopback through', async () => {
    // Prepare: the advisory check sees the public answer.
    await expect(assertUrlAllowed(new URL(`http://rebind.test:${port}/`), closed)).resolves.toBeUndefined();
    const before = connections;

    // Act: the connect resolves again and now gets loopback.
    const error = await guardedRequest(
      new URL(`http://rebind.test:${port}/`),
      { method: 'GET', headers: {}, timeoutMs: 2000, maxResponseBytes: 1024 },
      closed,
    ).catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(EgressBlockedError);
    expect(error).toMatchObject({ hostname: 'rebind.test', addressClass: 'loopback' });
    expect(connections).toBe(before);
    expect(answers.rebindCalls).toBeGreaterThanOrEqual(2);
  });

  it('connects to exactly the address the guard approved when the policy allows it', async () => {
    // Act
    const response = await guardedRequest(
      new URL(`http://rebind.test:${port}/`),
      { method: 'GET', headers: {}, timeoutMs: 2000, maxResponseBytes: 1024 },
      loopback,
    );

    // Assess
    expect(response.status).toBe(200);
    expect(response.body.toString()).toBe(`host rebind.test:${port}`);
  });
});
