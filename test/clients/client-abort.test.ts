import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { startOpenAIStub, stubText, type OpenAIStub } from '../support/openai-stub.ts';

let api: TestApi;
let stub: OpenAIStub;

beforeAll(async () => {
  stub = await startOpenAIStub({ tokens: 20, delayMs: 25 });
  api = await startApi({ OPENAI_COMPATIBLE_BASE_URL: stub.baseUrl, OPENAI_COMPATIBLE_MODELS: 'slow-model' });
});
afterAll(async () => {
  await api.close();
  await stub.close();
});

/** Sends a message and hangs up as soon as the first event arrives. */
function sendAndHangUp(key: string, sessionId: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const call = request(`${api.baseUrl}/v1/chat/chat/sessions/${sessionId}/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
    });
    call.on('response', (response) => {
      response.once('data', (chunk: Buffer) => {
        call.destroy();
        resolve(chunk.toString('utf8'));
      });
    });
    call.on('error', (error) => (call.destroyed ? undefined : reject(error)));
    call.end(JSON.stringify({ content: 'tell me a story' }));
  });
}

describe('a client that disconnects mid-stream', () => {
  it('does not lose the reply: the turn finishes and the whole assistant message is persisted', async () => {
    const { key } = await api.newOrg();
    const models = await api.request('GET', '/v1/chat/models?provider=openai-compatible', { key });
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'A', description: 'A', role: 'A', modelId: models.body.data[0].id } });
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
    const first = await sendAndHangUp(key, session.body.id);
    expect(first).toMatch(/^data: \{"id":"msg_/);
    const messages: { role: string; content: string; metadata: { status?: string } }[] = await eventually(
      async () => (await api.request('GET', `/api/v1/chat/sessions/${session.body.id}/messages`, { key })).body.data,
      (found) => found.length === 2,
    );
    expect(messages.map((message) => message.role)).toEqual(['USER', 'ASSISTANT']);
    expect(messages[1]).toMatchObject({ content: stubText(20), metadata: { status: 'COMPLETED' } });
  });
});
