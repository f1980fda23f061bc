import type { CampaignsBenchResult } from './campaigns-runtime.ts';
import { childResult } from './child-result.ts';
import type { Check } from './report.ts';

export type { CampaignsBenchResult };

/**
 * Issue 12's targets: at least 1,000 dials a minute when the cap allows, at most 4 of the campaign's own item
 * writes per dial, and no new dial later than a second after the pause answered (docs/campaigns.md#pause).
 */
export const campaignTargets = { dialsPerMinute: 1_000, campaignWritesPerDial: 4, pauseToLastDialMs: 1_000 } as const;

/** In a child process on a fresh DynamoDB Local: a campaign (2,000 contacts unless BENCH_CAMPAIGN_CONTACTS says), its floor, and a pause. */
export function measureCampaigns(dynamodbEndpoint: string, tableName: string): Promise<CampaignsBenchResult> {
  return childResult<CampaignsBenchResult>('campaigns-runtime.ts', dynamodbEndpoint, tableName);
}

export function campaignChecks(result: CampaignsBenchResult): Check[] {
  return [
    {
      figure: `campaign of ${result.contacts} contacts, dials per minute (cap ${result.maxConcurrentCalls})`,
      value: result.dialsPerMinute,
      unit: '/min',
      target: campaignTargets.dialsPerMinute,
      comparison: '>=',
      pass: result.dialsPerMinute >= campaignTargets.dialsPerMinute,
    },
    {
      figure: "campaign's own item writes per dial (claim + settle)",
      value: result.campaignWritesPerDial,
      unit: 'writes',
      target: campaignTargets.campaignWritesPerDial,
      comparison: '<=',
      pass: result.campaignWritesPerDial <= campaignTargets.campaignWritesPerDial,
    },
    {
      figure: 'campaign pause → last new dial',
      value: result.pauseToLastDialMs,
      unit: 'ms',
      target: campaignTargets.pauseToLastDialMs,
      comparison: '<=',
      pass: result.pauseToLastDialMs <= campaignTargets.pauseToLastDialMs,
    },
  ];
}

export function campaignsReport(result: CampaignsBenchResult): string[] {
  return [
    '',
    `15. Call campaigns (child process on DynamoDB Local and the Twilio simulator; callees busy, not answering or failing) — targets: ≥ ${campaignTargets.dialsPerMinute} dials/min, ≤ ${campaignTargets.campaignWritesPerDial} campaign writes per dial, pause → last dial ≤ ${campaignTargets.pauseToLastDialMs} ms`,
    `   ${result.contacts} contacts, cap ${result.maxConcurrentCalls}: ${result.dialsPerMinute} dials/min (${(result.durationMs / 1000).toFixed(1)} s first to last dial), at most ${result.peakLiveCalls} calls live at once (the simulator's count)`,
    `   Floor, the same callees through calls/start's core with ${result.maxConcurrentCalls} in flight and no campaign: ${result.floorDialsPerMinute} dials/min`,
    `   Item writes per dial: ${result.campaignWritesPerDial} of the campaign's own (claim 2, settle 2), ${result.allWritesPerDial} in all with the call's session; the floor's call alone: ${result.floorWritesPerDial}`,
    `   Pause after 200 dials: the last new dial ${result.pauseToLastDialMs} ms after the pause answered (${result.dialsAfterPause} dials after it: attempts claimed before it)`,
  ];
}
