import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatCursor, parseCursor } from '../../shared/webhooks/event-stream.ts';
import { eventSchemas, type EventType } from '../../shared/webhooks/event-catalog.ts';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { SseClient } from '../support/sse-client.ts';

const overlapMs = 1000;
let api: TestApi;
beforeAll(async () => {
  api = await startApi(
    { EVENT_STREAM_POLL_MS: '50', EVENT_STREAM_HEARTBEAT_MS: '300', EVENT_STREAM_OVERLAP_MS: String(overlapMs) },
    // With the queues: `session.ended` leaves once the session's analysis is done.
    { streamPoller: true, queues: true },
  );
});
afterAll(() => api.close());

const path = '/v1/chat/events/stream';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function openStream(key: string, options: { lastEventId?: string; query?: string } = {}): Promise<SseClient> {
  return SseClient.open(`${api.baseUrl}${path}${options.query ?? ''}`, {
    'x-api-key': key,
    ...(options.lastEventId === undefined ? {} : { 'last-event-id': options.lastEventId }),
  });
}

async function newAgent(key: string): Promise<string> {
  const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'A', description: 'A', role: 'A' } });
  expect(agent.status).toBe(201);
  return agent.body.id as string;
}

async function newSession(key: string, agentId: string): Promise<string> {
  const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId } });
  expect(session.status).toBe(201);
  return session.body.id as string;
}

async function sendMessage(key: string, sessionId: string, content: string): Promise<void> {
  const reply = await api.request('POST', `/v1/chat/chat/sessions/${sessionId}/messages`, { key, body: { content, stream: false } });
  expect(reply.status).toBe(200);
}

async function closeSession(key: string, sessionId: string): Promise<void> {
  expect((await api.request('PATCH', `/v1/chat/chat/sessions/${sessionId}/close`, { key })).status).toBe(200);
}

const eventIdOf = (block: { data: string }) => (JSON.parse(block.data) as { eventId: string }).eventId;
const typesOf = (blocks: { event: string }[]) => blocks.map((block) => block.event).sort();
/** The agent's creation (its version 1 published), then the session's events. */
const conversationTypes = ['agent.published', 'message.added', 'message.added', 'session.closed', 'session.created', 'session.ended', 'session.message.created', 'session.updated'];

describe('GET /v1/chat/events/stream', () => {
  it("streams every event of the organization's chat session, each with id, event and data, and nothing of it to another organization", async () => {
    // Prepare
    const { key } = await api.newOrg();
    const other = await api.newOrg();
    const mine = await openStream(key);
    const filtered = await openStream(key, { query: '?types=session.ended,message.added' });
    const theirs = await openStream(other.key);

    // Act
    const sessionId = await newSession(key, await newAgent(key));
    await sendMessage(key, sessionId, 'hello');
    await closeSession(key, sessionId);

    // Assess
    await mine.waitFor((client) => client.events.length >= 8);
    await filtered.waitFor((client) => client.events.length >= 3);
    await sleep(300);
    expect(mine.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(mine.blocks[0]).toEqual({ retry: '1000', comments: [] });
    expect(typesOf(mine.events)).toEqual(conversationTypes);
    for (const block of mine.events) {
      const payload = JSON.parse(block.data) as Record<string, unknown>;
      const parsed = eventSchemas[block.event as EventType].safeParse(payload);
      expect(parsed.success, `${block.event}: ${JSON.stringify(parsed.error?.issues)}`).toBe(true);
      expect(block.id).toMatch(/^\d{13}-[0-9a-f-]{36}$/);
      expect(parseCursor(block.id)?.eventId).toBe(payload.eventId);
    }
    expect(new Set(mine.events.map(eventIdOf)).size).toBe(8);
    expect(JSON.parse(mine.events.find((block) => block.event === 'session.created')?.data ?? '{}')).toMatchObject({ id: sessionId, state: 'OPEN' });
    expect(typesOf(filtered.events)).toEqual(['message.added', 'message.added', 'session.ended']);
    expect(theirs.events).toEqual([]);
    for (const client of [mine, filtered, theirs]) client.close();
  });

  it('answers 401 without credentials and 403 to a key without chat:read, which is all it needs', async () => {
    // Prepare
    const { orgId } = await api.newOrg();
    const agentsOnly = await api.newKey(orgId, ['agents:read']);
    const chatReader = await api.newKey(orgId, ['chat:read']);

    // Act
    const anonymous = await api.request('GET', path);
    const forbidden = await api.request('GET', path, { key: agentsOnly });
    const allowed = await openStream(chatReader);

    // Assess
    expectError(anonymous, 401, 'UNAUTHORIZED');
    expectError(forbidden, 403, 'FORBIDDEN');
    expect(allowed.status).toBe(200);
    allowed.close();
  });

  it('answers 400 VALIDATION_ERROR, before streaming, to a malformed Last-Event-ID or an unknown event type', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const badHeader = await api.request('GET', path, { key, headers: { 'last-event-id': 'yesterday' } });
    const badQuery = await api.request('GET', `${path}?lastEventId=${formatCursor(Date.now() + 3_600_000, 'e')}`, { key });
    const badType = await api.request('GET', `${path}?types=session.updated,session.exploded`, { key });

    // Assess
    expectError(badHeader, 400, 'VALIDATION_ERROR', 'Last-Event-ID');
    expectError(badQuery, 400, 'VALIDATION_ERROR', 'Last-Event-ID');
    expectError(badType, 400, 'VALIDATION_ERROR', 'types');
  });

  it('resumes with Last-Event-ID: nothing that happened while disconnected is missed, nothing older than the overlap repeats', async () => {
    // Prepare: a session announced, then, after more than the overlap, a turn
    const { key } = await api.newOrg();
    const first = await openStream(key);
    const sessionId = await newSession(key, await newAgent(key));
    await first.waitFor((client) => client.events.length >= 2);
    await sleep(overlapMs + 300);
    await sendMessage(key, sessionId, 'before the break');
    // All of the turn seen: agent.published, session.created, then session.message.created and two message.added
    await first.waitFor((client) => client.events.length >= 5);
    const lastEventId = first.lastEventId as string;
    first.close();

    // Act: a turn and the close while nobody listens, then a reconnect
    await sendMessage(key, sessionId, 'during the break');
    await closeSession(key, sessionId);
    const second = await openStream(key, { lastEventId });

    // Assess
    const seenBefore = new Set(first.events.map(eventIdOf));
    const missed = () => second.events.filter((block) => !seenBefore.has(eventIdOf(block)));
    await second.waitFor(() => missed().length >= 6);
    await sleep(300);
    expect(typesOf(missed())).toEqual(['message.added', 'message.added', 'session.closed', 'session.ended', 'session.message.created', 'session.updated']);
    expect(new Set(second.events.map(eventIdOf)).size).toBe(second.events.length);
    const cursorTime = parseCursor(lastEventId)?.loggedAt as number;
    const repeated = second.events.filter((block) => seenBefore.has(eventIdOf(block)));
    for (const block of repeated) expect(parseCursor(block.id)?.loggedAt).toBeGreaterThanOrEqual(cursorTime - overlapMs);
    expect(second.events.map((block) => block.event)).not.toContain('session.created');
    second.close();
  });

  it('sends heartbeat comments carrying a cursor to resume from while idle', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const client = await openStream(key);

    // Act
    await client.waitFor((stream) => stream.blocks.filter((block) => block.comments.includes('heartbeat')).length >= 2);
    client.close();
    const resumed = await openStream(key, { lastEventId: client.lastEventId as string });
    await resumed.waitFor((stream) => stream.blocks.length >= 2);
    resumed.close();

    // Assess
    const heartbeats = client.blocks.filter((block) => block.comments.includes('heartbeat'));
    for (const heartbeat of heartbeats) expect(heartbeat).toEqual({ comments: ['heartbeat'], id: expect.stringMatching(/^\d{13}$/) });
    expect(resumed.blocks[1]?.comments).not.toContainEqual(expect.stringMatching(/retention/));
  });

  it('resumes a cursor older than the retention from the oldest retained event, and says so', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const client = await openStream(key, { lastEventId: formatCursor(Date.now() - 25 * 3_600_000, crypto.randomUUID()) });
    await client.waitFor((stream) => stream.blocks.length >= 2);
    client.close();

    // Assess
    expect(client.blocks[1]?.comments).toEqual([expect.stringMatching(/^Last-Event-ID is older than the 24-hour retention/)]);
  });
});
