import { cancelCampaign, createCampaign, getCampaign, listCampaignCalls, listCampaigns, pauseCampaign, resumeCampaign, startCampaign } from '../../shared/campaigns/campaigns.ts';
import { createHttpHandler } from '../../shared/platform/http/handler.ts';
import { campaignRuntime } from '../../shared/campaigns/campaign-runtime.ts';
import { callCampaignRoutes } from './routes.ts';

export const handler = createHttpHandler(
  callCampaignRoutes,
  {
    createCampaign: ({ deps, principal, body, sealResponse }) => createCampaign(deps, principal.orgId, body, sealResponse),
    listCampaigns: ({ deps, principal, query }) => listCampaigns(deps, principal.orgId, query),
    getCampaign: ({ deps, principal, params }) => getCampaign(deps, principal.orgId, params.id),
    listCampaignCalls: ({ deps, principal, params, query }) => listCampaignCalls(deps, principal.orgId, params.id, query),
    startCampaign: ({ deps, principal, params }) => startCampaign(deps, principal.orgId, params.id),
    pauseCampaign: ({ deps, principal, params }) => pauseCampaign(deps, principal.orgId, params.id),
    resumeCampaign: ({ deps, principal, params }) => resumeCampaign(deps, principal.orgId, params.id),
    cancelCampaign: ({ deps, principal, params }) => cancelCampaign(deps, principal.orgId, params.id),
  },
  campaignRuntime,
);
