/**
 * The local runtime holds every organization's data behind services with no authentication of their own (DynamoDB
 * Local, the SQS/S3 emulator, the simulators): none of them may be reachable from another host.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { freePort } from '../../../infra/local/free-port.ts';
import { listeningSockets } from '../../support/listening-sockets.ts';
import { childEnv, startServer, stopEverything, tempDataDir } from '../../support/local-process.ts';

afterAll(stopEverything, 30_000);

const loopback = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/;

it('listens on loopback addresses only, in every process it starts (DynamoDB Local included), with HOST unset', async () => {
  // Prepare
  const port = await freePort();
  const dataDir = tempDataDir();
  const server = await startServer(childEnv({ DATA_DIR: dataDir, PORT: String(port) }), port);
  const running = JSON.parse(readFileSync(join(dataDir, 'running.json'), 'utf8')) as {
    dynamodbEndpoint: string;
    twilioSimulator: string;
    whatsappSimulator: string;
  };

  // Act
  const sockets = listeningSockets(server.child.pid as number);

  // Assess: the API, DynamoDB Local (another process) and the simulators are among them, so the list is complete.
  const ports = sockets.map((socket) => socket.port);
  for (const expected of [port, ...[running.dynamodbEndpoint, running.twilioSimulator, running.whatsappSimulator].map((url) => Number(new URL(url).port))]) {
    expect(ports).toContain(expected);
  }
  expect(new Set(sockets.map((socket) => socket.pid)).size).toBeGreaterThan(1);
  expect(sockets.filter((socket) => !loopback.test(socket.address))).toEqual([]);
}, 180_000);
