import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../shared/events/events.ts';
import { localEventBus } from '../../shared/events/bus.ts';
import { eventSchemas, type EventType } from '../../shared/webhooks/event-catalog.ts';
import { eventsOfItem } from '../../shared/webhooks/table-stream-events.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';

let api: TestApi;
const published: DomainEvent[] = [];
const record = (event: DomainEvent) => published.push(event);

beforeAll(async () => {
  // With the queues: `session.ended` leaves once the session's analysis is done.
  api = await startApi({}, { streamPoller: true, queues: true });
  localEventBus.on('event', record);
});
afterAll(async () => {
  localEventBus.off('event', record);
  await api.close();
});

/** `session.ended` waits for the analysis, on a queue: on a busy machine that can take more than the usual minute. */
function eventsOf(orgId: string, count: number): Promise<DomainEvent[]> {
  return eventually(() => published.filter((event) => event.orgId === orgId), (mine) => mine.length >= count, 150_000);
}

describe('the event relay', () => {
  it('publishes every event of a conversation once, from the stream, each valid against its schema', async () => {
    const { orgId, key } = await api.newOrg();
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'A', description: 'A', role: 'A' } });
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id, sessionVariables: { tier: 'gold' } } });
    const sessionId = session.body.id as string;
    await api.request('POST', `/v1/chat/chat/sessions/${sessionId}/messages`, { key, body: { content: 'hello', stream: false } });
    await api.request('PATCH', `/v1/chat/chat/sessions/${sessionId}/close`, { key });

    // The agent's creation published its first version; the conversation made seven events.
    const all = await eventsOf(orgId, 8);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(published.filter((event) => event.orgId === orgId)).toHaveLength(8);
    expect(all.filter((event) => event.type === 'agent.published')).toHaveLength(1);
    const events = all.filter((event) => event.type !== 'agent.published');
    const types = [...events].sort((a, b) => a.createdAt.localeCompare(b.createdAt)).map((event) => event.type);
    expect(types[0]).toBe('session.created');
    expect(types.slice(1, 4).sort()).toEqual(['message.added', 'message.added', 'session.message.created']);
    expect(types.slice(4).sort()).toEqual(['session.closed', 'session.ended', 'session.updated']);
    expect(new Set(events.map((event) => event.eventId)).size).toBe(7);
    for (const event of events) {
      const parsed = eventSchemas[event.type as EventType].safeParse(event.payload);
      expect(parsed.success, `${event.type}: ${JSON.stringify(parsed.error?.issues)}`).toBe(true);
      expect(event.payload.eventId).toBe(event.eventId);
    }
    const created = events.find((event) => event.type === 'session.created');
    expect(created?.payload).toMatchObject({ id: sessionId, metadata: { sessionVariables: { tier: 'gold' } } });
    const added = events.filter((event) => event.type === 'message.added').map((event) => event.payload as { id: string; data: { role: string } });
    expect(added.map((payload) => payload.data.role).sort()).toEqual(['ASSISTANT', 'USER']);
    for (const payload of added) expect(payload.id).toBe(events.find((event) => event.payload === payload)?.eventId);
  }, 180_000);
});

describe('eventsOfItem', () => {
  it('derives the same events, ids included, from the same message item every time', () => {
    const item = {
      pk: 'ORG#acme#SES#s1',
      sk: 'MSG#000000000001',
      entity: 'message',
      id: 'msg_1',
      sessionId: 's1',
      role: 'USER',
      content: 'hi',
      metadata: {},
      createdAt: '2026-11-21T10:00:00.000Z',
    };
    const first = eventsOfItem(item);
    expect(first.map((event) => [event.type, event.orgId])).toEqual([
      ['session.message.created', 'acme'],
      ['message.added', 'acme'],
    ]);
    expect(eventsOfItem({ ...item })).toEqual(first);
    expect(eventsOfItem({ ...item, id: 'msg_2' })[0]?.eventId).not.toBe(first[0]?.eventId);
    expect(eventsOfItem({ ...item, entity: 'session' })).toEqual([]);
  });
});
