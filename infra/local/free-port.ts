import { createServer } from 'node:net';

/** A loopback port free at the time of asking, for a child process that must be told its port before it starts. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => (typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * Holds `port` on `host` until `release()`: a process that starts listeners on ports the system picks (port 0)
 * before the one it was told could otherwise be given that very port. Rejects when the port is taken already.
 */
export function holdPort(port: number, host: string): Promise<{ release(): Promise<void> }> {
  return new Promise((resolveHold, reject) => {
    // A client that comes early (a health probe) is turned away at once: a connection left open would keep the
    // release waiting for it.
    const holder = createServer((socket) => socket.destroy());
    holder.once('error', reject);
    holder.listen(port, host, () => resolveHold({ release: () => new Promise((resolveRelease) => holder.close(() => resolveRelease())) }));
  });
}
