import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { startBedrockStub, type BedrockStub } from '../support/bedrock-stub.ts';
import { eventually } from '../support/eventually.ts';
import { refundPolicy } from '../support/knowledge-fixtures.ts';
import { startOpenAIStub, type OpenAIStub, type OpenAIStubOptions } from '../support/openai-stub.ts';

let api: TestApi;
let bedrock: BedrockStub;
let openai: OpenAIStub;
const openaiOptions: OpenAIStubOptions = {};
const titan = 'bedrock/amazon.titan-embed-text-v2:0';
const openaiEmbedding = 'openai-compatible/text-embedding-3-small';

beforeAll(async () => {
  // Invoices rank first with the provider's reranker, whatever the query: its order is visibly not the built-in one.
  bedrock = await startBedrockStub({ rerankScore: (query, text) => (text.includes('invoices') ? 0.99 : text.toLowerCase().includes(query.split(' ')[0]!) ? 0.5 : 0.01) });
  openai = await startOpenAIStub(openaiOptions);
  api = await startApi(
    {
      KNOWLEDGE_VECTOR_DIR: mkdtempSync(join(tmpdir(), 'vectors-')),
      OPENAI_COMPATIBLE_BASE_URL: openai.baseUrl,
      OPENAI_COMPATIBLE_EMBEDDING_MODELS: 'text-embedding-3-small',
      BEDROCK_EMBEDDING_MODELS: 'amazon.titan-embed-text-v2:0',
      BEDROCK_RERANK_MODELS: 'cohere.rerank-v3-5:0,amazon.rerank-v1:0',
      AWS_ENDPOINT_URL_BEDROCK_RUNTIME: bedrock.baseUrl,
      AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME: bedrock.baseUrl,
      AWS_ACCESS_KEY_ID: 'AKIDSTUBEXAMPLE',
      AWS_SECRET_ACCESS_KEY: 'stub-secret',
    },
    { queues: { visibilityTimeoutSeconds: 5 } },
  );
});
afterAll(async () => {
  await api.close();
  await bedrock.close();
  await openai.close();
});

async function storeWith(key: string, config: object): Promise<any> {
  const created = await api.request('POST', '/v1/chat/knowledge-stores', { key, body: { name: 'Help center', config } });
  expect(created.status, created.text).toBe(201);
  return created.body;
}

async function ingested(key: string, storeId: string, body: object): Promise<any> {
  const submitted = await api.request('POST', `/v1/chat/knowledge-stores/${storeId}/documents`, { key, body });
  expect(submitted.status, submitted.text).toBe(202);
  return eventually(
    async () => (await api.request('GET', `/v1/chat/knowledge-stores/${storeId}/documents/${submitted.body.id}`, { key })).body,
    (document) => document?.status !== 'PROCESSING',
  );
}

const query = (key: string, storeId: string, body: object) => api.request('POST', `/v1/chat/knowledge-stores/${storeId}/query`, { key, body });

describe('provider embedding and rerank models', () => {
  it('lists the embedding and rerank models of the deployment, the built-in ones included', async () => {
    const { key } = await api.newOrg();
    const embedding = await api.request('GET', '/v1/chat/models?type=EMBEDDING&limit=100', { key });
    expect(embedding.body.data.map((model: any) => `${model.provider}/${model.name}`).sort()).toEqual(['bedrock/amazon.titan-embed-text-v2:0', 'builtin/hashed-ngrams-256', 'builtin/hashed-words-512', openaiEmbedding]);
    const rerank = await api.request('GET', '/v1/chat/models?type=RERANK&limit=100', { key });
    expect(rerank.body.data.map((model: any) => `${model.provider}/${model.name}`).sort()).toEqual(['bedrock/amazon.rerank-v1:0', 'bedrock/cohere.rerank-v3-5:0', 'builtin/lexical-coverage']);
  });

  it('builds a store with Titan v2 at 512 dimensions: one signed InvokeModel per chunk, and queries embed the same way', async () => {
    const { key } = await api.newOrg();
    const store = await storeWith(key, { embeddingModelId: titan, embeddingDimensions: 512 });
    expect(store.embedder).toEqual({ modelId: titan, dimensions: 512 });
    const before = bedrock.requests.length;
    const document = await ingested(key, store.id, { name: 'Refund policy', text: refundPolicy });
    expect(document).toMatchObject({ status: 'UPSERTED', chunkCount: 3 });
    const invocations = bedrock.requests.slice(before);
    expect(invocations).toHaveLength(3);
    for (const invocation of invocations) {
      expect(invocation.path).toBe('/model/amazon.titan-embed-text-v2:0/invoke');
      expect(invocation.body).toEqual({ inputText: expect.any(String), dimensions: 512 });
      expect(invocation.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDSTUBEXAMPLE\/\d{8}\/us-east-1\/bedrock\/aws4_request/);
    }
    const answer = await query(key, store.id, { query: 'How many days do I have to ask for a refund?', topK: 1 });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.data).toEqual([expect.objectContaining({ documentId: document.id, headingPath: ['Refund policy', 'Deadlines'] })]);
    expect(bedrock.requests.at(-1)!.body).toEqual({ inputText: 'How many days do I have to ask for a refund?', dimensions: 512 });

    expectError(await api.request('POST', '/v1/chat/knowledge-stores', { key, body: { name: 'x', config: { embeddingModelId: titan, embeddingDimensions: 300 } } }), 400, 'VALIDATION_ERROR', 'config.embeddingDimensions');
    const defaulted = await storeWith(key, { embeddingModelId: titan });
    expect(defaulted.embedder).toEqual({ modelId: titan, dimensions: 1024 });
  });

  it('answers EMBEDDER_MISMATCH when the deployment’s model no longer embeds as the one that built the store; turns go on without it', async () => {
    const { key } = await api.newOrg();
    expectError(await api.request('POST', '/v1/chat/knowledge-stores', { key, body: { name: 'x', config: { embeddingModelId: openaiEmbedding } } }), 400, 'VALIDATION_ERROR', 'config.embeddingDimensions');
    const store = await storeWith(key, { embeddingModelId: openaiEmbedding, embeddingDimensions: 128, topK: 1 });
    expect(await ingested(key, store.id, { name: 'Refund policy', text: refundPolicy })).toMatchObject({ status: 'UPSERTED' });
    const embeddingCalls = openai.requests.filter((request) => request.path.endsWith('/embeddings'));
    expect(embeddingCalls.at(-1)!.body).toMatchObject({ model: 'text-embedding-3-small', dimensions: 128, encoding_format: 'float' });
    expect((await query(key, store.id, { query: 'When is the support desk open?' })).body.data).toEqual([expect.objectContaining({ headingPath: ['Opening hours'] })]);

    // The endpoint now serves a model of another size under that name: its vectors mean nothing to this index.
    openaiOptions.embeddingDimensions = 96;
    try {
      const refused = await query(key, store.id, { query: 'When is the support desk open?' });
      expectError(refused, 409, 'EMBEDDER_MISMATCH');
      expect(refused.body.error.message).toMatch(/text-embedding-3-small with 128 dimensions.*96/);
      const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Ada', description: 'Support', role: 'Support', knowledgeStoreId: store.id } });
      const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
      const reply = await api.request('POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, { key, body: { content: 'When is the support desk open?', stream: false } });
      expect(reply.status, reply.text).toBe(200);
      expect(reply.body.assistantMessage.metadata.citations).toEqual([]);

      // Re-indexed at the size the model now answers with, the store answers again.
      const patched = await api.request('PATCH', `/v1/chat/knowledge-stores/${store.id}`, { key, body: { config: { embeddingDimensions: 96 } } });
      expect(patched.status, patched.text).toBe(200);
      expect(patched.body).toMatchObject({ embedder: { modelId: openaiEmbedding, dimensions: 128 }, reindexing: { modelId: openaiEmbedding, dimensions: 96 } });
      const reindexed = await eventually(async () => (await api.request('GET', `/v1/chat/knowledge-stores/${store.id}`, { key })).body, (found) => !found.reindexing);
      expect(reindexed.embedder).toEqual({ modelId: openaiEmbedding, dimensions: 96 });
      expect((await query(key, store.id, { query: 'When is the support desk open?' })).body.data).toEqual([expect.objectContaining({ headingPath: ['Opening hours'] })]);
    } finally {
      delete openaiOptions.embeddingDimensions;
    }
  });

  it('re-indexes a store with another embedder: the old vectors answer until the new ones are all written, then the new model embeds the queries', async () => {
    const { key } = await api.newOrg();
    const store = await storeWith(key, { topK: 1 });
    const document = await ingested(key, store.id, { name: 'Refund policy', text: refundPolicy });
    const before = bedrock.requests.length;
    const patched = await api.request('PATCH', `/v1/chat/knowledge-stores/${store.id}`, { key, body: { config: { embeddingModelId: titan, embeddingDimensions: 256 } } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({ config: { embeddingModelId: titan, embeddingDimensions: 256 }, embedder: { modelId: 'builtin/hashed-words-512', dimensions: 512 }, reindexing: { modelId: titan, dimensions: 256 } });
    // Meanwhile and after, the same chunk answers: never a failed or empty query.
    const done = await eventually(
      async () => {
        const answer = await query(key, store.id, { query: 'How many days do I have to ask for a refund?' });
        expect(answer.status, answer.text).toBe(200);
        expect(answer.body.data).toEqual([expect.objectContaining({ documentId: document.id, headingPath: ['Refund policy', 'Deadlines'] })]);
        return (await api.request('GET', `/v1/chat/knowledge-stores/${store.id}`, { key })).body;
      },
      (found) => !found.reindexing,
    );
    expect(done.embedder).toEqual({ modelId: titan, dimensions: 256 });
    expect(done.counts).toMatchObject({ documents: 1, chunks: 3 });
    const invocations = bedrock.requests.slice(before).map((request) => request.body);
    // Three chunks embedded again, then the queries after the switch.
    expect(invocations.filter((body) => body.inputText !== 'How many days do I have to ask for a refund?')).toHaveLength(3);
    await query(key, store.id, { query: 'refund deadline' });
    expect(bedrock.requests.at(-1)!.body).toEqual({ inputText: 'refund deadline', dimensions: 256 });
    // A later document is built by the new embedder.
    expect(await ingested(key, store.id, { name: 'Gift cards', text: 'Gift cards never expire.' })).toMatchObject({ status: 'UPSERTED' });
    expect((await query(key, store.id, { query: 'Do gift cards expire?' })).body.data[0].documentName).toBe('Gift cards');
  });

  it('reranks with the Bedrock rerank model the store names, and refuses a model the deployment does not offer', async () => {
    const { key } = await api.newOrg();
    const store = await storeWith(key, { topK: 2, rerank: { enabled: true, model: 'bedrock/cohere.rerank-v3-5:0' } });
    const texts: Record<string, string> = {
      Passwords: 'Password reset: open the login page and choose reset password.',
      Invoices: 'Your account page lists your invoices and your plan.',
      Closing: 'To close your account, open the settings of the account.',
    };
    for (const [name, text] of Object.entries(texts)) expect(await ingested(key, store.id, { name, text, format: 'text' })).toMatchObject({ status: 'UPSERTED' });
    const before = bedrock.requests.length;
    const reranked = await query(key, store.id, { query: 'password reset' });
    expect(reranked.body.data.map((chunk: any) => [chunk.documentName, chunk.score])).toEqual([
      ['Invoices', 0.99],
      ['Passwords', 0.5],
    ]);
    const [call] = bedrock.requests.slice(before).filter((request) => request.path === '/rerank');
    expect(call!.body.rerankingConfiguration.bedrockRerankingConfiguration.modelConfiguration.modelArn).toBe('arn:aws:bedrock:us-east-1::foundation-model/cohere.rerank-v3-5:0');
    expect(call!.body.queries).toEqual([{ type: 'TEXT', textQuery: { text: 'password reset' } }]);
    // Without rerank, the fused ranking: the passwords chunk first.
    expect((await query(key, store.id, { query: 'password reset', rerank: false })).body.data[0].documentName).toBe('Passwords');

    expectError(await api.request('PATCH', `/v1/chat/knowledge-stores/${store.id}`, { key, body: { config: { rerank: { enabled: true, model: 'bedrock/unknown-rerank' } } } }), 400, 'VALIDATION_ERROR', 'config.rerank.model');
  });
});
