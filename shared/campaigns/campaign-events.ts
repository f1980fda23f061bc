import { envelopeEvent } from '../events/events.ts';

/** The events campaigns record in their outbox, with the change they report. */
export const campaignEvents = {
  /** A campaign changed status (its completion included), with its progress then. */
  campaignUpdated: (orgId: string, at: string, data: { campaignId: string; name: string; status: string; previousStatus: string; progress: Record<string, number> }) =>
    envelopeEvent(orgId, 'campaign.updated', at, data),
};
