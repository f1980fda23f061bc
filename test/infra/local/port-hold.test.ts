import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort, holdPort } from '../../../infra/local/free-port.ts';

const listenOn = (port: number): Promise<{ close(): Promise<void> }> =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve({ close: () => new Promise((closed) => server.close(() => closed())) }));
  });

describe("the API's port, held while the local runtime starts its other listeners", () => {
  it('is nobody else’s until released, then the API’s', async () => {
    const port = await freePort();
    const hold = await holdPort(port, '127.0.0.1');
    await expect(listenOn(port)).rejects.toMatchObject({ code: 'EADDRINUSE' });
    // A client that comes meanwhile is turned away, and does not keep the port held.
    await expect(fetch(`http://127.0.0.1:${port}/health`)).rejects.toThrow();
    await hold.release();
    const api = await listenOn(port);
    await api.close();
  });

  it('cannot be held when something listens on it already', async () => {
    const port = await freePort();
    const other = await listenOn(port);
    await expect(holdPort(port, '127.0.0.1')).rejects.toMatchObject({ code: 'EADDRINUSE' });
    await other.close();
  });
});
