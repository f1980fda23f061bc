import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Starts a test server on a free loopback port; resolves with the port. */
export async function listenOnLoopback(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** Stops a test server at once, dropping the connections clients keep alive. */
export async function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}
