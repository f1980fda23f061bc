/**
 * Free-form objects (session metadata, session variables, message metadata) hold what the client sends, so each
 * must be something DynamoDB can store: otherwise a 400 naming the path, and nothing persisted. And a turn whose
 * messages cannot be committed says so in its stream.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, expectError, type TestApi } from '../support/api.ts';
import { startOpenAIStub, type OpenAIStub } from '../support/openai-stub.ts';

let api: TestApi;
let stub: OpenAIStub;

beforeAll(async () => {
  stub = await startOpenAIStub({ tokens: 40, delayMs: 25 });
  api = await startApi({ OPENAI_COMPATIBLE_BASE_URL: stub.baseUrl, OPENAI_COMPATIBLE_MODELS: 'slow-model' });
});
afterAll(async () => {
  await api.close();
  await stub.close();
});

const nested = (depth: number): unknown => (depth === 0 ? 'leaf' : { deeper: nested(depth - 1) });

/** What the probe sent, as raw JSON text (a JavaScript number could not even hold the second one). */
const unstorable: { name: string; json: string; path: string }[] = [
  { name: 'a number too large for DynamoDB', json: '{"n":1e300}', path: 'n' },
  { name: 'an integer beyond what JSON numbers keep exactly', json: '{"n":12345678901234567890}', path: 'n' },
  { name: 'a number too small for DynamoDB', json: '{"n":1e-200}', path: 'n' },
  { name: 'an empty property name', json: '{"a":{"":1}}', path: 'a.' },
  { name: 'arrays nested 40 deep', json: `{"a":${'['.repeat(40)}1${']'.repeat(40)}}`, path: 'a.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0' },
  { name: 'objects nested 40 deep', json: JSON.stringify({ a: nested(40) }), path: `a${'.deeper'.repeat(19)}` },
];

async function newAgent(key: string, modelProvider?: string): Promise<string> {
  const body: Record<string, unknown> = { fullName: 'A', description: 'A', role: 'A' };
  if (modelProvider) body.modelId = (await api.request('GET', `/v1/chat/models?provider=${modelProvider}`, { key })).body.data[0].id;
  return (await api.request('POST', '/v2/chat/agents', { key, body })).body.id;
}

describe.each(['metadata', 'sessionVariables'])('createSession with unstorable %s', (field) => {
  it.each(unstorable)('answers 400 VALIDATION_ERROR naming the path for $name, and creates nothing', async ({ json, path }) => {
    // Prepare
    const { key } = await api.newOrg();
    const agentId = await newAgent(key);

    // Act
    const response = await api.request('POST', '/v1/chat/chat/sessions', {
      key,
      rawBody: `{"agentId":"${agentId}","${field}":${json}}`,
      headers: { 'content-type': 'application/json' },
    });

    // Assess
    expectError(response, 400, 'VALIDATION_ERROR', `${field}.${path}`);
    expect((await api.request('GET', '/v1/chat/chat/sessions', { key })).body.pagination.total).toBe(0);
  });
});

describe.each([false, true])('sendMessage (stream %s) with unstorable metadata', (stream) => {
  it.each(unstorable)('answers 400 VALIDATION_ERROR naming the path for $name, and stores no message', async ({ json, path }) => {
    // Prepare
    const { key } = await api.newOrg();
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: await newAgent(key) } });

    // Act
    const response = await api.request('POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, {
      key,
      rawBody: `{"content":"Hello","stream":${stream},"metadata":${json}}`,
      headers: { 'content-type': 'application/json' },
    });

    // Assess
    expectError(response, 400, 'VALIDATION_ERROR', `metadata.${path}`);
    const messages = await api.request('GET', `/api/v1/chat/sessions/${session.body.id}/messages`, { key });
    expect(messages.body.pagination.total).toBe(0);
  });
});

describe('free-form objects DynamoDB can store', () => {
  it('keeps small, large and fractional numbers, nesting up to 20 levels and empty strings exactly', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const metadata = { small: 1e-130, large: Number.MAX_SAFE_INTEGER, fraction: -0.000123, empty: '', deep: nested(19), list: [[1, [2]]] };

    // Act
    const created = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: await newAgent(key), metadata } });

    // Assess
    expect(created.status, created.text).toBe(201);
    const read = await api.request('GET', `/api/v1/chat/sessions/${created.body.id}`, { key });
    expect(read.body.metadata).toEqual({ ...metadata, sessionVariables: {} });
  });
});

describe('a session closed while its reply streams', () => {
  it('ends the stream with an INVALID_SESSION error event and stores neither message', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: await newAgent(key, 'openai-compatible') } });
    const path = `/v1/chat/chat/sessions/${session.body.id}`;

    // Act: close once the first delta has arrived.
    const reply = await fetch(`${api.baseUrl}${path}/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'tell me a story' }),
    });
    const reader = reply.body!.getReader();
    let text = new TextDecoder().decode((await reader.read()).value);
    expect(text).toMatch(/^data: \{"id":"msg_/);
    expect((await api.request('PATCH', `${path}/close`, { key })).body.state).toBe('CLOSED');
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += new TextDecoder().decode(chunk.value);

    // Assess
    const frames = text.trim().split('\n\n').map((frame) => frame.replace(/^data: /, ''));
    expect(frames.at(-1)).toBe('[DONE]');
    expect(JSON.parse(frames.at(-2) as string).error).toMatchObject({ code: 'INVALID_SESSION', status: 409 });
    const closed = await api.request('GET', `/api/v1/chat/sessions/${session.body.id}`, { key });
    expect(closed.body).toMatchObject({ state: 'CLOSED', messageCount: 0 });
    expect((await api.request('GET', `/api/v1/chat/sessions/${session.body.id}/messages`, { key })).body.pagination.total).toBe(0);
  });

  it('answers a non-streamed send 409 INVALID_SESSION', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: await newAgent(key, 'openai-compatible') } });
    const path = `/v1/chat/chat/sessions/${session.body.id}`;

    // Act
    const send = api.request('POST', `${path}/messages`, { key, body: { content: 'tell me a story', stream: false } });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await api.request('PATCH', `${path}/close`, { key });

    // Assess
    expectError(await send, 409, 'INVALID_SESSION');
    expect((await api.request('GET', `/api/v1/chat/sessions/${session.body.id}/messages`, { key })).body.pagination.total).toBe(0);
  });
});
