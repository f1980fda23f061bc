import { defineRouteGroup } from '../../shared/platform/http/route.ts';
import { idParams } from '../../shared/platform/schemas/common.ts';
import { campaignCallList, campaignCallsQuery, campaignList, campaignRecord, createCampaignBody, listCampaignsQuery } from '../../shared/campaigns/campaign-schemas.ts';

const transition = (action: 'start' | 'pause' | 'resume' | 'cancel', summary: string) =>
  ({
    method: 'POST',
    path: `/v1/chat/call-campaigns/{id}/${action}`,
    scope: 'campaigns:write',
    summary,
    successStatus: 200,
    params: idParams,
    response: campaignRecord,
    errors: ['INVALID_CAMPAIGN_TRANSITION'],
  }) as const;

export const callCampaignRoutes = defineRouteGroup({
  name: 'call-campaigns',
  entry: 'functions/call-campaigns/handler.ts',
  // Starting checks that the organization's carrier credentials open (docs/campaigns.md#states).
  opensSecrets: true,
  routes: {
    createCampaign: {
      method: 'POST',
      path: '/v1/chat/call-campaigns',
      scope: 'campaigns:write',
      summary: 'Create a call campaign (DRAFT): who to call, from which number, with which agent, when, and how to retry',
      successStatus: 201,
      body: createCampaignBody,
      idempotent: true,
      response: campaignRecord,
      errors: ['NOT_FOUND'],
    },
    listCampaigns: {
      method: 'GET',
      path: '/v1/chat/call-campaigns',
      scope: 'campaigns:read',
      summary: "The organization's call campaigns, newest first",
      successStatus: 200,
      query: listCampaignsQuery,
      response: campaignList,
    },
    getCampaign: {
      method: 'GET',
      path: '/v1/chat/call-campaigns/{id}',
      scope: 'campaigns:read',
      summary: 'A call campaign with its progress counters',
      successStatus: 200,
      params: idParams,
      response: campaignRecord,
    },
    listCampaignCalls: {
      method: 'GET',
      path: '/v1/chat/call-campaigns/{id}/calls',
      scope: 'campaigns:read',
      summary: "One row per contact: attempts, last outcome, next attempt time, and each attempt's session",
      successStatus: 200,
      params: idParams,
      query: campaignCallsQuery,
      response: campaignCallList,
    },
    startCampaign: {
      ...transition('start', 'Start a DRAFT campaign: resolves its audience; it runs from schedule.startAt'),
      errors: ['INVALID_CAMPAIGN_TRANSITION', 'AGENT_NOT_VOICE_ENABLED', 'VOICE_PIPELINE_MODE_UNSUPPORTED', 'MEDIA_WORKER_NOT_CONFIGURED', 'AGENT_INACTIVE', 'TELEPHONY_NOT_CONFIGURED', 'SESSION_CREATION_ERROR'],
    },
    pauseCampaign: transition('pause', 'Pause a RUNNING campaign: no new dial after this answer; calls in progress finish'),
    resumeCampaign: transition('resume', 'Resume a PAUSED campaign where it stopped'),
    cancelCampaign: transition('cancel', 'Cancel a campaign that has not finished: no more dials; calls in progress finish'),
  },
});
