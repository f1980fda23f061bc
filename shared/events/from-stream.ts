import { v5 as uuidv5 } from 'uuid';
import type { DomainEvent } from './events.ts';
import type { Message } from '../conversations/session-schemas.ts';

/** Namespace of the ids of events derived from message items: the same message always yields the same ids. */
const messageEventNamespace = '3b0f9a52-7c1e-5d4a-9e8b-6f2d1c0a4b7e';

/**
 * The domain events a newly written item stands for: an outbox item is one event as recorded; a message item is
 * its own `message.added` (and `session.message.created` for a user's message), with ids derived from the message
 * id so that a replayed stream record yields the very same events.
 */
export function eventsOfItem(item: Record<string, unknown>): DomainEvent[] {
  if (item.entity === 'outbox') {
    const { eventId, type, orgId, createdAt, payload } = item as unknown as DomainEvent;
    return [{ eventId, type, orgId, createdAt, payload }];
  }
  if (item.entity !== 'message') return [];
  const message = item as unknown as Message;
  const orgId = /^ORG#(.+)#SES#/.exec(String(item.pk))?.[1] ?? '';
  const idFor = (type: string) => uuidv5(`${message.id}/${type}`, messageEventNamespace);
  const addedId = idFor('message.added');
  const added: DomainEvent = {
    eventId: addedId,
    type: 'message.added',
    orgId,
    createdAt: message.createdAt,
    payload: {
      id: addedId,
      eventId: addedId,
      type: 'message.added',
      createdAt: message.createdAt,
      data: {
        sessionId: message.sessionId,
        messageId: message.id,
        role: message.role,
        content: message.content,
        ...(message.toolCall ? { toolCall: message.toolCall } : {}),
      },
    },
  };
  if (message.role !== 'USER') return [added];
  const incomingId = idFor('session.message.created');
  const incoming: DomainEvent = {
    eventId: incomingId,
    type: 'session.message.created',
    orgId,
    createdAt: message.createdAt,
    payload: {
      id: message.sessionId,
      eventId: incomingId,
      eventType: 'session.message.created',
      createdAt: message.createdAt,
      messageId: message.id,
      role: message.role,
      content: message.content,
    },
  };
  return [incoming, added];
}
