import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { startOpenAIStub, stubText, type OpenAIStub } from '../support/openai-stub.ts';
import { sseData } from '../support/sse.ts';

let api: TestApi;
let stub: OpenAIStub;
let key: string;
let modelId: string;

beforeAll(async () => {
  stub = await startOpenAIStub({ failAfterTokens: 5, failMode: 'destroy' });
  api = await startApi({ OPENAI_COMPATIBLE_BASE_URL: stub.baseUrl, OPENAI_COMPATIBLE_MODELS: 'flaky-model' });
  ({ key } = await api.newOrg());
  const models = await api.request('GET', '/v1/chat/models?provider=openai-compatible', { key });
  modelId = models.body.data[0].id;
});
afterAll(async () => {
  await api.close();
  await stub.close();
});

describe('a provider failing mid-stream', () => {
  it('ends the stream with an error event in the envelope shape, then [DONE], and records the turn as failed', async () => {
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'A', description: 'A', role: 'A', modelId } });
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
    const response = await api.request('POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, { key, body: { content: 'hello' } });
    expect(response.status).toBe(200);
    const data = sseData(response.text);
    expect(data.at(-1)).toBe('[DONE]');
    const failure = JSON.parse(data.at(-2) as string);
    expect(failure.error).toMatchObject({ code: 'MODEL_ERROR', status: 502 });
    expect(failure.meta.requestId).toBe(response.headers.get('x-request-id'));
    const deltas = data.slice(0, -2).map((item) => JSON.parse(item).delta as string);
    expect(deltas.join('')).toBe(stubText(5));

    const history = await api.request('GET', `/api/v1/chat/sessions/${session.body.id}/messages`, { key });
    const assistant = history.body.data.at(-1);
    expect(assistant).toMatchObject({ role: 'ASSISTANT', content: stubText(5), metadata: { status: 'FAILED', error: { code: 'MODEL_ERROR' } } });
    const again = await api.request('GET', `/api/v1/chat/sessions/${session.body.id}`, { key });
    expect(again.body.state).toBe('OPEN');
  });

  it('answers 502 MODEL_ERROR when the send was not streamed, with the failed turn in the history', async () => {
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'A', description: 'A', role: 'A', modelId } });
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
    const response = await api.request('POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, { key, body: { content: 'hello', stream: false } });
    expect(response.status).toBe(502);
    expect(response.body.error).toMatchObject({ code: 'MODEL_ERROR', status: 502 });
    const history = await api.request('GET', `/api/v1/chat/sessions/${session.body.id}/messages`, { key });
    expect(history.body.data.map((message: { role: string }) => message.role)).toEqual(['USER', 'ASSISTANT']);
    expect(history.body.data[1].metadata.status).toBe('FAILED');
  });

  it('frees the Idempotency-Key of a streamed send whose turn failed: a retry runs the turn again', async () => {
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'A', description: 'A', role: 'A', modelId } });
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
    const send = () =>
      api.request('POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, { key, body: { content: 'hello' }, headers: { 'idempotency-key': 'failed-turn' } });
    const first = await send();
    const retry = await send();
    for (const response of [first, retry]) expect(JSON.parse(sseData(response.text).at(-2) as string).error.code).toBe('MODEL_ERROR');
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    const history = await api.request('GET', `/api/v1/chat/sessions/${session.body.id}/messages`, { key });
    expect(history.body.data.map((message: { role: string }) => message.role)).toEqual(['USER', 'ASSISTANT', 'USER', 'ASSISTANT']);
  });
});
