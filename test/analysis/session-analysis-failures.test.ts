import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modelId } from '../../shared/models/model-catalog.ts';
import type { AnalysisQueueMessage } from '../../shared/analysis/ports.ts';
import type { AnalysisJob } from '../../shared/conversations/ports.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { startOpenAIStub, type ChatRequestBody, type OpenAIStub, type StubAnswer } from '../support/openai-stub.ts';
import { Receiver, type Receipt } from '../support/webhook-receiver.ts';
import { eventually } from '../support/eventually.ts';

/**
 * The analysis by a provider model (a stub OpenAI-compatible server) when things go wrong: invalid output, a
 * failing model, the analysis function killed mid-batch. A 40 s deadline leaves a retried run (back after the 4 s visibility
 * timeout) time to finish first on a busy machine.
 */
// Long enough for a crashed run's retry (after the 4 s visibility timeout) to finish on a busy machine.
const deadlineSeconds = 40;
let api: TestApi;
let stub: OpenAIStub;
const receiver = new Receiver();
let receiverUrl: string;
/** Scripted answers by session marker (a word only that session's transcript contains), consumed in order. */
const scripts = new Map<string, StubAnswer[]>();

const markerOf = (body: ChatRequestBody) => [...scripts.keys()].find((marker) => JSON.stringify(body.messages).includes(marker));

beforeAll(async () => {
  stub = await startOpenAIStub({
    answer: (body) => {
      const marker = markerOf(body);
      return marker ? scripts.get(marker)?.shift() : undefined;
    },
  });
  receiverUrl = await receiver.start();
  api = await startApi(
    {
      OPENAI_COMPATIBLE_BASE_URL: stub.baseUrl,
      OPENAI_COMPATIBLE_MODELS: 'analyst',
      ANALYSIS_MODEL_ID: modelId('openai-compatible', 'LLM', 'analyst'),
      ANALYSIS_DEADLINE_SECONDS: String(deadlineSeconds),
    },
    // A message whose invocation died comes back after 4 s, well within the run's time (80% of the deadline).
    { streamPoller: true, queues: { visibilityTimeoutSeconds: 4 } },
  );
});
afterAll(async () => {
  await api.close();
  await receiver.close();
  await stub.close();
});

const analysis = { sentiment: { enabled: true }, dataExtraction: { fields: [{ name: 'order_id', type: 'string' }] } };
const validAnswer = (orderId: string) =>
  JSON.stringify({
    summary: 'The user asked about an order.',
    sentiment: { conversation: { sentiment: 'NEUTRAL', score: 0, detectedLanguage: 'en', explanation: 'Plain questions.' }, message: { sentiment: 'NEUTRAL', score: 0 } },
    extractedData: { order_id: orderId },
  });

/** Opens a session whose transcript carries `marker`, with a webhook endpoint of its own, and closes it. */
async function closedSession(marker: string, answers: StubAnswer[]) {
  scripts.set(marker, answers);
  const { orgId, key } = await api.newOrg();
  const path = `/ok/${marker}`;
  const endpoint = await api.request('POST', '/v1/chat/webhooks', { key, body: { url: receiverUrl + path, events: ['session.closed', 'session.ended'] } });
  receiver.secrets.set(path, [endpoint.body.secret]);
  const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Ada', description: 'Support', role: 'Support', analysis } });
  const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
  const sessionId = session.body.id as string;
  await api.request('POST', `/v1/chat/chat/sessions/${sessionId}/messages`, { key, body: { content: `Where is order ${marker}?`, stream: false } });
  await api.request('PATCH', `/v1/chat/chat/sessions/${sessionId}/close`, { key });
  return { orgId, key, path, sessionId };
}

/** Exactly one `session.ended` (by webhook-id) at the endpoint, waited for, then a moment more for any duplicate. */
async function theOneEnded(path: string): Promise<{ ended: Receipt; closed: Receipt }> {
  await eventually(() => receiver.for(path), (found) => found.some((receipt) => receipt.body.eventType === 'session.ended'));
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const unique = receiver.eventsFor(path);
  const ended = unique.filter((receipt) => receipt.body.eventType === 'session.ended');
  expect(ended).toHaveLength(1);
  return { ended: ended[0]!, closed: unique.find((receipt) => receipt.body.eventType === 'session.closed')! };
}

const requestsFor = (marker: string) => stub.requests.filter((request) => JSON.stringify(request.body.messages).includes(marker));

describe('analysis by a provider model', () => {
  it('repairs an invalid answer once, then completes', async () => {
    const marker = `repair${Date.now()}`;
    const { key, path, sessionId } = await closedSession(marker, [{ content: '{"summary": "cut off' }, { content: validAnswer('A-1') }]);
    const { ended } = await theOneEnded(path);
    expect(ended.body.analysis).toMatchObject({
      status: 'COMPLETED',
      model: { provider: 'openai-compatible', name: 'analyst' },
      summary: 'The user asked about an order.',
      extractedData: { order_id: 'A-1' },
      sentiment: { message: { sentiment: 'NEUTRAL', messageId: expect.stringMatching(/^msg_/) } },
    });
    const requests = requestsFor(marker);
    expect(requests).toHaveLength(2);
    // The repair shows the model its answer and what was wrong with it.
    const repair = requests[1]!.body.messages;
    expect(repair.at(-2)).toMatchObject({ role: 'assistant', content: '{"summary": "cut off' });
    expect(String(repair.at(-1)?.content)).toContain('not valid');
    expect((await api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key })).body.analysis).toEqual(ended.body.analysis);
  });

  it('gives up after a second invalid answer: FAILED with INVALID_OUTPUT, every field null', async () => {
    const marker = `invalid${Date.now()}`;
    const { path } = await closedSession(marker, [{ content: 'no JSON here' }, { content: '{"summary": 42}' }]);
    const { ended } = await theOneEnded(path);
    expect(ended.body.analysis).toMatchObject({ status: 'FAILED', error: { code: 'INVALID_OUTPUT' }, extractedData: { order_id: null } });
    expect(requestsFor(marker)).toHaveLength(2);
  });

  it('sends exactly one session.ended per session when the model fails and the analysis function is killed mid-batch', async () => {
    const markers = [1, 2, 3].map((index) => `crash${index}x${Date.now()}`);
    // Each model call fails once (the AI SDK retries it), then answers slowly, and the function dies meanwhile.
    const sessions = await Promise.all(
      markers.map((marker) =>
        closedSession(marker, [{ status: 503 }, { delayMs: 10_000, content: validAnswer('lost') }, ...Array.from({ length: 3 }, () => ({ content: validAnswer(marker) }))]),
      ),
    );
    await eventually(() => markers.every((marker) => requestsFor(marker).length >= 2), (done) => done);
    await api.queues!.crash('analysis');

    for (const [index, { path }] of sessions.entries()) {
      const { ended } = await theOneEnded(path);
      expect(ended.body.analysis).toMatchObject({ status: 'COMPLETED', extractedData: { order_id: markers[index] } });
    }
  }, 120_000);

  it('the deadline message sends FAILED when nothing has gone out, and the overtaken run sends nothing more', async () => {
    const marker = `slow${Date.now()}`;
    const { orgId, key, path, sessionId } = await closedSession(marker, [{ delayMs: deadlineSeconds * 1000 + 10_000, content: validAnswer('too late') }]);
    await eventually(() => requestsFor(marker).length, (count) => count > 0);
    // What the queue hands over at 90% of the deadline, handed over now: the run is still waiting for the model.
    const [{ analysisRuntime }, { handleAnalysisMessage }, { QueryCommand }] = await Promise.all([
      import('../../shared/analysis/analysis-runtime.ts'),
      import('../../shared/analysis/analysis.ts'),
      import('@aws-sdk/lib-dynamodb'),
    ]);
    const deps = analysisRuntime();
    const jobs = await deps.documentClient.send(
      new QueryCommand({
        TableName: deps.config.TABLE_NAME,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :job)',
        ExpressionAttributeValues: { ':pk': `ORG#${orgId}#SES#${sessionId}`, ':job': 'ANALYSIS#' },
      }),
    );
    const job = jobs.Items![0]! as AnalysisJob;
    const message: AnalysisQueueMessage = { kind: 'analysis.deadline', job: { jobId: job.jobId, orgId, sessionId, purpose: job.purpose, deadlineFrom: job.deadlineFrom }, notBefore: 0 };
    expect(await handleAnalysisMessage(deps, message, { lastAttempt: false, mustFinishBy: Date.now() + 5_000 })).toBe('sent-ended');
    expect(await handleAnalysisMessage(deps, message, { lastAttempt: false, mustFinishBy: Date.now() + 5_000 })).toBe('already-done');

    const { ended } = await theOneEnded(path);
    expect(ended.body.analysis).toMatchObject({ status: 'FAILED', error: { code: 'ANALYSIS_DEADLINE_EXCEEDED' }, extractedData: { order_id: null } });
    // The run gives up at 80% of the deadline; by then, and after, still only that one session.ended.
    await new Promise((resolve) => setTimeout(resolve, deadlineSeconds * 1000));
    expect(new Set(receiver.for(path).filter((receipt) => receipt.body.eventType === 'session.ended').map((receipt) => receipt.webhookId)).size).toBe(1);
    expect((await api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key })).body.analysis).toEqual(ended.body.analysis);
  }, 120_000);

  it('a model that never answers well still yields one session.ended, FAILED, within the deadline', async () => {
    const marker = `down${Date.now()}`;
    const { path } = await closedSession(marker, Array.from({ length: 20 }, () => ({ status: 503 })));
    const { ended, closed } = await theOneEnded(path);
    expect(ended.body.analysis).toMatchObject({ status: 'FAILED', error: { code: expect.stringMatching(/^(MODEL_ERROR|ANALYSIS_DEADLINE_EXCEEDED)$/) } });
    // Measured on the records' own times: the analysis left within ANALYSIS_DEADLINE_SECONDS of the close.
    expect(Date.parse(ended.body.updatedAt) - Date.parse(closed.body.updatedAt)).toBeLessThanOrEqual(deadlineSeconds * 1000);
  }, 120_000);
});
