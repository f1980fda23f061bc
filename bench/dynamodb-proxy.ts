import { Agent, createServer, request as forward, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ProxiedCall {
  operation: string;
  start: number;
  end: number;
}

/**
 * A pass-through HTTP proxy in front of DynamoDB Local that notes each call's operation and timing (performance
 * clock of this process), to count the DynamoDB requests of a turn and how many happen before its first delta.
 */
export async function startDynamoDbProxy(
  target: string,
  /** Sees each request's operation and body before it is forwarded (to count what it writes). */
  inspect?: (operation: string, body: Buffer) => void,
): Promise<{ endpoint: string; calls: ProxiedCall[]; close(): Promise<void> }> {
  const calls: ProxiedCall[] = [];
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const upstream = new URL(target);
  const server: Server = createServer((incoming, outgoing) => {
    const start = performance.now();
    const operation = String(incoming.headers['x-amz-target'] ?? '').split('.').pop() ?? 'unknown';
    const call = forward(
      { host: upstream.hostname, port: upstream.port, method: incoming.method, path: incoming.url, headers: incoming.headers, agent },
      (response) => {
        outgoing.writeHead(response.statusCode ?? 500, response.headers);
        response.pipe(outgoing);
        response.on('end', () => calls.push({ operation, start, end: performance.now() }));
      },
    );
    call.on('error', () => outgoing.destroy());
    if (!inspect) {
      incoming.pipe(call);
      return;
    }
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const body = Buffer.concat(chunks);
      inspect(operation, body);
      call.end(body);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
        agent.destroy();
      }),
  };
}

/** Sequential round trips among calls: a call that starts after every earlier call has ended begins a new one. */
export function sequentialRoundTrips(calls: readonly ProxiedCall[]): number {
  let trips = 0;
  let lastEnd = -Infinity;
  for (const call of [...calls].sort((a, b) => a.start - b.start)) {
    if (call.start >= lastEnd) trips += 1;
    lastEnd = Math.max(lastEnd, call.end);
  }
  return trips;
}
