import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventSchemas } from '../../shared/webhooks/event-catalog.ts';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { Receiver, type Receipt } from '../support/webhook-receiver.ts';
import { eventually } from '../support/eventually.ts';

const idleSeconds = 5;
let api: TestApi;
const receiver = new Receiver();
let receiverUrl: string;

beforeAll(async () => {
  receiverUrl = await receiver.start();
  api = await startApi({ SESSION_IDLE_TIMEOUT_SECONDS: String(idleSeconds) }, { streamPoller: true, queues: true, ttlSweepIntervalMs: 200 });
});
afterAll(async () => {
  await api.close();
  await receiver.close();
});

const analysisConfig = {
  intentRecognition: {
    enabled: true,
    intents: [
      { name: 'billing', description: 'Questions about invoices and payments' },
      { name: 'shipping', description: 'Where is my parcel, delivery dates' },
    ],
  },
  resolution: { enabled: true, checklist: ['Order number', 'Refund policy'] },
  sentiment: { enabled: true },
  dataExtraction: {
    fields: [
      { name: 'order_id', type: 'string', description: 'The order number', required: false },
      { name: 'quantity', type: 'number' },
      { name: 'delivery_date', type: 'date' },
      { name: 'gift', type: 'boolean' },
      { name: 'plan', type: 'enum', values: ['basic', 'premium'] },
    ],
  },
};

/** A fresh organization whose webhook endpoint gets every session event, and an agent with `analysis`. */
async function setUp(analysis: object | null = analysisConfig) {
  const { key } = await api.newOrg();
  const path = `/ok/${crypto.randomUUID()}`;
  const endpoint = await api.request('POST', '/v1/chat/webhooks', { key, body: { url: receiverUrl + path, events: ['session.closed', 'session.ended', 'session.updated'] } });
  expect(endpoint.status, endpoint.text).toBe(201);
  receiver.secrets.set(path, [endpoint.body.secret]);
  const agent = await api.request('POST', '/v2/chat/agents', {
    key,
    body: { fullName: 'Ada', description: 'Support', role: 'Support', language: 'en-GB', ...(analysis ? { analysis } : {}) },
  });
  expect(agent.status, agent.text).toBe(201);
  const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
  return { key, path, agentId: agent.body.id as string, sessionId: session.body.id as string };
}

async function send(key: string, sessionId: string, content: string) {
  const reply = await api.request('POST', `/v1/chat/chat/sessions/${sessionId}/messages`, { key, body: { content, stream: false } });
  expect(reply.status, reply.text).toBe(200);
  return reply.body as { userMessage: { id: string }; assistantMessage: { id: string; content: string } };
}

/**
 * The deliveries of one endpoint, one per event (by webhook-id), once every type of `awaited` has come (deliveries
 * need not arrive in order) and a moment more, for a repeat to show.
 */
async function eventsAt(path: string, awaited: readonly string[], settleMs = 300): Promise<Receipt[]> {
  await eventually(() => receiver.for(path), (found) => awaited.every((type) => found.some((receipt) => receipt.body.eventType === type)));
  await new Promise((resolve) => setTimeout(resolve, settleMs));
  const receipts = receiver.for(path);
  for (const receipt of receipts) expect(receipt.verified).toBe(true);
  return [...new Map(receipts.map((receipt) => [receipt.webhookId, receipt])).values()];
}

const ofType = (receipts: Receipt[], type: string) => receipts.filter((receipt) => receipt.body.eventType === type);

const builtinModel = { id: '0c9e7eef-ed77-56f4-a9bb-186a9da1a5dc', provider: 'builtin', name: 'builtin-assistant' };
const echo = (text: string) => `You said: "${text}". I am the built-in offline model; connect a provider model for real answers.`;
const opening = 'Hi! My order id is A-123 and I want a refund on my invoice, the delivery date was 2026-12-01.';
const closing = 'Quantity: 2, gift yes, plan premium. The parcel came broken, terrible. What is your refund policy?';

/** The analysis the built-in model gives the two-message conversation above, ended as `ending` says. */
function expectedAnalysis(lastUserMessageId: string, ending: string, lastReply = echo(closing)) {
  const quote = (text: string) => (text.length > 120 ? `${text.slice(0, 119)}…` : text);
  return {
    status: 'COMPLETED',
    model: builtinModel,
    completedAt: expect.any(String),
    summary:
      `The user sent 2 messages and the agent sent 2 replies. The user opened with "${opening}". ` +
      `The user's last message was "${closing}". The agent's last reply was "${quote(lastReply)}". ${ending}`,
    intent: {
      conversation: { intent: 'shipping', confidence: 0.75, explanation: 'Words of "shipping" that appear: parcel, delivery, date.' },
      message: { messageId: lastUserMessageId, intent: 'shipping', confidence: 0.25, explanation: 'Words of "shipping" that appear: parcel.' },
    },
    resolution: {
      classification: 'PARTIALLY_RESOLVED',
      confidenceScore: 1,
      status: 'CHECKLIST_INCOMPLETE',
      satisfiedChecklistItems: ['Refund policy'],
      evidence: [`Refund policy: "${quote(echo(closing))}"`],
      explanation: "1 of 2 checklist items have all their words in the agent's replies.",
    },
    sentiment: {
      conversation: { sentiment: 'NEGATIVE', score: -1, detectedLanguage: 'en-GB', explanation: "0 positive and 2 negative words in the user's messages." },
      message: { messageId: lastUserMessageId, sentiment: 'NEGATIVE', score: -1 },
    },
    extractedData: { order_id: 'A-123', quantity: 2, delivery_date: '2026-12-01', gift: true, plan: 'premium' },
  };
}

/** The session's events at the endpoint: exactly one `session.ended`, valid, after everything else about the end. */
async function expectOneEnded(path: string, sessionId: string, closed: boolean) {
  const events = await eventsAt(path, closed ? ['session.ended', 'session.closed'] : ['session.ended']);
  const ended = ofType(events, 'session.ended');
  expect(ended).toHaveLength(1);
  expect(ofType(events, 'session.closed')).toHaveLength(closed ? 1 : 0);
  const payload = ended[0]!.body;
  expect(eventSchemas['session.ended'].safeParse(payload).success).toBe(true);
  expect(payload.id).toBe(sessionId);
  // Ordered by their times (docs/events.md), the end's other events come first.
  for (const other of events.filter((receipt) => receipt !== ended[0])) expect((other.body.updatedAt ?? other.body.createdAt) < payload.updatedAt).toBe(true);
  return payload;
}

describe('session analysis', () => {
  it('closed by the API: session.closed, then exactly one session.ended with the exact analysis, which GET shows', async () => {
    const { key, path, sessionId } = await setUp();
    await send(key, sessionId, opening);
    const last = await send(key, sessionId, closing);
    expect((await api.request('PATCH', `/v1/chat/chat/sessions/${sessionId}/close`, { key })).status).toBe(200);

    const ended = await expectOneEnded(path, sessionId, true);
    expect(ended).toMatchObject({ state: 'CLOSED', analysis: expectedAnalysis(last.userMessage.id, 'The user closed the session.') });
    expect(Object.keys(ended.analysis).sort()).toEqual(['completedAt', 'extractedData', 'intent', 'model', 'resolution', 'sentiment', 'status', 'summary']);
    const read = await api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key });
    expect(read.body.analysis).toEqual(ended.analysis);
    expect(read.body).not.toHaveProperty('endedEventId');
    expect(read.body).not.toHaveProperty('analysisJobId');
  });

  it('ended by the agent (end tool): session.closed, then one session.ended with the analysis', async () => {
    const { key, path, sessionId } = await setUp();
    await send(key, sessionId, opening);
    const last = await send(key, sessionId, `${closing} Goodbye.`);
    expect(last.assistantMessage.content).toBe('Goodbye! Thanks for chatting.');

    const ended = await expectOneEnded(path, sessionId, true);
    expect(ended.analysis).toMatchObject({
      status: 'COMPLETED',
      summary: `The user sent 2 messages and the agent sent 2 replies. The user opened with "${opening}". The user's last message was "${closing} Goodbye.". The agent's last reply was "Goodbye! Thanks for chatting.". The agent ended the session.`,
      // The goodbye reply does not echo, so only the first reply counts for the checklist.
      resolution: { classification: 'UNRESOLVED', satisfiedChecklistItems: [], evidence: [] },
      extractedData: { order_id: 'A-123', quantity: 2, delivery_date: '2026-12-01', gift: true, plan: 'premium' },
      intent: { conversation: { intent: 'shipping', confidence: 0.75 } },
    });
    expect((await api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key })).body).toMatchObject({ endedReason: 'AGENT_ENDED', analysis: ended.analysis });
  });

  it('expired: no session.closed, one session.ended with the analysis', async () => {
    const { key, path, sessionId } = await setUp();
    await send(key, sessionId, opening);
    const last = await send(key, sessionId, closing);

    // Nobody reads the session: the TTL sweeper's deletion expires it.
    const ended = await expectOneEnded(path, sessionId, false);
    expect(ended).toMatchObject({ state: 'EXPIRED', analysis: expectedAnalysis(last.userMessage.id, 'The session expired after inactivity.') });
  }, 30_000);

  it('a session without a user message is SKIPPED, with every configured field null', async () => {
    const { key, path, sessionId } = await setUp();
    await api.request('PATCH', `/v1/chat/chat/sessions/${sessionId}/close`, { key });
    const ended = await expectOneEnded(path, sessionId, true);
    expect(ended.analysis).toEqual({
      status: 'SKIPPED',
      model: builtinModel,
      completedAt: expect.any(String),
      summary: 'The session has no user message: there is nothing to analyse.',
      extractedData: { order_id: null, quantity: null, delivery_date: null, gift: null, plan: null },
    });
  });

  it('an agent without analysis configuration gets the summary only', async () => {
    const { key, path, sessionId } = await setUp(null);
    await send(key, sessionId, 'Hello');
    await api.request('PATCH', `/v1/chat/chat/sessions/${sessionId}/close`, { key });
    const ended = await expectOneEnded(path, sessionId, true);
    expect(Object.keys(ended.analysis).sort()).toEqual(['completedAt', 'model', 'status', 'summary']);
  });

  it('re-runs with the current configuration: session.updated ["analysis"], never a second session.ended', async () => {
    const { key, path, agentId, sessionId } = await setUp();
    await send(key, sessionId, opening);
    const last = await send(key, sessionId, closing);
    expectError(await api.request('POST', `/v1/chat/chat/sessions/${sessionId}/analysis`, { key }), 409, 'INVALID_SESSION');
    await api.request('PATCH', `/v1/chat/chat/sessions/${sessionId}/close`, { key });
    await expectOneEnded(path, sessionId, true);

    const patched = await api.request('PATCH', `/v2/chat/agents/${agentId}`, {
      key,
      body: { analysis: { ...analysisConfig, resolution: { enabled: true, checklist: ['Refund policy', 'Premium plan'] }, sentiment: { enabled: false } } },
    });
    expect(patched.status, patched.text).toBe(200);
    const headers = { 'idempotency-key': crypto.randomUUID() };
    const rerun = await api.request('POST', `/v1/chat/chat/sessions/${sessionId}/analysis`, { key, headers });
    expect(rerun.status, rerun.text).toBe(202);
    expect(rerun.body).toEqual({ sessionId, jobId: expect.any(String), requestedAt: expect.any(String) });
    const replay = await api.request('POST', `/v1/chat/chat/sessions/${sessionId}/analysis`, { key, headers });
    expect(replay.body).toEqual(rerun.body);

    const updates = await eventually(
      () => ofType(receiver.for(path), 'session.updated').filter((receipt) => receipt.body.changedFields.includes('analysis')),
      (found) => found.length > 0,
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(updates[0]!.body).toMatchObject({ id: sessionId, changedFields: ['analysis'], state: 'CLOSED' });
    const events = receiver.eventsFor(path);
    expect(ofType(events, 'session.ended')).toHaveLength(1);
    // The Idempotency-Key replay queued nothing: one re-run, one update.
    expect(ofType(events, 'session.updated').filter((receipt) => receipt.body.changedFields.includes('analysis'))).toHaveLength(1);
    const read = await api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key });
    expect(read.body.analysis).toMatchObject({
      status: 'COMPLETED',
      resolution: { classification: 'RESOLVED', satisfiedChecklistItems: ['Refund policy', 'Premium plan'] },
      intent: { message: { messageId: last.userMessage.id } },
    });
    expect(read.body.analysis).not.toHaveProperty('sentiment');
  });

  it('refuses a re-run of an unknown session (404) and without chat:write (403)', async () => {
    const { orgId, key } = await api.newOrg();
    expectError(await api.request('POST', `/v1/chat/chat/sessions/${crypto.randomUUID()}/analysis`, { key }), 404, 'SESSION_NOT_FOUND');
    const reader = await api.newKey(orgId, ['chat:read']);
    expectError(await api.request('POST', `/v1/chat/chat/sessions/${crypto.randomUUID()}/analysis`, { key: reader }), 403, 'FORBIDDEN');
  });
});

describe('analysis configuration on agents', () => {
  it.each([
    ['duplicate field names', { dataExtraction: { fields: [{ name: 'a', type: 'string' }, { name: 'a', type: 'number' }] } }, 'analysis.dataExtraction.fields.1.name'],
    ['an enum without values', { dataExtraction: { fields: [{ name: 'tier', type: 'enum' }] } }, 'analysis.dataExtraction.fields.0.values'],
    ['values on a string field', { dataExtraction: { fields: [{ name: 'tier', type: 'string', values: ['a'] }] } }, 'analysis.dataExtraction.fields.0.values'],
    ['duplicate intents', { intentRecognition: { enabled: true, intents: [{ name: 'Billing' }, { name: 'billing' }] } }, 'analysis.intentRecognition.intents.1.name'],
    ['an intent named other', { intentRecognition: { enabled: true, intents: [{ name: 'Other' }] } }, 'analysis.intentRecognition.intents.0.name'],
    ['intent recognition without intents', { intentRecognition: { enabled: true, intents: [] } }, 'analysis.intentRecognition.intents'],
  ])('answers 422 INVALID_ANALYSIS_CONFIG for %s, on create and on PATCH', async (_name, analysis, field) => {
    const { key } = await api.newOrg();
    const body = { fullName: 'Ada', description: 'Support', role: 'Support' };
    expectError(await api.request('POST', '/v2/chat/agents', { key, body: { ...body, analysis } }), 422, 'INVALID_ANALYSIS_CONFIG', field);
    const agent = await api.request('POST', '/v2/chat/agents', { key, body });
    expectError(await api.request('PATCH', `/v2/chat/agents/${agent.body.id}`, { key, body: { analysis } }), 422, 'INVALID_ANALYSIS_CONFIG', field);
  });

  it('answers 400 for a malformed configuration (unknown type, bad field name, unknown key)', async () => {
    const { key } = await api.newOrg();
    const body = { fullName: 'Ada', description: 'Support', role: 'Support' };
    for (const analysis of [
      { dataExtraction: { fields: [{ name: 'a', type: 'money' }] } },
      { dataExtraction: { fields: [{ name: 'order id', type: 'string' }] } },
      { sentiment: { enabled: true, lexicon: 'mine' } },
    ]) {
      expectError(await api.request('POST', '/v2/chat/agents', { key, body: { ...body, analysis } }), 400, 'VALIDATION_ERROR');
    }
  });

  it('stores the configuration with defaults, shows it on the agent, and clears it with null', async () => {
    const { key } = await api.newOrg();
    const created = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Ada', description: 'Support', role: 'Support', analysis: analysisConfig } });
    expect(created.body.analysis.dataExtraction.fields[1]).toEqual({ name: 'quantity', type: 'number', required: false });
    expect((await api.request('GET', `/v1/chat/agents/${created.body.id}`, { key })).body.analysis).toEqual(created.body.analysis);
    const cleared = await api.request('PATCH', `/v2/chat/agents/${created.body.id}`, { key, body: { analysis: null } });
    expect(cleared.body).not.toHaveProperty('analysis');
  });
});
