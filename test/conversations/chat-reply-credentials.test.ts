/**
 * A reply holds its credential to the same rule as the event stream (test/webhooks/event-stream-credentials.test.ts): its
 * key is checked again every EVENT_STREAM_REAUTHORIZE_MS, and once it is deleted the reply ends with an
 * UNAUTHORIZED error event, the model call is aborted, and the partial turn is persisted as FAILED, instead of
 * running on for up to the 120 s turn timeout.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { startOpenAIStub, stubText, type OpenAIStub } from '../support/openai-stub.ts';
import { sseData } from '../support/sse.ts';

const reauthorizeMs = 250;
/** 400 tokens 25 ms apart: a reply of 10 s, far longer than a re-check. */
const replyTokens = 400;
/** The whole reply's time: a stream cut by the re-check ends well before it, however busy the machine. */
const replyMs = replyTokens * 25;
let api: TestApi;
let stub: OpenAIStub;

beforeAll(async () => {
  stub = await startOpenAIStub({ tokens: replyTokens, delayMs: replyMs / replyTokens });
  api = await startApi({ OPENAI_COMPATIBLE_BASE_URL: stub.baseUrl, OPENAI_COMPATIBLE_MODELS: 'slow-model', EVENT_STREAM_REAUTHORIZE_MS: String(reauthorizeMs) });
});
afterAll(async () => {
  await api.close();
  await stub.close();
});

/** An organization with a session on the slow model, and a second key (`chat:write` only) to send with. */
async function sessionWithSenderKey(): Promise<{ adminKey: string; senderKey: string; senderKeyId: string; sessionId: string }> {
  const { orgId, key: adminKey } = await api.newOrg();
  const senderKey = await api.newKey(orgId, ['chat:write']);
  const keys = await api.request('GET', '/v1/chat/api-keys', { key: adminKey });
  const senderKeyId = keys.body.data.find((item: { scopes: string[] }) => item.scopes.join() === 'chat:write').id;
  const modelId = (await api.request('GET', '/v1/chat/models?provider=openai-compatible', { key: adminKey })).body.data[0].id;
  const agent = await api.request('POST', '/v2/chat/agents', { key: adminKey, body: { fullName: 'A', description: 'A', role: 'A', modelId } });
  const session = await api.request('POST', '/v1/chat/chat/sessions', { key: adminKey, body: { agentId: agent.body.id } });
  return { adminKey, senderKey, senderKeyId, sessionId: session.body.id };
}

const messagesOf = async (key: string, sessionId: string) => (await api.request('GET', `/api/v1/chat/sessions/${sessionId}/messages`, { key })).body.data;

describe('a streamed reply', () => {
  it('ends with an UNAUTHORIZED error event soon after its key is deleted, aborts the model call, and stores the partial turn as FAILED', async () => {
    // Prepare
    const { adminKey, senderKey, senderKeyId, sessionId } = await sessionWithSenderKey();
    const reply = await fetch(`${api.baseUrl}/v1/chat/chat/sessions/${sessionId}/messages`, {
      method: 'POST',
      headers: { 'x-api-key': senderKey, 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'tell me a long story' }),
    });
    const reader = reply.body!.getReader();
    const decoder = new TextDecoder();
    let text = decoder.decode((await reader.read()).value, { stream: true });
    expect(text).toMatch(/^data: \{"id":"msg_/);

    // Act
    const deletedAt = Date.now();
    expect((await api.request('DELETE', `/v1/chat/api-keys/${senderKeyId}`, { key: adminKey })).status).toBe(204);
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += decoder.decode(chunk.value, { stream: true });
    const endedAt = Date.now();

    // Assess: the stream
    expect(endedAt - deletedAt).toBeLessThan(replyMs / 2);
    const data = sseData(text);
    expect(data.at(-1)).toBe('[DONE]');
    expect(JSON.parse(data.at(-2) as string)).toMatchObject({ error: { code: 'UNAUTHORIZED', status: 401 }, meta: { requestId: expect.any(String) } });
    const said = data.slice(0, -2).map((item) => (JSON.parse(item) as { delta: string }).delta).join('');
    expect(said.length).toBeLessThan(stubText(replyTokens).length);

    // Assess: the model call was aborted
    const modelCall = await eventually(() => stub.requests.at(-1), (request) => request?.timings.clientGone !== undefined);
    expect(modelCall?.timings.clientGone).toBeDefined();

    // Assess: what was said is stored, as a failed turn
    const messages = await eventually(() => messagesOf(adminKey, sessionId), (stored) => stored.length === 2);
    expect(messages.map((message: { role: string }) => message.role)).toEqual(['USER', 'ASSISTANT']);
    expect(messages[1]).toMatchObject({ content: said, metadata: { status: 'FAILED', error: { code: 'UNAUTHORIZED' } } });
  });

  it('runs to its end while its key stays valid through several re-checks', async () => {
    // Prepare
    const { adminKey, sessionId } = await sessionWithSenderKey();

    // Act: the whole reply takes about 40 re-check intervals.
    const reply = await api.request('POST', `/v1/chat/chat/sessions/${sessionId}/messages`, { key: adminKey, body: { content: 'tell me a long story' } });

    // Assess
    const data = sseData(reply.text);
    expect(data.at(-1)).toBe('[DONE]');
    expect(data.slice(0, -1).map((item) => (JSON.parse(item) as { delta: string }).delta).join('')).toBe(stubText(replyTokens));
    expect((await messagesOf(adminKey, sessionId))[1].metadata.status).toBe('COMPLETED');
  }, 60_000);
});

describe('a non-streamed reply', () => {
  it('answers 401 UNAUTHORIZED soon after its key is deleted, rather than the reply', async () => {
    // Prepare
    const { adminKey, senderKey, senderKeyId, sessionId } = await sessionWithSenderKey();
    const calls = stub.requests.length;
    const send = api.request('POST', `/v1/chat/chat/sessions/${sessionId}/messages`, { key: senderKey, body: { content: 'tell me a long story', stream: false } });
    await eventually(() => stub.requests.length, (count) => count > calls);

    // Act
    const deletedAt = Date.now();
    expect((await api.request('DELETE', `/v1/chat/api-keys/${senderKeyId}`, { key: adminKey })).status).toBe(204);
    const response = await send;

    // Assess
    expectError(response, 401, 'UNAUTHORIZED');
    expect(Date.now() - deletedAt).toBeLessThan(replyMs / 2);
    const messages = await eventually(() => messagesOf(adminKey, sessionId), (stored) => stored.length === 2);
    expect(messages[1].metadata).toMatchObject({ status: 'FAILED', error: { code: 'UNAUTHORIZED' } });
  });
});
