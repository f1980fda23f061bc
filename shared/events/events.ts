import type { QuotaMetric } from '../billing/billing-schemas.ts';
import type { Session } from '../conversations/session-schemas.ts';
import { v7 as uuidv7 } from 'uuid';

/**
 * Domain events, recorded in the same transaction as the change they report (a transactional outbox). The
 * delivery side (EventBridge, webhooks, the SSE stream) reads them from there, so none can be lost. Messages need
 * no outbox record: each message item is written once and is itself the record of its `message.added` event.
 */
export interface DomainEvent {
  eventId: string;
  type: string;
  orgId: string;
  createdAt: string;
  payload: Record<string, unknown>;
}

/** Event ids are UUIDv7, so they sort by time: the outbox and the event stream can resume after an id. */
function event(orgId: string, type: string, createdAt: string, payload: Record<string, unknown>): DomainEvent {
  const eventId = uuidv7();
  return { eventId, type, orgId, createdAt, payload: { ...payload, eventId } };
}

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

/** The envelope shape (`usage.updated`, `subscription.updated`, …): the top-level `id` is the event id, the facts under `data`. */
function envelopeEvent(orgId: string, type: string, createdAt: string, data: Record<string, unknown>): DomainEvent {
  const eventId = uuidv7();
  return { eventId, type, orgId, createdAt, payload: { id: eventId, eventId, type, createdAt, data } };
}

function sessionUpdated(session: Session, at: string, changedFields: string[]): DomainEvent {
  return event(session.orgId, 'session.updated', at, { id: session.id, eventType: 'session.updated', createdAt: at, changedFields, state: session.state });
}

export const events = {
  sessionCreated: (session: Session) => event(session.orgId, 'session.created', session.createdAt, sessionPayload(session, 'session.created')),

  /**
   * A session left OPEN: `session.updated`, and `session.closed` when closed rather than expired. `session.ended`
   * follows once the analysis is attached (`sessionEnded`). A call goes from `session.created` straight to
   * `session.ended` (the spec's rule for voice), so it records nothing here.
   */
  sessionLeftOpen(session: Session): DomainEvent[] {
    if (session.type === 'VOICE') return [];
    const at = session.endedAt ?? session.updatedAt;
    const recorded = [sessionUpdated(session, at, ['state', 'endedAt'])];
    if (session.state === 'CLOSED') recorded.push(event(session.orgId, 'session.closed', at, sessionPayload(session, 'session.closed')));
    return recorded;
  },

  /** `session.ended`, with the analysis; its time is when it left, the session's `updatedAt` then. */
  sessionEnded: (session: Session) => event(session.orgId, 'session.ended', session.updatedAt, sessionPayload(session, 'session.ended')),

  /** A re-run replaced the analysis of an ended session. */
  analysisReplaced: (session: Session) => sessionUpdated(session, session.updatedAt, ['analysis']),

  subscriptionUpdated: (orgId: string, at: string, data: { subscriptionId: string; status: string; currentPlan: string }) =>
    envelopeEvent(orgId, 'subscription.updated', at, data),

  /** A campaign changed status (its completion included), with its progress then. */
  campaignUpdated: (orgId: string, at: string, data: { campaignId: string; name: string; status: string; previousStatus: string; progress: Record<string, number> }) =>
    envelopeEvent(orgId, 'campaign.updated', at, data),

  usageUpdated: (orgId: string, at: string, data: { period: { start: string; end: string }; metrics: Record<QuotaMetric, number> }) =>
    envelopeEvent(orgId, 'usage.updated', at, data),
};
