import type * as http from 'node:http';

/**
 * Tripwire for tests of outbound requests: `node:http` whose `request` refuses every host but 127.0.0.1 and
 * localhost. Should a guard under test let a request for any other host reach node:http, it fails there, before a
 * packet leaves. Use it as the factory of `vi.mock('node:http', …)`.
 */
export function loopbackOnlyHttp(actual: typeof http): Record<string, unknown> {
  const request = ((url: unknown, ...rest: unknown[]) => {
    const host = url instanceof URL ? url.hostname : undefined;
    if (host !== '127.0.0.1' && host !== 'localhost') throw new Error(`tripwire: test tried to connect to ${String(host)}`);
    return (actual.request as (...args: unknown[]) => http.ClientRequest)(url, ...rest);
  }) as typeof actual.request;
  return { ...actual, request, default: { ...actual, request } };
}
