/**
 * With the delivery queue as declared (no test override of its visibility timeout), an event whose delivery
 * invocation dies mid-attempt reaches the receiver within the visibility timeout, not minutes later.
 */
import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookDeliveryQueue } from '../../functions/consumers.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { closeServer, listenOnLoopback } from '../support/loopback-server.ts';

/** What a crash may cost a webhook: seconds, not minutes. */
const maxRecoveryMs = 45_000;

let api: TestApi;
const received: { sessionId: string; at: number }[] = [];
let holdFirst = true;
let firstArrived: () => void;
const firstRequest = new Promise<void>((resolve) => (firstArrived = resolve));
const receiver = createServer((request, response) => {
  let body = '';
  request.on('data', (chunk) => (body += chunk));
  request.on('end', () => {
    if (holdFirst) {
      // The first attempt never gets an answer: its invocation is killed while it waits.
      holdFirst = false;
      firstArrived();
      return;
    }
    received.push({ sessionId: JSON.parse(body).id, at: Date.now() });
    response.end();
  });
});
let receiverUrl: string;

beforeAll(async () => {
  receiverUrl = `http://127.0.0.1:${await listenOnLoopback(receiver)}`;
  api = await startApi({}, { streamPoller: true, queues: true });
});
afterAll(async () => {
  await api.close();
  await closeServer(receiver);
});

describe('a delivery invocation killed mid-attempt', () => {
  it('is delivered again within the queue visibility timeout, well under a minute', async () => {
    // Prepare
    const { key } = await api.newOrg();
    expect((await api.request('POST', '/v1/chat/webhooks', { key, body: { url: `${receiverUrl}/in`, events: ['session.created'] } })).status).toBe(201);
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'A', description: 'A', role: 'A' } });
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
    await firstRequest;

    // Act
    const crashedAt = Date.now();
    await api.queues!.crash('webhook-delivery');

    // Assess
    const deadline = crashedAt + maxRecoveryMs;
    while (!received.some((receipt) => receipt.sessionId === session.body.id) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const receipt = received.find((item) => item.sessionId === session.body.id);
    expect(receipt, 'not delivered again within the visibility timeout').toBeDefined();
    expect((receipt?.at as number) - crashedAt).toBeLessThanOrEqual(webhookDeliveryQueue.visibilityTimeoutSeconds * 1000 + 5_000);
  }, 90_000);
});
