/**
 * A campaign of a MANUAL agent (issue 29): each dial is a session bound to the version published when it is placed,
 * never the draft. The built-in model calls a tool when asked for it by name: whether the tool was offered tells
 * which version answered.
 */
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { addContacts, allCalls, callee, campaignBody, startedCampaign, unlimitedPlans, untilStatus } from '../support/campaigns.ts';
import { closeServer } from '../support/loopback-server.ts';
import { startWeatherApi, voiceOrg } from '../support/voice.ts';
import { Receiver } from '../support/webhook-receiver.ts';

let api: TestApi;
const receiver = new Receiver();
let receiverUrl: string;
let weather: { url: string; server: Server };

beforeAll(async () => {
  receiverUrl = await receiver.start();
  weather = await startWeatherApi();
  api = await startApi({ PLANS: unlimitedPlans, CAMPAIGN_TICK_SECONDS: '0.5' }, { streamPoller: true, queues: true, voice: true, campaignTicker: true });
});
afterAll(async () => {
  await api.close();
  await receiver.close();
  await closeServer(weather.server);
});

describe("a MANUAL agent's campaign", () => {
  it('dials with the published version, not the draft, and records it on the session', async () => {
    // Prepare: version 1 (published) has the weather tool; version 2, a draft, has none.
    const org = await voiceOrg(api, receiver, receiverUrl, { toolUrl: weather.url, agent: { publishMode: 'MANUAL' } });
    const draft = await api.request('PATCH', `/v2/chat/agents/${org.agentId}`, { key: org.key, body: { tools: [] } });
    expect(draft.body).toMatchObject({ draftVersion: 2, publishedVersion: 1 });
    const phoneNumber = callee(505, 1);
    api.voice!.simulator.setScript(phoneNumber, { steps: [{ say: 'Please run get_weather with {"city":"Lima"}' }], then: 'hangup' });
    await addContacts(org.orgId, [{ phoneNumber, tags: ['campaign'] }]);

    // Act
    const campaignId = await startedCampaign(api, org.key, campaignBody(org, { retry: { maxAttempts: 1, delaySeconds: 0, on: [] } }));
    await untilStatus(api, org.key, campaignId, 'COMPLETED', 90_000);

    // Assess
    const [row] = await allCalls(api, org.key, campaignId);
    expect(row).toMatchObject({ phoneNumber, state: 'COMPLETED', lastOutcome: 'ANSWERED' });
    const sessionId = row.sessions[0].sessionId;
    const session = await api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key: org.key });
    expect(session.body).toMatchObject({ type: 'VOICE', direction: 'OUTBOUND', agentId: org.agentId, agentVersion: 1, metadata: { campaign: { campaignId } } });
    const messages = await api.request('GET', `/api/v1/chat/sessions/${sessionId}/messages?limit=50`, { key: org.key });
    const toolCalls = messages.body.data.filter((message: { role: string }) => message.role === 'TOOL').map((message: { toolCall: unknown }) => message.toolCall);
    expect(toolCalls).toEqual([expect.objectContaining({ name: 'get_weather', arguments: { city: 'Lima' }, status: 'SUCCESS' })]);
  });
});
