/**
 * The dispatcher under duress: killed mid-batch (a child process whose DynamoDB traffic passes through a proxy that
 * kills it the moment a claim commits), delivered the same message several times at once, and driven by a clock
 * the test moves across a daylight-saving change. The carrier is the Twilio simulator; its own record of the calls
 * it placed is the evidence.
 */
import type { SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { handler as dispatcherHandler } from '../../functions/campaign-dispatcher/handler.ts';
import { campaignRuntime } from '../../shared/campaigns/campaign-runtime.ts';
import { dispatchCampaign } from '../../shared/campaigns/campaign-dispatcher.ts';
import { startCampaign, createCampaign } from '../../shared/campaigns/campaigns.ts';
import type { Clock } from '../../shared/platform/clock.ts';
import { createCampaignBody } from '../../shared/campaigns/campaign-schemas.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { crashProxy } from '../support/crash-proxy.ts';
import { childEnv, killGroup, spawnInGroup, waitForExit } from '../support/local-process.ts';
import { closeServer, listenOnLoopback } from '../support/loopback-server.ts';
import { Receiver } from '../support/webhook-receiver.ts';
import { voiceOrg } from '../support/voice.ts';
import { addContacts, allCalls, callee, campaignBody, dialsOf, startedCampaign, unlimitedPlans } from '../support/campaigns.ts';
import { testTableName } from '../support/database.ts';

let api: TestApi;
const receiver = new Receiver();
let receiverUrl: string;
let proxyUrl: string;
/**
 * Set while a test wants the dispatcher process killed once its `remaining`-th claim has committed; `killedAt` is
 * then the contact of that claim, which the dead dispatcher never dialled.
 */
let killAfterClaims: { remaining: number; kill: () => void; killedAt?: string } | undefined;

const database = new URL(inject('dynamodbEndpoint'));
const proxy = crashProxy(database, (operation, body) => {
  if (operation !== 'TransactWriteItems' || !body.includes('list_append(sessions')) return undefined;
  // The claim is committed: at the chosen one, the dispatcher dies before it hears so, let alone dials.
  return () => {
    if (!killAfterClaims || --killAfterClaims.remaining > 0) return false;
    killAfterClaims.killedAt = /CONTACT#([0-9a-f-]{36})/.exec(body.toString())?.[1];
    killAfterClaims.kill();
    return true;
  };
});

beforeAll(async () => {
  receiverUrl = await receiver.start();
  // Short calls and a short backstop, so that an attempt whose dispatcher died after writing its session settles soon.
  api = await startApi({ PLANS: unlimitedPlans, CALL_RING_TIMEOUT_SECONDS: '5', CALL_BACKSTOP_GRACE_SECONDS: '0', CAMPAIGN_CLAIM_GRACE_SECONDS: '0' }, { voice: true });
  proxyUrl = `http://127.0.0.1:${await listenOnLoopback(proxy)}`;
});
afterAll(async () => {
  await api.close();
  await receiver.close();
  await closeServer(proxy);
});

const simulator = () => api.voice!.simulator;

/** Dispatch cycles until the campaign completes (or the time is up). */
async function dispatchUntilDone(deps: ReturnType<typeof campaignRuntime>, orgId: string, campaignId: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const report = await dispatchCampaign(deps, orgId, campaignId, 1_000);
    if (report.stopped === 'completed' || report.stopped === 'not-running') return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** No attempt was dialled twice, and every carrier call is an attempt's own session. */
function expectOneDialPerAttempt(rows: any[], dials: { sessionId: string }[]): void {
  const sessions = dials.map((dial) => dial.sessionId);
  expect(new Set(sessions).size).toBe(sessions.length);
  const attemptSessions = new Set(rows.flatMap((row) => row.sessions.map((attempt: { sessionId: string }) => attempt.sessionId)));
  for (const session of sessions) expect(attemptSessions.has(session)).toBe(true);
}

describe('a dispatcher killed mid-batch', () => {
  it('never dials a contact twice for an attempt, and dials what the dead one claimed but never dialled as that same attempt', async () => {
    const org = await voiceOrg(api, receiver, receiverUrl);
    const audience = Array.from({ length: 30 }, (_, n) => ({ phoneNumber: callee(917, n), tags: ['campaign'] }));
    await addContacts(org.orgId, audience);
    const numbers = new Set(audience.map((spec) => spec.phoneNumber));
    // The default retry policy (busy, no answer): a claim lost to the crash must not need a retry of failures.
    const campaignId = await startedCampaign(api, org.key, campaignBody(org, { maxConcurrentCalls: 10, ttl: 10 }));
    // The cap is 10: the child has ten dials in flight when it dies at its fifth claim, the others at every stage.
    const deps = campaignRuntime();

    const child = spawnInGroup(
      ['test/support/campaign-dispatch-child.ts', org.orgId, campaignId, '20000'],
      childEnv({
        DYNAMODB_ENDPOINT: proxyUrl,
        TABLE_NAME: testTableName(),
        SECRETS_KEY_FILE: inject('secretsKeyFile'),
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'local',
        AWS_SECRET_ACCESS_KEY: 'local',
        TWILIO_API_BASE_URL: simulator().baseUrl,
        PUBLIC_BASE_URL: api.baseUrl,
        VOICE_RELAY_URL: process.env.VOICE_RELAY_URL as string,
        PLANS: unlimitedPlans,
      }),
    );
    const crash: NonNullable<typeof killAfterClaims> = { remaining: 5, kill: () => killGroup(child, 'SIGKILL') };
    killAfterClaims = crash;
    expect(await waitForExit(child, 30_000)).toEqual({ code: null, signal: 'SIGKILL' });
    killAfterClaims = undefined;
    const dialledByTheDead = dialsOf(simulator(), numbers).length;
    expect(dialledByTheDead).toBeLessThan(10);
    expect(crash.killedAt).toBeDefined();

    await dispatchUntilDone(deps, org.orgId, campaignId, 60_000);

    const rows = await allCalls(api, org.key, campaignId);
    const campaign = await api.request('GET', `/v1/chat/call-campaigns/${campaignId}`, { key: org.key });
    expect(campaign.body.status).toBe('COMPLETED');
    const dials = dialsOf(simulator(), numbers);
    expectOneDialPerAttempt(rows, dials);
    const dialsOfRow = (row: any) => dials.filter((dial) => dial.sessionId === row.sessions[0].sessionId).length;
    // The claim that killed the dispatcher was never dialled: it was given back, not spent, and dialled as attempt 1.
    const stranded = rows.find((row) => row.contactId === crash.killedAt);
    expect(stranded).toMatchObject({ state: 'COMPLETED', attempts: 1, sessions: [{ attempt: 1, outcome: 'ANSWERED' }] });
    expect(dialsOfRow(stranded)).toBe(1);
    // Every contact is called on its first attempt, once; only an attempt whose session the dead dispatcher had
    // written (it may have asked the carrier; nobody can tell) is left undialled, FAILED, never dialled twice.
    for (const row of rows) {
      expect(row.attempts).toBe(1);
      expect([row.state, dialsOfRow(row)], row.contactId).toEqual(row.state === 'COMPLETED' ? ['COMPLETED', 1] : ['FAILED', 0]);
    }
    expect(dials).toHaveLength(campaign.body.progress.completed);
    expect(campaign.body.progress).toMatchObject({ completed: 30 - campaign.body.progress.failed, inProgress: 0, pending: 0 });
  }, 120_000);
});

describe('duplicated deliveries', () => {
  it('of the same dispatch message, handled side by side, dial each attempt once and never above the cap', async () => {
    const org = await voiceOrg(api, receiver, receiverUrl);
    const audience = Array.from({ length: 24 }, (_, n) => ({ phoneNumber: callee(347, n < 12 ? n : 60 + n - 12), tags: ['campaign'] }));
    await addContacts(org.orgId, audience);
    const numbers = new Set(audience.map((spec) => spec.phoneNumber));
    const campaignId = await startedCampaign(api, org.key, campaignBody(org, { maxConcurrentCalls: 3 }));
    simulator().liveCalls.resetPeak();
    const record = (messageId: string) => ({ messageId, body: JSON.stringify({ kind: 'campaign.dispatch', orgId: org.orgId, campaignId }) });
    const delivery = { Records: [record('a'), record('b'), record('c')] } as unknown as SQSEvent;

    const deadline = Date.now() + 90_000;
    for (;;) {
      // The same message three times in a batch, and two batches at once: six cycles of one campaign side by side.
      const answers = await Promise.all([dispatcherHandler(delivery), dispatcherHandler(delivery)]);
      expect(answers.flatMap((answer) => answer.batchItemFailures)).toEqual([]);
      const status = (await api.request('GET', `/v1/chat/call-campaigns/${campaignId}`, { key: org.key })).body.status;
      if (status === 'COMPLETED' || Date.now() > deadline) break;
    }

    const rows = await allCalls(api, org.key, campaignId);
    expect(rows.map((row) => row.state).sort()).toEqual([...Array(12).fill('COMPLETED'), ...Array(12).fill('EXHAUSTED')]);
    const dials = dialsOf(simulator(), numbers);
    expectOneDialPerAttempt(rows, dials);
    expect(dials).toHaveLength(12 + 12 * 2);
    expect(simulator().liveCalls.peak()).toBeLessThanOrEqual(3);
  }, 120_000);
});

describe('windows in the dispatcher', () => {
  it('dials contacts of three zones at their own 09:00 across the EU daylight-saving change, with the clock the test moves', async () => {
    const org = await voiceOrg(api, receiver, receiverUrl);
    const zones = ['Europe/Berlin', 'America/New_York', 'Asia/Kolkata'];
    // Busy callees (one attempt each): what matters is when each was dialled.
    const audience = Array.from({ length: 9 }, (_, n) => ({ phoneNumber: callee(202, 60 + n), tags: ['campaign'], timezone: zones[n % 3] as string }));
    const contacts = await addContacts(org.orgId, audience);
    let current = Date.parse('2026-03-28T22:00:00Z');
    const clock: Clock = { now: () => new Date(current) };
    const deps = { ...campaignRuntime(), clock };
    const input = createCampaignBody.parse(
      campaignBody(org, {
        // Berlin changes to summer time at 01:00 UTC on 29 March: its 09:00 is 07:00 UTC that day, not 08:00.
        schedule: { startAt: '2026-03-29T00:00:00Z', windows: [{ days: ['SUN'], start: '09:00', end: '09:30' }], timezoneMode: 'callee' },
        retry: { maxAttempts: 1, delaySeconds: 0, on: [] },
      }),
    );
    const campaign = await createCampaign(deps, org.orgId, input);
    await startCampaign(deps, org.orgId, campaign.id);

    for (; current <= Date.parse('2026-03-29T15:00:00Z'); current += 5 * 60 * 1000) await dispatchCampaign(deps, org.orgId, campaign.id, 50);
    await dispatchUntilDone(deps, org.orgId, campaign.id, 30_000);

    const rows = await allCalls(api, org.key, campaign.id);
    const dialledAt = new Map(rows.map((row) => [row.contactId, row.sessions.map((attempt: { startedAt: string }) => attempt.startedAt)]));
    const expected: Record<string, string> = { 'Europe/Berlin': '2026-03-29T07:00:00.000Z', 'America/New_York': '2026-03-29T13:00:00.000Z', 'Asia/Kolkata': '2026-03-29T03:30:00.000Z' };
    for (const contact of contacts) expect(dialledAt.get(contact.id), contact.timezone).toEqual([expected[contact.timezone as string]]);
  }, 120_000);
});
