import { envelopeEvent } from '../events/events.ts';

/** The events agents record in their outbox, in the transaction of the change they report. */
export const agentEvents = {
  /** A change made a new version of the agent (not its creation: that is version 1). */
  agentUpdated: (orgId: string, at: string, data: { agentId: string; version: number; publishedVersion: number | null; changedFields: string[] }) =>
    envelopeEvent(orgId, 'agent.updated', at, data),
  /** The version new sessions bind to changed (every change of an `AUTO` agent, a publish, a rollback). */
  agentPublished: (orgId: string, at: string, data: { agentId: string; version: number; previousVersion: number | null }) =>
    envelopeEvent(orgId, 'agent.published', at, data),
};
