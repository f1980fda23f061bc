import { InvalidCampaignTransitionError, NotFoundError, ValidationError } from '../platform/errors.ts';
import type { SealResponse } from '../platform/ports.ts';
import { campaignLimits, type Campaign, type CampaignCall, type CampaignContactState, type CampaignProgress, type CampaignStatus, type CreateCampaignInput } from './campaign-schemas.ts';
import { listAudience, type ContactStoreDeps } from './contact-store.ts';
import { counterOf, type CampaignContactRow, type DynamoCampaignStore, type StoredCampaign } from './campaign-store.ts';
import { nextWindowOpening } from './campaign-windows.ts';
import { newId, nextUpdatedAt } from '../platform/clock.ts';
import { contactTimezone, type Contact } from './contacts.ts';
import { campaignEvents } from './campaign-events.ts';
import { nextCursorAfter, readPageCursor } from '../platform/page-cursor.ts';
import { callLine, type VoiceDeps } from '../voice/voice.ts';
import { paginate } from '../platform/schemas/common.ts';

export interface CampaignDeps extends VoiceDeps {
  campaigns: DynamoCampaignStore;
  documentClient: ContactStoreDeps['documentClient'];
  config: VoiceDeps['config'] & ContactStoreDeps['config'];
}

const nonFinalStatuses: readonly CampaignStatus[] = ['DRAFT', 'SCHEDULED', 'RUNNING', 'PAUSED'];
const emptyProgress = (): CampaignProgress => ({ total: 0, pending: 0, inProgress: 0, completed: 0, failed: 0, skippedDnc: 0, exhausted: 0 });

export function publicCampaign(campaign: StoredCampaign): Campaign {
  const { orgId: _orgId, ...visible } = campaign;
  return visible;
}

async function requireCampaign(deps: Pick<CampaignDeps, 'campaigns'>, orgId: string, campaignId: string): Promise<StoredCampaign> {
  const campaign = await deps.campaigns.get(orgId, campaignId);
  if (!campaign) throw new NotFoundError(`Campaign ${campaignId} not found.`);
  return campaign;
}

/** `POST /v1/chat/call-campaigns`: a DRAFT; its agent and number must exist (they are checked again at start). */
export async function createCampaign(deps: CampaignDeps, orgId: string, input: CreateCampaignInput, sealResponse?: SealResponse): Promise<Campaign> {
  const [agent, number] = await Promise.all([deps.agents.get(orgId, input.agentId), deps.voice.getPhoneNumber(orgId, input.phoneNumberId)]);
  if (!agent) throw new NotFoundError(`Agent ${input.agentId} not found.`);
  if (!number) throw new NotFoundError(`Phone number ${input.phoneNumberId} not found.`);
  const now = deps.clock.now().toISOString();
  const campaign: StoredCampaign = { id: newId(), orgId, ...input, status: 'DRAFT', progress: emptyProgress(), createdAt: now, updatedAt: now };
  const visible = publicCampaign(campaign);
  await deps.campaigns.create(campaign, sealResponse?.(visible));
  return visible;
}

export async function getCampaign(deps: Pick<CampaignDeps, 'campaigns'>, orgId: string, campaignId: string): Promise<Campaign> {
  return publicCampaign(await requireCampaign(deps, orgId, campaignId));
}

export async function listCampaigns(deps: Pick<CampaignDeps, 'campaigns'>, orgId: string, query: { page: number; limit: number; status?: CampaignStatus | undefined }) {
  const campaigns = (await deps.campaigns.list(orgId))
    .filter((campaign) => query.status === undefined || campaign.status === query.status)
    .sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0))
    .map(publicCampaign);
  return paginate(campaigns, query.page, query.limit);
}

/**
 * Moves a campaign from one of `from` to `to`, with `campaign.updated`; 409 INVALID_CAMPAIGN_TRANSITION naming
 * the current status otherwise (also when another change won meanwhile).
 */
export async function moveCampaign(
  deps: Pick<CampaignDeps, 'campaigns' | 'clock'>,
  campaign: StoredCampaign,
  from: readonly CampaignStatus[],
  to: CampaignStatus,
  extra: { startedAt?: string; completedAt?: string; progress?: CampaignProgress } = {},
): Promise<StoredCampaign> {
  const refuse = (current: CampaignStatus) =>
    new InvalidCampaignTransitionError(`Campaign ${campaign.id} is ${current}; it can become ${to} only from ${from.join(' or ')}.`, {
      details: [{ field: 'status', message: current }],
    });
  if (!from.includes(campaign.status)) throw refuse(campaign.status);
  const updatedAt = nextUpdatedAt(deps.clock, campaign.updatedAt);
  const progress = extra.progress ?? campaign.progress;
  const event = campaignEvents.campaignUpdated(campaign.orgId, updatedAt, { campaignId: campaign.id, name: campaign.name, status: to, previousStatus: campaign.status, progress });
  if (!(await deps.campaigns.transition(campaign, from, to, updatedAt, event, extra))) {
    throw refuse((await requireCampaign(deps, campaign.orgId, campaign.id)).status);
  }
  return { ...campaign, status: to, updatedAt, progress, ...(extra.startedAt ? { startedAt: extra.startedAt } : {}), ...(extra.completedAt ? { completedAt: extra.completedAt } : {}) };
}

/** The zone a contact's windows are read in (docs/campaigns.md#windows). */
export function contactTimeZone(campaign: Pick<StoredCampaign, 'schedule'>, contact: Pick<Contact, 'timezone' | 'phoneNumber'>): string {
  const { timezoneMode, timezone } = campaign.schedule;
  if (timezoneMode === 'fixed') return timezone ?? 'UTC';
  return contactTimezone(contact) ?? timezone ?? 'UTC';
}

/**
 * `POST …/{id}/start`: DRAFT → SCHEDULED. The audience is resolved now: one row per contact, due at its first
 * window opening after `startAt` (contacts marked do-not-call are skipped at once; every other is checked again
 * at dial time). The dispatcher makes it RUNNING at `startAt`.
 */
export async function startCampaign(deps: CampaignDeps, orgId: string, campaignId: string): Promise<Campaign> {
  const campaign = await requireCampaign(deps, orgId, campaignId);
  // Not a DRAFT: the 409 naming its status.
  if (campaign.status !== 'DRAFT') await moveCampaign(deps, campaign, ['DRAFT'], 'SCHEDULED');
  // Refuse now what would refuse every dial: no credentials, an agent that cannot call.
  await callLine(deps, orgId, campaign.phoneNumberId, campaign.agentId);
  const nowMs = deps.clock.now().getTime();
  const from = Math.max(nowMs, Date.parse(campaign.schedule.startAt));
  const endAt = campaign.schedule.endAt ? Date.parse(campaign.schedule.endAt) : Number.POSITIVE_INFINITY;
  const progress = emptyProgress();
  const openings = new Map<string, number | undefined>();
  const rows: CampaignContactRow[] = [];
  for await (const contact of listAudience(deps, orgId, campaign.audience)) {
    if (rows.length >= campaignLimits.maxAudience) {
      throw new ValidationError(`The audience has more than ${campaignLimits.maxAudience} contacts; narrow it with tags or contactIds.`, {
        details: [{ field: 'audience', message: `more than ${campaignLimits.maxAudience} contacts` }],
      });
    }
    const timezone = contactTimeZone(campaign, contact);
    if (!openings.has(timezone)) openings.set(timezone, nextWindowOpening(from, timezone, campaign.schedule.windows));
    const opening = openings.get(timezone);
    const state: CampaignContactState = contact.doNotCall ? 'SKIPPED_DNC' : opening === undefined || opening >= endAt ? 'EXHAUSTED' : 'PENDING';
    progress.total += 1;
    progress[counterOf(state)] += 1;
    rows.push({
      orgId,
      campaignId,
      contactId: contact.id,
      phoneNumber: contact.phoneNumber,
      timezone,
      attributes: contact.attributes,
      state,
      attempts: 0,
      sessions: [],
      ...(state === 'PENDING' ? { nextAttemptAt: opening } : {}),
    });
  }
  await deps.campaigns.putContacts(rows);
  return publicCampaign(await moveCampaign(deps, campaign, ['DRAFT'], 'SCHEDULED', { startedAt: new Date(nowMs).toISOString(), progress }));
}

/** `…/pause`: RUNNING → PAUSED. No claim succeeds after this write; calls in progress finish. */
export async function pauseCampaign(deps: CampaignDeps, orgId: string, campaignId: string): Promise<Campaign> {
  return publicCampaign(await moveCampaign(deps, await requireCampaign(deps, orgId, campaignId), ['RUNNING'], 'PAUSED'));
}

/** `…/resume`: PAUSED → RUNNING; the next dispatch continues with the contacts still due. */
export async function resumeCampaign(deps: CampaignDeps, orgId: string, campaignId: string): Promise<Campaign> {
  return publicCampaign(await moveCampaign(deps, await requireCampaign(deps, orgId, campaignId), ['PAUSED'], 'RUNNING'));
}

/** `…/cancel`: any non-final status → CANCELED. No more dials; calls in progress finish. */
export async function cancelCampaign(deps: CampaignDeps, orgId: string, campaignId: string): Promise<Campaign> {
  const campaign = await requireCampaign(deps, orgId, campaignId);
  return publicCampaign(await moveCampaign(deps, campaign, nonFinalStatuses, 'CANCELED', { completedAt: deps.clock.now().toISOString() }));
}

const callsListing = (campaignId: string, state: string | undefined) => `campaign-calls:${campaignId}:${state ?? '*'}`;

/** `GET …/{id}/calls`: one row per contact (contact-id order), its attempts and their sessions; keyset pages. */
export async function listCampaignCalls(
  deps: Pick<CampaignDeps, 'campaigns'>,
  orgId: string,
  campaignId: string,
  query: { limit: number; cursor?: string | undefined; state?: CampaignContactState | undefined },
): Promise<{ data: CampaignCall[]; nextCursor?: string }> {
  await requireCampaign(deps, orgId, campaignId);
  const listing = callsListing(campaignId, query.state);
  const position = query.cursor ? readPageCursor(query.cursor, listing, 'state') : undefined;
  const { rows, after } = await deps.campaigns.listCalls(orgId, campaignId, query.limit, position?.after, query.state);
  return { data: rows.map(publicCall), ...nextCursorAfter(after, position?.page ?? 1, listing) };
}

function publicCall(row: CampaignContactRow): CampaignCall {
  return {
    contactId: row.contactId,
    phoneNumber: row.phoneNumber,
    timezone: row.timezone,
    state: row.state,
    attempts: row.attempts,
    ...(row.lastOutcome ? { lastOutcome: row.lastOutcome } : {}),
    ...(row.state === 'PENDING' && row.nextAttemptAt !== undefined ? { nextAttemptAt: new Date(row.nextAttemptAt).toISOString() } : {}),
    sessions: row.sessions,
  };
}
