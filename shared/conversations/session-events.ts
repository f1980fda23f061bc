import { v5 as uuidv5 } from 'uuid';
import { flatEvent, type DomainEvent } from '../events/events.ts';
import type { Message, Session } from './session-schemas.ts';

/** The flat `session.*` shape of the spec: the top-level `id` is the session id. */
function sessionPayload(session: Session, eventType: string): Record<string, unknown> {
  return {
    id: session.id,
    eventType,
    type: session.type,
    platform: session.platform,
    direction: session.direction,
    state: session.state,
    agentId: session.agentId,
    createdAt: session.createdAt,
    updatedAt: session.updatedAt,
    lastActivityAt: session.lastActivityAt,
    ...(session.endedAt ? { endedAt: session.endedAt } : {}),
    metadata: session.metadata,
    ...(session.analysis ? { analysis: session.analysis } : {}),
    ...(session.recordingUrl ? { recordingUrl: session.recordingUrl } : {}),
  };
}

function sessionUpdated(session: Session, at: string, changedFields: string[]): DomainEvent {
  return flatEvent(session.orgId, 'session.updated', at, { id: session.id, eventType: 'session.updated', createdAt: at, changedFields, state: session.state });
}

/** The events a session records in its outbox, in the transaction of the change they report. */
export const sessionEvents = {
  sessionCreated: (session: Session) => flatEvent(session.orgId, 'session.created', session.createdAt, sessionPayload(session, 'session.created')),

  /**
   * A session left OPEN: `session.updated`, and `session.closed` when closed rather than expired. `session.ended`
   * follows once the analysis is attached (`sessionEnded`). A call goes from `session.created` straight to
   * `session.ended` (the spec's rule for voice), so it records nothing here.
   */
  sessionLeftOpen(session: Session): DomainEvent[] {
    if (session.type === 'VOICE') return [];
    const at = session.endedAt ?? session.updatedAt;
    const recorded = [sessionUpdated(session, at, ['state', 'endedAt'])];
    if (session.state === 'CLOSED') recorded.push(flatEvent(session.orgId, 'session.closed', at, sessionPayload(session, 'session.closed')));
    return recorded;
  },

  /** `session.ended`, with the analysis; its time is when it left, the session's `updatedAt` then. */
  sessionEnded: (session: Session) => flatEvent(session.orgId, 'session.ended', session.updatedAt, sessionPayload(session, 'session.ended')),

  /** A re-run replaced the analysis of an ended session. */
  analysisReplaced: (session: Session) => sessionUpdated(session, session.updatedAt, ['analysis']),
};

/** Namespace of the ids of events derived from message items: the same message always yields the same ids. */
const messageEventNamespace = '3b0f9a52-7c1e-5d4a-9e8b-6f2d1c0a4b7e';

/**
 * The events a message item (as the session store writes it) stands for, having no outbox record: its own
 * `message.added` (and `session.message.created` for a user's message), with ids derived from the message id so
 * that a replayed stream record yields the very same events.
 */
export function eventsOfMessageItem(item: Record<string, unknown>): DomainEvent[] {
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
