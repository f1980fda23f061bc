/**
 * `kill -9` of the local runtime while events are on their way to a webhook, some of them in the middle of their
 * delivery: after a restart on the same data, every event reaches the webhook, none lost. That the deliveries under
 * way come back at once rather than after their visibility timeout is the local queues' promise, tested in
 * test/infra/local/local-queues-restart.test.ts without a clock.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../infra/local/free-port.ts';
import { eventually } from '../support/eventually.ts';
import { call, childEnv, startServer, stopEverything, tempDataDir, waitForExit } from '../support/local-process.ts';
import { closeServer, listenOnLoopback } from '../support/loopback-server.ts';

/** Until the crash, the receiver holds every request unanswered: those deliveries are under way when it comes. */
let holding = true;
const held: ServerResponse[] = [];
const arrivals = new Set<string>();
const receiver = createServer((request, response) => {
  let body = '';
  request.on('data', (chunk) => (body += chunk));
  request.on('end', () => {
    if (holding) return void held.push(response);
    arrivals.add(JSON.parse(body).id as string);
    response.writeHead(204).end();
  });
});
let receiverPort: number;

beforeAll(async () => {
  receiverPort = await listenOnLoopback(receiver);
});
afterAll(async () => {
  await stopEverything();
  for (const response of held) response.destroy();
  await closeServer(receiver);
}, 30_000);

describe('the local runtime killed with SIGKILL while events are on their way to a webhook', () => {
  it('delivers every event created before the crash once it is restarted', async () => {
    // Prepare
    const key = randomBytes(24).toString('base64url');
    const port = await freePort();
    const env = childEnv({
      DATA_DIR: tempDataDir(),
      PORT: String(port),
      HOST: '127.0.0.1',
      INIT_ORG_ID: 'crash-events',
      INIT_API_KEY: key,
      RATE_LIMITING: 'off',
      LOOPBACK_EGRESS_PORTS: String(receiverPort),
    });
    const first = await startServer(env, port);
    const webhook = await call(first, 'POST', '/v1/chat/webhooks', { key, body: { url: `http://127.0.0.1:${receiverPort}/in`, events: ['session.created'] } });
    expect(webhook.status, webhook.text).toBe(201);
    const agent = await call(first, 'POST', '/v2/chat/agents', { key, body: { fullName: 'A', description: 'A', role: 'A' } });
    const created: string[] = [];
    let crashed = false;
    const create = async () => {
      while (!crashed) {
        const session = await call(first, 'POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } }).catch(() => undefined);
        if (session?.status === 201) created.push(session.body.id);
      }
    };
    const creating = Promise.all([create(), create(), create()]);
    // Deliveries are under way (their attempts wait on the receiver), and sessions are still being created.
    await eventually(
      () => held.length,
      (count) => count >= 3,
      60_000,
    );

    // Act
    first.child.kill('SIGKILL');
    crashed = true;
    await waitForExit(first.child, 10_000);
    await creating;
    holding = false;
    for (const response of held) response.destroy();
    await startServer(env, port);

    // Assess
    const missing = await eventually(
      () => created.filter((id) => !arrivals.has(id)),
      (left) => left.length === 0,
      120_000,
    );
    expect(missing, 'events lost').toEqual([]);
  }, 240_000);
});
