import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventSchemas, type EventType } from '../../shared/webhooks/event-catalog.ts';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { Receiver } from '../support/webhook-receiver.ts';
import { eventually } from '../support/eventually.ts';

let api: TestApi;
const receiver = new Receiver();
let receiverUrl: string;

beforeAll(async () => {
  receiverUrl = await receiver.start();
  api = await startApi(
    // Three retries a fraction of a second apart (SQS rounds each delay up to a second), and a 1 s answer limit.
    { WEBHOOK_RETRY_SCHEDULE_SECONDS: '0.2,0.2,0.2', WEBHOOK_TIMEOUT_MS: '1000' },
    { streamPoller: true, queues: { visibilityTimeoutSeconds: 8 } },
  );
});
afterAll(async () => {
  await api.close();
  await receiver.close();
});

async function register(key: string, path: string, events: string[] = ['*']): Promise<string> {
  const created = await api.request('POST', '/v1/chat/webhooks', { key, body: { url: receiverUrl + path, events } });
  expect(created.status, created.text).toBe(201);
  receiver.secrets.set(path, [...(receiver.secrets.get(path) ?? []), created.body.secret]);
  return created.body.id;
}

async function newAgent(key: string): Promise<string> {
  const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Ada', description: 'Support', role: 'Support' } });
  return agent.body.id;
}

async function openSession(key: string, agentId: string): Promise<string> {
  const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId } });
  expect(session.status, session.text).toBe(201);
  return session.body.id;
}

async function deliveriesOf(key: string, endpointId: string, query = ''): Promise<any[]> {
  const listed = await api.request('GET', `/v1/chat/webhooks/${endpointId}/deliveries?limit=100${query}`, { key });
  expect(listed.status, listed.text).toBe(200);
  return listed.body.data;
}

describe('webhook delivery', () => {
  it('delivers a session created and closed as exactly its session events, signed, each once by webhook-id', async () => {
    const { key } = await api.newOrg();
    const endpointId = await register(key, '/ok/lifecycle', ['session.created', 'session.closed', 'session.ended']);
    const sessionId = await openSession(key, await newAgent(key));
    await api.request('POST', `/v1/chat/chat/sessions/${sessionId}/messages`, { key, body: { content: 'hello', stream: false } });
    await api.request('PATCH', `/v1/chat/chat/sessions/${sessionId}/close`, { key });

    const receipts = await eventually(
      () => receiver.for('/ok/lifecycle'),
      (found) => new Set(found.map((receipt) => receipt.webhookId)).size >= 3,
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    const unique = receiver.eventsFor('/ok/lifecycle');
    // In the order of the events' times (docs/events.md: `updatedAt` in the session-shaped events); `session.ended`
    // leaves after the close, once the analysis is attached.
    const ordered = unique.sort((a, b) => a.body.updatedAt.localeCompare(b.body.updatedAt));
    expect(ordered.map((receipt) => receipt.body.eventType)).toEqual(['session.created', 'session.closed', 'session.ended']);
    expect(ordered[0]!.body.updatedAt < ordered[1]!.body.updatedAt).toBe(true);
    expect(ordered[1]!.body.updatedAt < ordered[2]!.body.updatedAt).toBe(true);
    expect(new Set(ordered.map((receipt) => receipt.body.createdAt)).size).toBe(1);
    // Each delivery is dated by its event's time, so the newest-first list starts with the close.
    // Recorded once the batch is done, which can be a moment after the receiver has them.
    const deliveries = await eventually(
      () => deliveriesOf(key, endpointId),
      (found) => found.length === 3,
    );
    // Their own times: the session's creation, the close, and the moment the analysis was attached.
    const [created, closed, ended] = ordered.map((receipt) => receipt.body);
    expect(deliveries.map((delivery) => delivery.createdAt)).toEqual([ended!.updatedAt, closed!.endedAt, created!.createdAt]);
    expect(deliveries.at(-1)).toMatchObject({ eventType: 'session.created', eventId: ordered[0]!.webhookId });
    for (const receipt of receipts) {
      expect(receipt.verified).toBe(true);
      expect(receipt.body.id).toBe(sessionId);
      expect(receipt.body.eventId).toBe(receipt.webhookId);
      expect(receipt.headers['content-type']).toBe('application/json');
      const parsed = eventSchemas[receipt.body.eventType as EventType].safeParse(receipt.body);
      expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
    }
  });

  it('retries a failing receiver until it answers 2xx, and records every attempt', async () => {
    const { key } = await api.newOrg();
    const endpointId = await register(key, '/flaky/2', ['session.created']);
    await openSession(key, await newAgent(key));

    const [delivery] = await eventually(
      () => deliveriesOf(key, endpointId),
      (found) => found[0]?.state === 'DELIVERED',
    );
    expect(delivery).toMatchObject({ state: 'DELIVERED', attempts: 3, lastStatusCode: 200, eventType: 'session.created' });
    expect(delivery.lastError).toBeUndefined();
    expect(delivery.nextAttemptAt).toBeUndefined();
    const attempts = receiver.for('/flaky/2');
    expect(attempts.map((receipt) => receipt.webhookId)).toEqual(Array(3).fill(delivery.eventId));
    expect(attempts.every((receipt) => receipt.verified)).toBe(true);
    // Each retry waited its scheduled delay (rounded up to SQS's whole seconds).
    for (let index = 1; index < attempts.length; index += 1) {
      expect(attempts[index]!.at - attempts[index - 1]!.at).toBeGreaterThanOrEqual(150);
    }
    const one = await api.request('GET', `/v1/chat/webhooks/${endpointId}/deliveries/${delivery.id}`, { key });
    expect(one.body).toEqual(delivery);
  });

  it('dead-letters a delivery when the schedule is spent, lists it, and replays it once the receiver is back', async () => {
    const { key } = await api.newOrg();
    const endpointId = await register(key, '/down', ['session.created']);
    await openSession(key, await newAgent(key));

    const [dead] = await eventually(
      () => deliveriesOf(key, endpointId),
      (found) => found[0]?.state === 'DEAD_LETTERED',
    );
    expect(dead).toMatchObject({ state: 'DEAD_LETTERED', attempts: 4, lastStatusCode: 503, lastError: 'HTTP 503: receiver says no' });
    expect(dead.deadLetteredAt).toEqual(expect.any(String));
    expect(await deliveriesOf(key, endpointId, '&state=DEAD_LETTERED')).toEqual([dead]);
    expect(await deliveriesOf(key, endpointId, '&state=DELIVERED')).toEqual([]);

    receiver.up = true;
    const replay = await api.request('POST', `/v1/chat/webhooks/${endpointId}/deliveries/${dead.id}/retry`, { key });
    expect(replay.status, replay.text).toBe(202);
    expect(replay.body).toMatchObject({ id: dead.id, state: 'PENDING', attempts: 4 });
    expect(replay.body.deadLetteredAt).toBeUndefined();

    const [delivered] = await eventually(
      () => deliveriesOf(key, endpointId),
      (found) => found[0]?.state === 'DELIVERED',
    );
    expect(delivered).toMatchObject({ id: dead.id, state: 'DELIVERED', attempts: 5, lastStatusCode: 200 });
    expect(receiver.for('/down').at(-1)?.body.eventId).toBe(dead.eventId);

    // A delivered event can be replayed too; it is sent once more.
    expect((await api.request('POST', `/v1/chat/webhooks/${endpointId}/deliveries/${dead.id}/retry`, { key })).status).toBe(202);
    await eventually(
      () => deliveriesOf(key, endpointId),
      (found) => found[0]?.attempts === 6 && found[0]?.state === 'DELIVERED',
    );
  });

  it('treats a receiver slower than the answer limit as a failed attempt', async () => {
    const { key } = await api.newOrg();
    const endpointId = await register(key, '/slow', ['session.created']);
    await openSession(key, await newAgent(key));

    const [delivery] = await eventually(
      () => deliveriesOf(key, endpointId),
      (found) => found[0] !== undefined,
    );
    expect(delivery).toMatchObject({ state: 'PENDING', attempts: 1, lastError: 'No answer within 1000 ms.' });
    expect(delivery.lastStatusCode).toBeUndefined();
    expect(Date.parse(delivery.nextAttemptAt)).toBeGreaterThan(Date.parse(delivery.lastAttemptAt));
    // Still being attempted: no replay until it is delivered or dead-lettered.
    expectError(await api.request('POST', `/v1/chat/webhooks/${endpointId}/deliveries/${delivery.id}/retry`, { key }), 409, 'DELIVERY_PENDING');
  });

  it('waits as long as a Retry-After asks when that is longer than the schedule', async () => {
    const { key } = await api.newOrg();
    const endpointId = await register(key, '/busy', ['session.created']);
    await openSession(key, await newAgent(key));

    const [delivery] = await eventually(
      () => deliveriesOf(key, endpointId),
      (found) => found[0]?.state === 'DELIVERED',
    );
    expect(delivery.attempts).toBe(2);
    const [first, second] = receiver.for('/busy');
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(1_900);
  });

  it('stops at 410 Gone: the delivery is dead-lettered and the endpoint disabled', async () => {
    const { key } = await api.newOrg();
    const endpointId = await register(key, '/gone', ['session.created']);
    await openSession(key, await newAgent(key));

    const [delivery] = await eventually(
      () => deliveriesOf(key, endpointId),
      (found) => found[0] !== undefined,
    );
    expect(delivery).toMatchObject({ state: 'DEAD_LETTERED', attempts: 1, lastStatusCode: 410 });
    const endpoint = await api.request('GET', `/v1/chat/webhooks/${endpointId}`, { key });
    expect(endpoint.body.enabled).toBe(false);
    expectError(await api.request('POST', `/v1/chat/webhooks/${endpointId}/deliveries/${delivery.id}/retry`, { key }), 409, 'WEBHOOK_DISABLED');
  });

  it('signs with both secrets while a rotation overlaps', async () => {
    const { key } = await api.newOrg();
    const endpointId = await register(key, '/ok/rotated', ['session.created']);
    const [previous] = receiver.secrets.get('/ok/rotated')!;
    const rotated = await api.request('POST', `/v1/chat/webhooks/${endpointId}/rotate-secret`, { key });
    await openSession(key, await newAgent(key));

    const [receipt] = await eventually(
      () => receiver.for('/ok/rotated'),
      (found) => found.length > 0,
    );
    for (const secret of [previous!, rotated.body.secret]) {
      expect(() => new Webhook(secret).verify(JSON.stringify(receipt!.body), receipt!.headers as Record<string, string>)).not.toThrow();
    }
  });

  it("never sends an organization's events to another organization's endpoints", async () => {
    const first = await api.newOrg();
    const second = await api.newOrg();
    await register(first.key, '/ok/first');
    await register(second.key, '/ok/second');
    const firstAgent = await newAgent(first.key);
    const secondAgent = await newAgent(second.key);
    const firstSession = await openSession(first.key, firstAgent);
    const secondSession = await openSession(second.key, secondAgent);

    // Each endpoint gets its own organization's events (its agent's and its session's), and nothing of the other's.
    const subjectsAt = (path: string) => new Set(receiver.for(path).map((receipt) => JSON.stringify(receipt.body)));
    await eventually(
      () => [subjectsAt('/ok/first'), subjectsAt('/ok/second')],
      ([a, b]) => [...a!].some((body) => body.includes(firstSession)) && [...b!].some((body) => body.includes(secondSession)),
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect([...subjectsAt('/ok/first')].filter((body) => body.includes(secondSession) || body.includes(secondAgent))).toEqual([]);
    expect([...subjectsAt('/ok/second')].filter((body) => body.includes(firstSession) || body.includes(firstAgent))).toEqual([]);
  });

  it('answers 404 for the deliveries of an unknown endpoint or delivery, and of another organization', async () => {
    const owner = await api.newOrg();
    const stranger = await api.newOrg();
    const endpointId = await register(owner.key, '/ok/private', ['session.created']);
    const unknown = '0190f0f0-0000-7000-8000-000000000000';
    expectError(await api.request('GET', `/v1/chat/webhooks/${endpointId}/deliveries`, { key: stranger.key }), 404, 'NOT_FOUND');
    expectError(await api.request('GET', `/v1/chat/webhooks/${endpointId}/deliveries/${unknown}`, { key: owner.key }), 404, 'NOT_FOUND');
    expectError(await api.request('POST', `/v1/chat/webhooks/${endpointId}/deliveries/${unknown}/retry`, { key: owner.key }), 404, 'NOT_FOUND');
    expectError(await api.request('GET', `/v1/chat/webhooks/${endpointId}/deliveries?state=LOST`, { key: owner.key }), 400, 'VALIDATION_ERROR', 'state');
    const readOnly = await api.newKey(owner.orgId, ['webhooks:read']);
    expectError(await api.request('POST', `/v1/chat/webhooks/${endpointId}/deliveries/${unknown}/retry`, { key: readOnly }), 403, 'FORBIDDEN');
  });

  it('pages through deliveries newest first, saying whether more follow', async () => {
    const { key } = await api.newOrg();
    const endpointId = await register(key, '/ok/paged', ['session.created']);
    const agentId = await newAgent(key);
    for (let index = 0; index < 3; index += 1) await openSession(key, agentId);
    await eventually(
      () => deliveriesOf(key, endpointId),
      (found) => found.length === 3,
    );
    const all = await deliveriesOf(key, endpointId);
    expect(all.map((delivery) => delivery.createdAt)).toEqual(all.map((delivery) => delivery.createdAt).sort().reverse());
    const first = await api.request('GET', `/v1/chat/webhooks/${endpointId}/deliveries?limit=2`, { key });
    const second = await api.request('GET', `/v1/chat/webhooks/${endpointId}/deliveries?limit=2&page=2`, { key });
    expect(first.body.pagination).toEqual({ page: 1, limit: 2, hasMore: true, nextCursor: expect.any(String) });
    expect(second.body.pagination).toEqual({ page: 2, limit: 2, hasMore: false });
    expect([...first.body.data, ...second.body.data]).toEqual(all);
    const oldest = await api.request('GET', `/v1/chat/webhooks/${endpointId}/deliveries?sort=createdAt:asc&limit=1`, { key });
    expect(oldest.body.data).toEqual([all.at(-1)]);

    // The same pages by cursor: each read continues where the previous page ended.
    const path = `/v1/chat/webhooks/${endpointId}/deliveries`;
    const byCursor = [];
    let cursor: string | undefined;
    do {
      const page = await api.request('GET', `${path}?sort=createdAt:asc&limit=1${cursor ? `&cursor=${cursor}` : ''}`, { key });
      expect(page.status, page.text).toBe(200);
      byCursor.push(page.body);
      cursor = page.body.pagination.nextCursor;
    } while (cursor);
    expect(byCursor.map((page) => page.pagination.page)).toEqual([1, 2, 3]);
    expect(byCursor.flatMap((page) => page.data)).toEqual([...all].reverse());
    // A cursor belongs to its listing: another order or state filter, or a made-up value, is a 400.
    expectError(await api.request('GET', `${path}?cursor=${first.body.pagination.nextCursor}&sort=createdAt:asc`, { key }), 400, 'VALIDATION_ERROR', 'cursor');
    expectError(await api.request('GET', `${path}?cursor=${first.body.pagination.nextCursor}&state=DELIVERED`, { key }), 400, 'VALIDATION_ERROR', 'cursor');
    expectError(await api.request('GET', `${path}?cursor=bm90LWEtY3Vyc29y`, { key }), 400, 'VALIDATION_ERROR', 'cursor');
  });
});

describe('webhook delivery under a crash', () => {
  it('delivers each of 1,000 events at least once when the delivery function is killed mid-run', async () => {
    const { key } = await api.newOrg();
    await register(key, '/ok/crash', ['session.created']);
    const agentId = await newAgent(key);
    const sessionIds: string[] = [];
    let started = 0;
    const open = async () => {
      while (started < 1_000) {
        started += 1;
        sessionIds.push(await openSession(key, agentId));
      }
    };
    const opening = Promise.all(Array.from({ length: 16 }, open));
    await eventually(
      () => receiver.for('/ok/crash').length,
      (count) => count >= 100,
      60_000,
    );
    await api.queues!.crash('webhook-delivery');
    await opening;

    const received = await eventually(
      () => new Set(receiver.for('/ok/crash').map((receipt) => receipt.body.id)),
      (ids) => sessionIds.every((id) => ids.has(id)),
      90_000,
    );
    expect(sessionIds).toHaveLength(1_000);
    expect(sessionIds.filter((id) => !received.has(id))).toEqual([]);
  }, 180_000);
});
