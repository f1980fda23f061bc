import { v7 as uuidv7 } from 'uuid';

/**
 * Domain events, recorded in the same transaction as the change they report (a transactional outbox). The
 * delivery side (EventBridge, webhooks, the SSE stream) reads them from there, so none can be lost. Messages need
 * no outbox record: each message item is written once and is itself the record of its `message.added` event.
 * Each context declares its own events with the two builders below (e.g. `conversations/session-events.ts`).
 */
export interface DomainEvent {
  eventId: string;
  type: string;
  orgId: string;
  createdAt: string;
  payload: Record<string, unknown>;
}

/**
 * The flat shape of the spec's `session.*` events: the facts at the top level (`id` is what the event is about).
 * Event ids are UUIDv7, so they sort by time: the outbox and the event stream can resume after an id.
 */
export function flatEvent(orgId: string, type: string, createdAt: string, payload: Record<string, unknown>): DomainEvent {
  const eventId = uuidv7();
  return { eventId, type, orgId, createdAt, payload: { ...payload, eventId } };
}

/** The envelope shape (`usage.updated`, `subscription.updated`, …): the top-level `id` is the event id, the facts under `data`. */
export function envelopeEvent(orgId: string, type: string, createdAt: string, data: Record<string, unknown>): DomainEvent {
  const eventId = uuidv7();
  return { eventId, type, orgId, createdAt, payload: { id: eventId, eventId, type, createdAt, data } };
}
