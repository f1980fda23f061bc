/**
 * Campaigns on the local runtime, in a child process on the database the parent names (through a proxy that counts
 * every item written): the API, the Twilio simulator (callees that are busy, do not answer or fail: no conversation,
 * so the figures are the dispatcher's), and the dispatcher's cycles run as its Lambda runs them. Reports and exits.
 */
import { queueConsumers, tableStreamConsumers } from '../functions/consumers.ts';
import { routeGroups } from '../functions/route-groups.ts';
import { useLocalDatabase } from '../infra/local/environment.ts';
import { startLocalQueues } from '../infra/local/queues.ts';
import { createLocalServer } from '../infra/local/server.ts';
import { startLocalVoice } from '../infra/local/voice.ts';
import { campaignRuntime } from '../shared/campaigns/campaign-runtime.ts';
import { benchOrganization } from './bench-api.ts';
import { dispatchCampaign } from '../shared/campaigns/campaign-dispatcher.ts';
import { importContacts } from '../shared/campaigns/contact-import.ts';
import { callLine, placeOutboundCall } from '../shared/voice/voice.ts';
import { startDynamoDbProxy } from './dynamodb-proxy.ts';

export interface CampaignsBenchResult {
  contacts: number;
  maxConcurrentCalls: number;
  /** First to last dial of the 10,000-contact campaign, as the simulator saw them. */
  dialsPerMinute: number;
  durationMs: number;
  peakLiveCalls: number;
  /** Items written per dial: the campaign's own (claim and settle), and everything (the call's session included). */
  campaignWritesPerDial: number;
  allWritesPerDial: number;
  /** Floor: the same kind of calls placed through `calls/start`'s core, as many in flight as the cap, no campaign. */
  floorDialsPerMinute: number;
  floorWritesPerDial: number;
  /** Pause answered → the last new dial the simulator saw, and how many dials came after the pause. */
  pauseToLastDialMs: number;
  dialsAfterPause: number;
}

/**
 * The issue asks for 10,000 contacts (`BENCH_CAMPAIGN_CONTACTS=10000`); the default keeps the section within minutes
 * on DynamoDB Local, whose every call the dials share (the rate is a steady state, reached within the first hundreds).
 */
const contacts = Number(process.env.BENCH_CAMPAIGN_CONTACTS ?? 2_000);
const cap = 100;
const floorCalls = 500;
const pausedContacts = 600;
const dialsBeforePause = 200;

const target = process.env.BENCH_DYNAMODB_ENDPOINT as string;
/** Items written, by whether their key is a campaign's (the campaign item and its contact rows). */
const written = { campaign: 0, other: 0 };
const proxy = await startDynamoDbProxy(target, (operation, body) => {
  if (!['PutItem', 'UpdateItem', 'DeleteItem', 'TransactWriteItems', 'BatchWriteItem'].includes(operation)) return;
  const text = body.toString('utf8');
  const keys = [...text.matchAll(/"pk":\{"S":"([^"]*)"\},"sk":\{"S":"([^"]*)"\}|"sk":\{"S":"([^"]*)"\},"pk":\{"S":"([^"]*)"\}/g)];
  const parsed = JSON.parse(text) as { TransactItems?: unknown[]; RequestItems?: Record<string, unknown[]> };
  const count = Math.max(1, parsed.TransactItems?.length ?? Object.values(parsed.RequestItems ?? {}).reduce((sum, requests) => sum + requests.length, 0));
  const campaignItems = keys.filter((match) => /CAMPAIGN#/.test(`${match[1] ?? match[4]}|${match[2] ?? match[3]}`)).length;
  written.campaign += Math.min(count, campaignItems);
  written.other += count - Math.min(count, campaignItems);
});
useLocalDatabase({ endpoint: proxy.endpoint, tableName: process.env.TABLE_NAME as string });
const queues = await startLocalQueues({ consumers: queueConsumers.filter((consumer) => consumer.name === 'call-backstop'), rules: [], streamConsumers: tableStreamConsumers });
const { server, preload } = createLocalServer(routeGroups);
await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
const baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
const voice = await startLocalVoice(baseUrl, process.env, { queues });
await preload();
const deps = campaignRuntime();
const simulator =
  voice.simulator ??
  (() => {
    throw new Error('The bench measures campaigns against the Twilio simulator: unset TWILIO_API_BASE_URL.');
  })();

/** An organization ready to call, with `count` contacts on callees that end without a conversation. */
async function campaignOrg(count: number, firstArea: number) {
  const { orgId, call } = await benchOrganization(deps, baseUrl);
  await call('PUT', '/v1/chat/telephony/twilio', { accountSid: `AC${'0'.repeat(32)}`, authToken: 'f'.repeat(32) });
  const agent = await call('POST', '/v2/chat/agents', { fullName: 'Bench', description: 'Bench', role: 'Bench', voiceEnabled: true, voicePipelineMode: 'pipeline' });
  const number = await call('POST', '/api/v1/phone-numbers/buy', { area_code: '415' });
  // Busy (60s), no answer (70s) and failing (80s) callees, 30 an area code.
  const numbers = Array.from({ length: count }, (_, index) => `+1${firstArea + Math.floor(index / 30)}55501${60 + (index % 30)}`);
  const imported = await importContacts(deps, orgId, ['phoneNumber,name,tags', ...numbers.map((phone, index) => `${phone},Contact ${index},bench`)].join('\n'));
  if (imported.created !== count) throw new Error(`campaigns bench: imported ${imported.created} of ${count} contacts`);
  const campaign = await call('POST', '/v1/chat/call-campaigns', {
    name: 'Bench',
    agentId: agent.id,
    phoneNumberId: number.id,
    audience: { tags: ['bench'] },
    schedule: { startAt: new Date(Date.now() - 60_000).toISOString(), windows: [{ days: ['MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT', 'SUN'], start: '00:00', end: '24:00' }] },
    maxConcurrentCalls: cap,
    ttl: 30,
  });
  return { orgId, call, campaignId: campaign.id as string, agentId: agent.id as string, phoneNumberId: number.id as string, numbers: new Set(numbers) };
}

/** Dispatch cycles (50 s each, as on AWS) until the campaign stops running. */
async function dispatchUntilStopped(orgId: string, campaignId: string): Promise<void> {
  for (;;) {
    const report = await dispatchCampaign(deps, orgId, campaignId, 50_000);
    if (['completed', 'not-running', 'gone', 'refused'].includes(report.stopped)) return;
  }
}

const dialTimes = (numbers: ReadonlySet<string>) => simulator.outboundCalls().filter((call) => numbers.has(call.to)).map((call) => call.createdAt);

// The 10,000-contact campaign.
const main = await campaignOrg(contacts, 200);
await main.call('POST', `/v1/chat/call-campaigns/${main.campaignId}/start`);
simulator.liveCalls.resetPeak();
const before = { ...written };
await dispatchUntilStopped(main.orgId, main.campaignId);
const mainDials = dialTimes(main.numbers);
if (mainDials.length !== contacts) throw new Error(`campaigns bench: ${mainDials.length} dials for ${contacts} contacts`);
// The last settles arrive after the last dial: the writes are counted once every call has ended.
for (let waited = 0; waited < 30_000 && simulator.liveCalls.current() > 0; waited += 100) await new Promise((resolve) => setTimeout(resolve, 100));
await new Promise((resolve) => setTimeout(resolve, 1_000));
const durationMs = Math.max(...mainDials) - Math.min(...mainDials);
const campaignWrites = written.campaign - before.campaign;
const otherWrites = written.other - before.other;
const peakLiveCalls = simulator.liveCalls.peak();

// Floor: the same callees dialled through calls/start's core, `cap` in flight.
const floor = await campaignOrg(floorCalls, 600);
const line = await callLine(deps, floor.orgId, floor.phoneNumberId, floor.agentId);
const floorNumbers = [...floor.numbers];
const floorBefore = { ...written };
let next = 0;
await Promise.all(
  Array.from({ length: cap }, async () => {
    while (next < floorNumbers.length) {
      const to = floorNumbers[next++] as string;
      await placeOutboundCall(deps, floor.orgId, line, { sessionId: crypto.randomUUID(), to, ttl: 30, sessionVariables: {} }).catch(() => undefined);
      // A slot frees when its call ends, as a campaign's does.
      while (simulator.liveCalls.current() >= cap) await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }),
);
const floorDials = dialTimes(floor.numbers);
for (let waited = 0; waited < 30_000 && simulator.liveCalls.current() > 0; waited += 100) await new Promise((resolve) => setTimeout(resolve, 100));
await new Promise((resolve) => setTimeout(resolve, 1_000));
const floorWrites = written.campaign + written.other - floorBefore.campaign - floorBefore.other;

// Pause: a campaign paused after 500 dials; the last new dial after the pause's answer.
const paused = await campaignOrg(pausedContacts, 700);
await paused.call('POST', `/v1/chat/call-campaigns/${paused.campaignId}/start`);
const dispatching = dispatchUntilStopped(paused.orgId, paused.campaignId);
while (dialTimes(paused.numbers).length < dialsBeforePause) await new Promise((resolve) => setTimeout(resolve, 5));
await paused.call('POST', `/v1/chat/call-campaigns/${paused.campaignId}/pause`);
const pausedAt = Date.now();
await dispatching;
await new Promise((resolve) => setTimeout(resolve, 1_000));
const afterPause = dialTimes(paused.numbers).filter((at) => at > pausedAt);

const result: CampaignsBenchResult = {
  contacts,
  maxConcurrentCalls: cap,
  dialsPerMinute: Math.round(contacts / (durationMs / 60_000)),
  durationMs,
  peakLiveCalls,
  campaignWritesPerDial: Math.round((campaignWrites / contacts) * 100) / 100,
  allWritesPerDial: Math.round(((campaignWrites + otherWrites) / contacts) * 100) / 100,
  floorDialsPerMinute: Math.round(floorDials.length / ((Math.max(...floorDials) - Math.min(...floorDials)) / 60_000)),
  floorWritesPerDial: Math.round((floorWrites / floorCalls) * 100) / 100,
  pauseToLastDialMs: afterPause.length ? Math.max(...afterPause) - pausedAt : 0,
  dialsAfterPause: afterPause.length,
};
process.send?.(result);
await voice.stop();
await queues.stop();
server.close();
await proxy.close();
process.exit(0);
