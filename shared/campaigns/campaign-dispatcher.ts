import { logger } from '../platform/logger.ts';
import type { CampaignContactRow, StoredCampaign } from './campaign-store.ts';
import { isDialBlocked } from './contact-store.ts';
import { assertMayConsume, type AdmissionDeps } from '../billing/admission.ts';
import { callSlotClaim, freeCallSlots, releaseCallSlot } from '../voice/call-slots.ts';
import { attemptSessionId } from './campaign-attempts.ts';
import { isInsideWindow, nextWindowOpening } from './campaign-windows.ts';
import { moveCampaign, type CampaignDeps } from './campaigns.ts';
import { afterCallEnded, callLine, endCall, longestOutboundCallSeconds, placeOutboundCall, type CallLine } from '../voice/voice.ts';

export interface DispatchDeps extends CampaignDeps, AdmissionDeps {
  config: CampaignDeps['config'] & AdmissionDeps['config'] & { CAMPAIGN_CLAIM_GRACE_SECONDS: number };
  /** Sends one dispatch message per campaign (the tick's fan-out). */
  dispatchQueue: { send(messages: readonly DispatchMessage[]): Promise<void> };
}

export interface DispatchMessage {
  kind: 'campaign.dispatch';
  orgId: string;
  campaignId: string;
}

/**
 * The tick (EventBridge Scheduler every minute; `CAMPAIGN_TICK_SECONDS` locally): one dispatch message per
 * SCHEDULED or RUNNING campaign, so that campaigns are dispatched side by side, each by one message.
 */
export async function tick(deps: Pick<DispatchDeps, 'campaigns' | 'dispatchQueue'>): Promise<number> {
  const active = await deps.campaigns.active();
  await deps.dispatchQueue.send(active.map((campaign) => ({ kind: 'campaign.dispatch', orgId: campaign.orgId, campaignId: campaign.id })));
  return active.length;
}

export interface DispatchReport {
  dialled: number;
  /** Why the cycle stopped. */
  stopped: 'gone' | 'not-running' | 'not-yet' | 'completed' | 'ended' | 'idle' | 'budget' | 'refused';
}

/** How long a cycle waits for a slot or a due contact before looking again. */
const pollMs = 100;
/**
 * How many dials of one cycle are in flight (each a DNC check, a claim, the session's writes and the carrier's
 * request): enough to keep a cap of 100 busy with calls that end within seconds (decision 282 bounds a pause by it).
 */
const dialParallelism = 25;

/**
 * One dispatch cycle of a campaign, for up to `budgetMs`: SCHEDULED becomes RUNNING at `startAt`; while RUNNING,
 * due contacts are dialled into the free call slots (the campaign's cap and the plan's concurrent calls), each
 * only after its attempt is claimed; calls whose end was missed are settled; a campaign with nothing left, or past
 * `endAt` with no call in progress, COMPLETES. Duplicated or concurrent cycles are safe: every dial needs its claim.
 */
export async function dispatchCampaign(deps: DispatchDeps, orgId: string, campaignId: string, budgetMs: number): Promise<DispatchReport> {
  const until = Date.now() + budgetMs;
  let dialled = 0;
  let line: CallLine | undefined;
  let reconciled = false;
  for (;;) {
    const campaign = await deps.campaigns.get(orgId, campaignId);
    if (!campaign) return { dialled, stopped: 'gone' };
    const now = deps.clock.now().getTime();
    if (campaign.status === 'SCHEDULED') {
      if (now < Date.parse(campaign.schedule.startAt)) return { dialled, stopped: 'not-yet' };
      // Another cycle may have moved it first: the next read says where it stands.
      await moveCampaign(deps, campaign, ['SCHEDULED'], 'RUNNING').catch(() => undefined);
      continue;
    }
    if (campaign.status !== 'RUNNING') return { dialled, stopped: 'not-running' };
    if (!reconciled) {
      reconciled = true;
      if (await settleMissedEnds(deps, campaign, now)) continue;
    }
    const { pending, inProgress } = campaign.progress;
    const ended = campaign.schedule.endAt !== undefined && now >= Date.parse(campaign.schedule.endAt);
    if (inProgress === 0 && (pending === 0 || ended)) {
      await moveCampaign(deps, campaign, ['RUNNING'], 'COMPLETED', { completedAt: new Date(now).toISOString() }).catch(() => undefined);
      return { dialled, stopped: 'completed' };
    }
    if (ended) return { dialled, stopped: 'ended' };
    let dialledNow = 0;
    // Each dial takes one of the plan's free call slots in its claim, so that no other dial or call can have it.
    const slots = await freeCallSlots(deps, orgId);
    const free = Math.min(campaign.maxConcurrentCalls - inProgress, slots?.length ?? Number.POSITIVE_INFINITY);
    if (free > 0) {
      try {
        line ??= await callLine(deps, orgId, campaign.phoneNumberId, campaign.agentId);
        await assertMayConsume(deps, orgId, 'voice_seconds');
      } catch (error) {
        logger.warn('campaign cannot dial', { orgId, campaignId, error: error as Error });
        return { dialled, stopped: 'refused' };
      }
      const due = await deps.campaigns.dueContacts(orgId, campaignId, now, free);
      if (due.length === 0 && inProgress === 0) return { dialled, stopped: 'idle' };
      // A pool: the next due contact starts as soon as one of the dials in flight is done, until the campaign refuses.
      let next = 0;
      let refused = false;
      const dialler = async () => {
        while (!refused && next < due.length) {
          const index = next++;
          const result = await dialContact(deps, campaign, line as CallLine, due[index] as CampaignContactRow, slots?.[index], now);
          if (result === 'dialled') dialledNow += 1;
          if (result === 'refused') refused = true;
        }
      };
      await Promise.all(Array.from({ length: Math.min(dialParallelism, due.length) }, dialler));
    }
    dialled += dialledNow;
    if (Date.now() >= until) return { dialled, stopped: 'budget' };
    if (dialledNow === 0) await new Promise((resolveLater) => setTimeout(resolveLater, pollMs));
  }
}

type DialResult = 'dialled' | 'postponed' | 'skipped' | 'taken' | 'refused' | 'carrier-refused';

/**
 * One due contact: outside its window it waits for the opening; a do-not-call number is skipped (checked now,
 * not only at start); otherwise its next attempt is claimed, with call slot `slot` of the plan when it caps calls,
 * and only then dialled.
 */
async function dialContact(deps: DispatchDeps, campaign: StoredCampaign, line: CallLine, row: CampaignContactRow, slot: number | undefined, nowMs: number): Promise<DialResult> {
  if (!isInsideWindow(nowMs, row.timezone, campaign.schedule.windows)) {
    const opening = nextWindowOpening(nowMs, row.timezone, campaign.schedule.windows);
    if (opening !== undefined) await deps.campaigns.postpone(row, opening);
    return 'postponed';
  }
  if (await isDialBlocked(deps, campaign.orgId, row.phoneNumber)) {
    await deps.campaigns.skip(row, 'SKIPPED_DNC');
    return 'skipped';
  }
  const tag = { campaignId: campaign.id, contactId: row.contactId, attempt: row.attempts + 1 };
  const sessionId = attemptSessionId(campaign.orgId, tag);
  const callSlot = slot === undefined ? undefined : callSlotClaim(deps, campaign.orgId, slot, sessionId, longestOutboundCallSeconds(deps, campaign.ttl));
  const refusal = await deps.campaigns.claim(row, { attempt: tag.attempt, sessionId, startedAt: new Date(nowMs).toISOString() }, campaign.maxConcurrentCalls, callSlot);
  if (refusal === 'contact' || refusal === 'conflict') return 'taken';
  if (refusal === 'campaign' || refusal === 'slot') return 'refused';
  try {
    await placeOutboundCall(deps, campaign.orgId, line, {
      sessionId,
      to: row.phoneNumber,
      ttl: campaign.ttl,
      // The contact's attributes over the campaign's variables.
      sessionVariables: { ...campaign.sessionVariables, ...row.attributes },
      campaign: tag,
    });
    return 'dialled';
  } catch (error) {
    // The carrier refused the call: its session ended FAILED, which settled the attempt.
    logger.warn('campaign dial refused by the carrier', { campaignId: campaign.id, contactId: row.contactId, attempt: tag.attempt, error: error as Error });
    return 'carrier-refused';
  }
}

/**
 * Calls in progress whose end was never settled: claimed longer ago than a call can last (ring, ttl and the
 * backstop's grace), or whose session never came to be (the dispatcher died between claim and dial) after
 * CAMPAIGN_CLAIM_GRACE_SECONDS. An ended session settles with its outcome; an open one is ended (its backstop
 * failed); a missing one was never dialled: its claim is given back, due now, and the attempt is not spent. True
 * when it settled any.
 */
async function settleMissedEnds(deps: DispatchDeps, campaign: StoredCampaign, nowMs: number): Promise<boolean> {
  const stale = await deps.campaigns.staleCalls(campaign.orgId, campaign.id, nowMs - deps.config.CAMPAIGN_CLAIM_GRACE_SECONDS * 1000);
  const longestCallMs = (deps.config.CALL_RING_TIMEOUT_SECONDS + campaign.ttl + deps.config.CALL_BACKSTOP_GRACE_SECONDS) * 1000;
  let settled = false;
  for (const row of stale) {
    const tag = { campaignId: campaign.id, contactId: row.contactId, attempt: row.attempts };
    const sessionId = attemptSessionId(campaign.orgId, tag);
    const session = await deps.sessions.get(campaign.orgId, sessionId);
    if (!session) {
      // Never dialled: the session is written before the carrier is asked. Should a live dispatcher still dial it,
      // the next claim of this attempt names the same session, which is never dialled twice.
      if (await deps.campaigns.unclaim(row, tag.attempt, sessionId, nowMs)) await releaseCallSlot(deps, campaign.orgId, sessionId);
      settled = true;
    } else if (session.state !== 'OPEN') {
      await afterCallEnded(deps, session);
      settled = true;
    } else if (nowMs - (row.claimedAt ?? nowMs) > longestCallMs) {
      await endCall(deps, campaign.orgId, sessionId, 'CARRIER_SILENT');
      settled = true;
    }
  }
  return settled;
}
