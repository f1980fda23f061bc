/**
 * One campaign dispatch cycle in a process of its own (argv: orgId campaignId budgetMs), against the database and
 * carrier its environment names: for tests that kill the dispatcher mid-batch. Prints `dispatching`, then the report.
 */
import { campaignRuntime } from '../../shared/campaigns/campaign-runtime.ts';
import { dispatchCampaign } from '../../shared/campaigns/campaign-dispatcher.ts';

const [orgId, campaignId, budgetMs] = process.argv.slice(2) as [string, string, string];
console.log('dispatching');
console.log(JSON.stringify(await dispatchCampaign(campaignRuntime(), orgId, campaignId, Number(budgetMs))));
