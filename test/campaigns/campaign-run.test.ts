/**
 * Campaigns on the Twilio simulator, end to end: `npm start`'s dispatcher (tick, queue, consumer) dials scripted
 * callees, their carrier callbacks settle each attempt, and the simulator's own count of live calls says how many
 * were up at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { Receiver } from '../support/webhook-receiver.ts';
import { voiceOrg } from '../support/voice.ts';
import { addContacts, addToDncList, allCalls, callee, campaignBody, campaignStatus, dialsOf, startedCampaign, unlimitedPlans, untilStatus } from '../support/campaigns.ts';

let api: TestApi;
const receiver = new Receiver();
let receiverUrl: string;

beforeAll(async () => {
  receiverUrl = await receiver.start();
  api = await startApi({ PLANS: unlimitedPlans, CAMPAIGN_TICK_SECONDS: '0.5' }, { streamPoller: true, queues: true, voice: true, campaignTicker: true });
});
afterAll(async () => {
  await api.close();
  await receiver.close();
});

const simulator = () => api.voice!.simulator;

describe('a 200-contact campaign with mixed outcomes', () => {
  it('brings every contact to its final state by the retry policy, never above the cap, never dialling a do-not-call number', async () => {
    const org = await voiceOrg(api, receiver, receiverUrl);
    // Three areas (New York, Chicago, Los Angeles): answer 00–39, busy 60–69, no answer 70–79, failing 80–89.
    const specs = [212, 312, 415].flatMap((area) =>
      [...Array.from({ length: 40 }, (_, n) => n), ...Array.from({ length: 30 }, (_, n) => 60 + n)].map((nn) => ({ phoneNumber: callee(area, nn), tags: ['campaign'] })),
    );
    const audience = specs.slice(0, 200);
    // Five flagged before the start, five put on the organization's list after it: both are never dialled.
    for (const spec of audience.slice(0, 5)) Object.assign(spec, { doNotCall: true });
    // Those who answer hang up at once: the conversation is the voice suites' subject, the dialling this one's.
    for (const spec of audience) if (Number(spec.phoneNumber.slice(-2)) < 50) simulator().setScript(spec.phoneNumber, { steps: [], then: 'hangup' });
    await addContacts(org.orgId, audience);
    const campaignId = await startedCampaign(api, org.key, campaignBody(org, { maxConcurrentCalls: 20 }));
    const listedLater = audience.slice(5, 10).map((spec) => spec.phoneNumber);
    await Promise.all(listedLater.map((number) => addToDncList(org.orgId, number)));
    simulator().liveCalls.resetPeak();

    const done = await untilStatus(api, org.key, campaignId, 'COMPLETED', 270_000);

    const numbers = new Set(audience.map((spec) => spec.phoneNumber));
    const dials = dialsOf(simulator(), numbers);
    expect(simulator().liveCalls.peak()).toBeLessThanOrEqual(20);
    expect(simulator().liveCalls.peak()).toBeGreaterThan(1);
    const rows = await allCalls(api, org.key, campaignId);
    expect(rows).toHaveLength(200);
    const expected = (phoneNumber: string, index: number) => {
      if (index < 10) return { state: 'SKIPPED_DNC', attempts: 0 };
      const nn = Number(phoneNumber.slice(-2));
      if (nn < 50) return { state: 'COMPLETED', attempts: 1, lastOutcome: 'ANSWERED' };
      if (nn < 70) return { state: 'EXHAUSTED', attempts: 2, lastOutcome: 'BUSY' };
      if (nn < 80) return { state: 'EXHAUSTED', attempts: 2, lastOutcome: 'NO_ANSWER' };
      return { state: 'FAILED', attempts: 1, lastOutcome: 'FAILED' };
    };
    const byNumber = new Map(rows.map((row) => [row.phoneNumber, row]));
    audience.forEach((spec, index) => expect(byNumber.get(spec.phoneNumber), spec.phoneNumber).toMatchObject(expected(spec.phoneNumber, index)));
    // One carrier call per attempt, each its attempt's own session; none to a do-not-call number.
    const attemptSessions = rows.flatMap((row) => row.sessions.map((attempt: { sessionId: string }) => attempt.sessionId));
    expect(dials.map((dial) => dial.sessionId).sort()).toEqual([...attemptSessions].sort());
    expect(new Set(attemptSessions).size).toBe(attemptSessions.length);
    expect(dials.filter((dial) => audience.slice(0, 10).some((spec) => spec.phoneNumber === dial.to))).toEqual([]);
    const counts = (state: string) => rows.filter((row) => row.state === state).length;
    expect(done.progress).toEqual({
      total: 200,
      pending: 0,
      inProgress: 0,
      completed: counts('COMPLETED'),
      failed: counts('FAILED'),
      skippedDnc: 10,
      exhausted: counts('EXHAUSTED'),
    });

    // Each attempt is a voice session of its own, carrying the campaign and the contact's attributes.
    const answered = rows.find((row) => row.state === 'COMPLETED');
    const session = await api.request('GET', `/api/v1/chat/sessions/${answered.sessions[0].sessionId}`, { key: org.key });
    expect(session.body).toMatchObject({
      type: 'VOICE',
      direction: 'OUTBOUND',
      metadata: { customerPhoneNumber: answered.phoneNumber, campaign: { campaignId, contactId: answered.contactId, attempt: 1 }, sessionVariables: { company: 'Acme' } },
    });
    // campaign.updated on every status change, through the webhooks: SCHEDULED, RUNNING, COMPLETED.
    const updates = await eventually(
      () => receiver.for(org.webhookPath).filter((receipt) => receipt.body.type === 'campaign.updated' && receipt.body.data.campaignId === campaignId),
      (found) => found.some((receipt) => receipt.body.data.status === 'COMPLETED'),
    );
    expect([...new Set(updates.map((receipt) => receipt.body.data.status))]).toEqual(['SCHEDULED', 'RUNNING', 'COMPLETED']);
    expect(updates.find((receipt) => receipt.body.data.status === 'COMPLETED')!.body.data.progress).toMatchObject({ total: 200, pending: 0, inProgress: 0 });
  }, 300_000);
});

describe('pause, resume and cancel', () => {
  it('starts no dial after the pause has answered (beyond the attempts already claimed), and resume completes the campaign', async () => {
    const org = await voiceOrg(api, receiver, receiverUrl);
    // Callees that answer and stay on the line until the time limit: calls last, so the pause lands mid-run.
    const audience = Array.from({ length: 40 }, (_, n) => ({ phoneNumber: callee(646, n < 20 ? n : 60 + n - 20), tags: ['campaign'] }));
    await addContacts(org.orgId, audience);
    const numbers = new Set(audience.map((spec) => spec.phoneNumber));
    const campaignId = await startedCampaign(api, org.key, campaignBody(org, { maxConcurrentCalls: 4, retry: { maxAttempts: 1, delaySeconds: 0, on: [] } }));
    await eventually(() => dialsOf(simulator(), numbers).length, (count) => count >= 8, 30_000);

    const paused = await api.request('POST', `/v1/chat/call-campaigns/${campaignId}/pause`, { key: org.key });
    const pausedAt = Date.now();
    expect(paused.status, paused.text).toBe(200);
    expect(paused.body.status).toBe('PAUSED');
    const dialledBefore = dialsOf(simulator(), numbers).filter((dial) => dial.createdAt <= pausedAt).length;
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const afterPause = dialsOf(simulator(), numbers).filter((dial) => dial.createdAt > pausedAt);
    // The bound (docs/campaigns.md#pause): only attempts claimed before the pause answered reach the carrier after it, at most the cap of them.
    expect(afterPause.length).toBeLessThanOrEqual(4);
    const claimedAt = new Map((await allCalls(api, org.key, campaignId)).flatMap((row) => row.sessions.map((attempt: { sessionId: string; startedAt: string }) => [attempt.sessionId, Date.parse(attempt.startedAt)])));
    for (const dial of afterPause) expect(claimedAt.get(dial.sessionId)).toBeLessThanOrEqual(pausedAt);
    const whilePaused = await campaignStatus(api, org.key, campaignId);
    expect(whilePaused.body.status).toBe('PAUSED');
    expect(whilePaused.body.progress.pending).toBeGreaterThan(0);
    expectError(await api.request('POST', `/v1/chat/call-campaigns/${campaignId}/pause`, { key: org.key }), 409, 'INVALID_CAMPAIGN_TRANSITION', 'status');

    const resumed = await api.request('POST', `/v1/chat/call-campaigns/${campaignId}/resume`, { key: org.key });
    expect(resumed.body.status).toBe('RUNNING');
    const done = await untilStatus(api, org.key, campaignId, 'COMPLETED', 150_000);
    expect(done.progress).toMatchObject({ total: 40, pending: 0, inProgress: 0 });
    const dials = dialsOf(simulator(), numbers);
    expect(dials.length).toBe(40);
    expect(dials.length).toBeGreaterThan(dialledBefore);
    expect(new Set(dials.map((dial) => dial.to)).size).toBe(40);
  }, 200_000);

  it('cancel ends the campaign: no more dials, pending contacts stay pending, and it cannot be resumed', async () => {
    const org = await voiceOrg(api, receiver, receiverUrl);
    const audience = Array.from({ length: 30 }, (_, n) => ({ phoneNumber: callee(718, n), tags: ['campaign'] }));
    await addContacts(org.orgId, audience);
    const numbers = new Set(audience.map((spec) => spec.phoneNumber));
    const campaignId = await startedCampaign(api, org.key, campaignBody(org, { maxConcurrentCalls: 2 }));
    await eventually(() => dialsOf(simulator(), numbers).length, (count) => count >= 3, 30_000);

    const canceled = await api.request('POST', `/v1/chat/call-campaigns/${campaignId}/cancel`, { key: org.key });
    const canceledAt = Date.now();
    expect(canceled.status, canceled.text).toBe(200);
    expect(canceled.body.status).toBe('CANCELED');
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const claimedAt = new Map((await allCalls(api, org.key, campaignId)).flatMap((row) => row.sessions.map((attempt: { sessionId: string; startedAt: string }) => [attempt.sessionId, Date.parse(attempt.startedAt)])));
    const afterCancel = dialsOf(simulator(), numbers).filter((dial) => dial.createdAt > canceledAt);
    expect(afterCancel.length).toBeLessThanOrEqual(2);
    for (const dial of afterCancel) expect(claimedAt.get(dial.sessionId)).toBeLessThanOrEqual(canceledAt);
    const after = await campaignStatus(api, org.key, campaignId);
    expect(after.body.status).toBe('CANCELED');
    expect(after.body.progress.pending).toBeGreaterThan(0);
    expectError(await api.request('POST', `/v1/chat/call-campaigns/${campaignId}/resume`, { key: org.key }), 409, 'INVALID_CAMPAIGN_TRANSITION', 'status');
  }, 90_000);
});
