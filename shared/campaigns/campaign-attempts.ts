import { v5 as uuidv5 } from 'uuid';
import { logger } from '../platform/logger.ts';
import type { AttemptOutcome, CampaignContactState } from './campaign-schemas.ts';
import type { EndedReason } from '../conversations/session-schemas.ts';
import type { DynamoCampaignStore, StoredCampaign } from './campaign-store.ts';
import { nextWindowOpening } from './campaign-windows.ts';
import type { CampaignCallEnd, CampaignCallTag } from '../voice/ports.ts';

const attemptSessionNamespace = '2c4f7a1e-93b5-4d0c-8e6a-5b1d7c9f3a24';

/**
 * The session id of one attempt: derived from campaign, contact and attempt, so that the attempt names one
 * session whoever dials it (the claim already makes that one dispatcher).
 */
export const attemptSessionId = (orgId: string, tag: CampaignCallTag): string =>
  uuidv5(`${orgId}/${tag.campaignId}/${tag.contactId}/${tag.attempt}`, attemptSessionNamespace);

/** The session's end as an attempt outcome: a call that was answered (whoever hung up), or why it was not. */
export function outcomeOf(reason: EndedReason | undefined): AttemptOutcome {
  switch (reason) {
    case 'BUSY':
      return 'BUSY';
    case 'NO_ANSWER':
      return 'NO_ANSWER';
    case 'HANGUP_CALLEE':
    case 'HANGUP_AGENT':
    case 'TTL':
    case 'CONNECTION_LOST':
    case 'TRANSFERRED':
      return 'ANSWERED';
    default:
      // FAILED, CANCELED, CARRIER_SILENT (the carrier lost the call), EXPIRED (never dialled).
      return 'FAILED';
  }
}

/**
 * Where an attempt's outcome leaves the contact: COMPLETED when answered; PENDING again after `delaySeconds` (at
 * the next opening of its window, before `endAt`) when the policy retries this outcome and attempts remain;
 * EXHAUSTED when it would but cannot; FAILED when the policy does not retry this outcome.
 */
export function nextStepAfter(
  campaign: Pick<StoredCampaign, 'retry' | 'schedule'>,
  attempt: number,
  outcome: AttemptOutcome,
  timeZone: string,
  nowMs: number,
): { state: CampaignContactState; nextAttemptAt?: number } {
  if (outcome === 'ANSWERED') return { state: 'COMPLETED' };
  if (!campaign.retry.on.includes(outcome)) return { state: 'FAILED' };
  if (attempt >= campaign.retry.maxAttempts) return { state: 'EXHAUSTED' };
  const opening = nextWindowOpening(nowMs + campaign.retry.delaySeconds * 1000, timeZone, campaign.schedule.windows);
  const endAt = campaign.schedule.endAt ? Date.parse(campaign.schedule.endAt) : Number.POSITIVE_INFINITY;
  if (opening === undefined || opening >= endAt) return { state: 'EXHAUSTED' };
  return { state: 'PENDING', nextAttemptAt: opening };
}

/**
 * A campaign's call ended (voice tells it: `CampaignCallEnded`): its attempt's outcome is recorded and its call
 * slot freed, once (a second settling of the same attempt changes nothing).
 */
export async function settleCampaignAttempt(deps: { campaigns: DynamoCampaignStore }, end: CampaignCallEnd): Promise<void> {
  const { orgId, campaign: tag } = end;
  const campaign = await deps.campaigns.get(orgId, tag.campaignId);
  if (!campaign) return;
  const outcome = outcomeOf(end.endedReason);
  const retries = outcome !== 'ANSWERED' && campaign.retry.on.includes(outcome) && tag.attempt < campaign.retry.maxAttempts;
  // The contact's zone matters only for a retry's window.
  const row = retries ? await deps.campaigns.getContact(orgId, tag.campaignId, tag.contactId) : undefined;
  const next = nextStepAfter(campaign, tag.attempt, outcome, row?.timezone ?? 'UTC', end.at.getTime());
  const settled = await deps.campaigns.settle({ orgId, campaignId: tag.campaignId, contactId: tag.contactId }, tag.attempt, outcome, next);
  if (settled) logger.info('campaign attempt settled', { campaignId: tag.campaignId, contactId: tag.contactId, attempt: tag.attempt, outcome, next: next.state });
}
