/**
 * The built-in `transfer_call` tool on a call, through the Twilio simulator: the relay ends with a transfer's
 * `handoffData`, the `<Connect>` action answers a `<Dial>` to the destination (after a hold message and with a
 * whispered summary when warm), and the session ends TRANSFERRED with the transfer in its metadata and analysis.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { startOpenAIStub, type ChatRequestBody, type OpenAIStub } from '../support/openai-stub.ts';
import { sessionEvents, voiceOrg, type VoiceOrg } from '../support/voice.ts';
import { Receiver } from '../support/webhook-receiver.ts';

let api: TestApi;
let stub: OpenAIStub;
const receiver = new Receiver();
let receiverUrl: string;

const sales = '+15550101';
const support = '+15550102';

/** The stub's caller asks for sales, support, or a number the agent does not have; the model transfers. */
function transferAsked(body: ChatRequestBody) {
  if (!body.tools) return undefined;
  const said = JSON.stringify(body.messages.at(-1)?.content ?? '');
  if (said.includes('sales')) return { name: 'transfer_call', arguments: { destination: sales, reason: 'wants a quote', summary: 'The caller wants a quote for twenty seats.' } };
  const handTo = /hand me to ([0-9a-f-]{36})/.exec(said);
  if (handTo) return { name: 'handoff', arguments: { agentId: handTo[1] } };
  if (said.includes('helpdesk')) return { name: 'transfer_call', arguments: { destination: support, summary: 'Locked out after a password reset.' } };
  if (said.includes('support')) return { name: 'transfer_call', arguments: { destination: support, reason: 'broken login' } };
  if (said.includes('the boss')) return { name: 'transfer_call', arguments: { destination: '+15550109' } };
  // A key press on a call through the media worker (whose built-in recogniser would not make out "sales").
  if (said.includes('The caller pressed 0')) return { name: 'transfer_call', arguments: { destination: sales, reason: 'pressed 0' } };
  return undefined;
}

beforeAll(async () => {
  receiverUrl = await receiver.start();
  stub = await startOpenAIStub({
    tokens: 3,
    toolCall: transferAsked,
    // The analysis (a non-streamed request for JSON): a valid answer at once.
    answer: (body) => (body.stream ? undefined : { content: JSON.stringify({ summary: 'The caller asked for another team.' }) }),
  });
  api = await startApi({ OPENAI_COMPATIBLE_BASE_URL: stub.baseUrl, OPENAI_COMPATIBLE_MODELS: 'stub-model' }, { streamPoller: true, queues: true, voice: true });
});
afterAll(async () => {
  await api.close();
  await stub.close();
  await receiver.close();
});

const simulator = () => api.voice!.simulator;

/** The stub's model in the catalog. */
async function stubModelId(): Promise<string> {
  return (await api.request('GET', '/v1/chat/models?provider=openai-compatible', { key: (await api.newOrg()).key })).body.data[0].id;
}

async function transferringOrg(): Promise<VoiceOrg> {
  return voiceOrg(api, receiver, receiverUrl, {
    agent: {
      modelId: await stubModelId(),
      transferDestinations: [
        { number: sales, description: 'The sales team', mode: 'cold' },
        { number: support, description: 'The support desk', mode: 'warm' },
      ],
    },
  });
}

/** Calls `to`, whose callee says `line` after hello and then stays on the line; answers the ended session. */
async function callSaying(org: VoiceOrg, to: string, line: string) {
  simulator().setScript(to, { steps: [{ say: 'Hello?' }, { say: line }], then: 'stay' });
  const started = await api.request('POST', `/api/v1/phone-numbers/${org.phoneNumberId}/calls/start`, { key: org.key, body: { to_phone_number: to, agent_id: org.agentId } });
  expect(started.status, started.text).toBe(201);
  const events = await sessionEvents(receiver, org.webhookPath, started.body.sessionId);
  const session = (await api.request('GET', `/api/v1/chat/sessions/${started.body.sessionId}`, { key: org.key })).body;
  const messages = (await api.request('GET', `/api/v1/chat/sessions/${session.id}/messages?limit=50`, { key: org.key })).body.data;
  return { session, messages, ended: events.find((receipt) => receipt.body.eventType === 'session.ended')!.body, callSid: session.metadata.roomName as string };
}

/** The dials of a call once the carrier has played them (the session ends before the transfer's dial is over). */
const dialsOf = (callSid: string) => eventually(() => simulator().dials(callSid), (dials) => dials.length > 0);

describe('transfer_call on a call', { timeout: 90_000 }, () => {
  it('cold: dials the destination from the call\'s number, and the session records the transfer', async () => {
    // Prepare
    const org = await transferringOrg();

    // Act
    const { session, messages, ended, callSid } = await callSaying(org, '+15550121', 'Put me through to sales please');

    // Assess: the carrier dialled sales straight away, with no hold message and no whisper
    expect(await dialsOf(callSid)).toEqual([{ number: sales, callerId: org.phoneNumber, callerHeard: [], whisper: [], outcome: 'answered' }]);
    expect(session).toMatchObject({ state: 'CLOSED', endedReason: 'TRANSFERRED' });
    expect(session.metadata.transfer).toMatchObject({ number: sales, mode: 'cold', description: 'The sales team', reason: 'wants a quote' });
    expect(messages.find((message: { role: string }) => message.role === 'TOOL').toolCall).toMatchObject({ name: 'transfer_call', status: 'SUCCESS' });
    // The analysis saw the transfer in the transcript
    expect(ended.analysis).toMatchObject({ status: 'COMPLETED' });
    const analysed = stub.requests.find((request) => !request.body.stream && JSON.stringify(request.body.messages).includes('Transcript:') && JSON.stringify(request.body.messages).includes('Put me through to sales'));
    expect(JSON.stringify(analysed?.body.messages)).toContain(`transfer_call returned: The call is being transferred to ${sales} (The sales team).`);
    // The agent's last reply was spoken before the relay ended
    expect(simulator().heard(callSid)).toHaveLength(2);
  });

  it('warm: the caller hears a hold message and the destination a whispered summary before they are connected', async () => {
    // Prepare
    const org = await transferringOrg();

    // Act
    const { session, callSid } = await callSaying(org, '+15550122', 'My login is broken, get me support');

    // Assess: no summary was given, so the whisper says the caller's own words
    const [dialled] = await dialsOf(callSid);
    expect(dialled).toMatchObject({ number: support, callerHeard: ['Please hold while I transfer your call.'], outcome: 'answered' });
    expect(dialled!.whisper).toEqual([`Transferred call from +15550122. Reason: broken login. The caller said: My login is broken, get me support`]);
    expect(session).toMatchObject({ endedReason: 'TRANSFERRED', metadata: { transfer: { number: support, mode: 'warm' } } });
  });

  it('warm: the whisper is the summary the agent gave', async () => {
    const org = await transferringOrg();
    const { callSid } = await callSaying(org, '+15550124', 'Connect me to the helpdesk');
    expect((await dialsOf(callSid))[0]!.whisper).toEqual(['Transferred call from +15550124. Summary: Locked out after a password reset.']);
  });

  it('through the media worker: the stream closes once the reply is played, and the <Connect> action dials', async () => {
    // Prepare: an agent with a built-in voice, whose calls take the media worker; a Media Stream has no handoffData.
    const org = await transferringOrg();
    await api.request('PATCH', `/v2/chat/agents/${org.agentId}`, { key: org.key, body: { voice: { provider: 'builtin', voiceId: 'en-us' } } });
    simulator().setScript('+15550125', { steps: [{ dtmf: '0' }], then: 'stay' });

    // Act
    const started = await api.request('POST', `/api/v1/phone-numbers/${org.phoneNumberId}/calls/start`, { key: org.key, body: { to_phone_number: '+15550125', agent_id: org.agentId } });
    await sessionEvents(receiver, org.webhookPath, started.body.sessionId);
    const session = (await api.request('GET', `/api/v1/chat/sessions/${started.body.sessionId}`, { key: org.key })).body;

    // Assess
    expect(simulator().twimlOf(session.metadata.roomName)).toContain('<Stream url=');
    expect(session).toMatchObject({ endedReason: 'TRANSFERRED', metadata: { transfer: { number: sales, mode: 'cold', reason: 'pressed 0' } } });
    expect(await dialsOf(session.metadata.roomName)).toEqual([{ number: sales, callerId: org.phoneNumber, callerHeard: [], whisper: [], outcome: 'answered' }]);
  });

  it('refuses a destination the agent was not given as a tool error, and the call goes on', async () => {
    // Prepare
    const org = await transferringOrg();
    simulator().setScript('+15550123', { steps: [{ say: 'Hello?' }, { say: 'Get me the boss' }, { say: 'Fine, goodbye.' }], then: 'hangup' });

    // Act
    const started = await api.request('POST', `/api/v1/phone-numbers/${org.phoneNumberId}/calls/start`, { key: org.key, body: { to_phone_number: '+15550123', agent_id: org.agentId } });
    await sessionEvents(receiver, org.webhookPath, started.body.sessionId);
    const session = (await api.request('GET', `/api/v1/chat/sessions/${started.body.sessionId}`, { key: org.key })).body;
    const messages = (await api.request('GET', `/api/v1/chat/sessions/${session.id}/messages?limit=50`, { key: org.key })).body.data;

    // Assess
    expect(messages.find((message: { role: string }) => message.role === 'TOOL').toolCall).toMatchObject({
      name: 'transfer_call',
      status: 'ERROR',
      result: expect.stringContaining('No transfer destination +15550109 is configured'),
    });
    expect(session.endedReason).toBe('HANGUP_CALLEE');
    expect(session.metadata.transfer).toBeUndefined();
    expect(simulator().dials(session.metadata.roomName)).toEqual([]);
    expect(simulator().heard(session.metadata.roomName)).toHaveLength(3);
  });
});

describe('handoff on a call', { timeout: 90_000 }, () => {
  it('the next thing the caller says is answered by the other agent, on the same call', async () => {
    // Prepare: a billing agent the phone agent may hand over to
    const org = await transferringOrg();
    const billing = await api.request('POST', '/v2/chat/agents', {
      key: org.key,
      body: { fullName: 'Billing', description: 'Billing', role: 'You are the billing agent.', modelId: await stubModelId(), voiceEnabled: true, voicePipelineMode: 'pipeline' },
    });
    const patched = await api.request('PATCH', `/v2/chat/agents/${org.agentId}`, { key: org.key, body: { handoffAgents: [{ agentId: billing.body.id, description: 'Invoices' }] } });
    expect(patched.status, patched.text).toBe(200);
    simulator().setScript('+15550125', { steps: [{ say: 'Hello?' }, { say: `hand me to ${billing.body.id}` }, { say: 'Why was I charged twice?' }], then: 'hangup' });

    // Act
    const started = await api.request('POST', `/api/v1/phone-numbers/${org.phoneNumberId}/calls/start`, { key: org.key, body: { to_phone_number: '+15550125', agent_id: org.agentId } });
    await sessionEvents(receiver, org.webhookPath, started.body.sessionId);
    const session = (await api.request('GET', `/api/v1/chat/sessions/${started.body.sessionId}`, { key: org.key })).body;

    // Assess: the last question went to the billing agent's prompt, and the call itself went on to its end
    const asked = stub.requests.findLast((request) => request.body.tools !== undefined && JSON.stringify(request.body.messages.at(-1)).includes('charged twice'));
    expect(asked?.body.messages[0]).toMatchObject({ role: 'system', content: expect.stringContaining('You are the billing agent.') });
    expect(session).toMatchObject({ endedReason: 'HANGUP_CALLEE', agentId: org.agentId, metadata: { activeAgentId: billing.body.id } });
    expect(simulator().heard(session.metadata.roomName)).toHaveLength(3);
  });
});
