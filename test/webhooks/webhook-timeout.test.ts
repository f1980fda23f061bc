import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { closeServer, listenOnLoopback } from '../support/loopback-server.ts';

/** The answer limit at its real value (the default, 15 s): a receiver just inside it delivers, one just outside fails. */
let api: TestApi;
let receiver: Server;
let receiverUrl: string;
const answerAfterMs: Record<string, number> = { '/in-time': 13_500, '/too-late': 16_500 };

beforeAll(async () => {
  receiver = createServer((request, response) => {
    request.resume();
    setTimeout(() => response.writeHead(200).end(), answerAfterMs[request.url ?? ''] ?? 0);
  });
  receiverUrl = `http://127.0.0.1:${await listenOnLoopback(receiver)}`;
  api = await startApi({}, { streamPoller: true, queues: true });
});
afterAll(async () => {
  await api.close();
  await closeServer(receiver);
});

/** The first attempt's record, once it has one: the event's way to the queue takes its time on a busy machine. */
async function firstDelivery(key: string, endpointId: string): Promise<any> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const listed = await api.request('GET', `/v1/chat/webhooks/${endpointId}/deliveries`, { key });
    const first = listed.body.data[0];
    if ((first && first.attempts > 0) || Date.now() > deadline) return first;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe('the 15 s answer limit', () => {
  it('counts an answer after 15 s as a failed attempt, and one within it as delivered', async () => {
    const { key } = await api.newOrg();
    const register = async (path: string) =>
      (await api.request('POST', '/v1/chat/webhooks', { key, body: { url: receiverUrl + path, events: ['session.created'] } })).body.id as string;
    const [inTime, tooLate] = [await register('/in-time'), await register('/too-late')];
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Ada', description: 'Support', role: 'Support' } });
    await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });

    const [delivered, failed] = await Promise.all([firstDelivery(key, inTime), firstDelivery(key, tooLate)]);
    expect(delivered).toMatchObject({ state: 'DELIVERED', attempts: 1, lastStatusCode: 200 });
    expect(failed).toMatchObject({ state: 'PENDING', attempts: 1, lastError: 'No answer within 15000 ms.' });
  }, 120_000);
});
