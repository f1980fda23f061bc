/**
 * A replay's analyses, usage and quota (issue 29): each replayed session carries its stored analysis beside the
 * replayed transcript's (made as a session's is, deterministic with the built-in model) and the verdicts that differ;
 * the replay's turns and tokens count in the organization's usage exactly once, from its `replay.completed` record;
 * and a replay that does not fit in the plan's `chat_messages` quota is refused.
 */
import { createServer, type Server } from 'node:http';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as usageMeter } from '../../functions/usage-meter/handler.ts';
import { usageResponse } from '../../shared/billing/usage-schemas.ts';
import type { AnalysisResult } from '../../shared/conversations/analysis-result-schemas.ts';
import { analysisChanges } from '../../shared/conversations/replays.ts';
import { keys } from '../../shared/platform/store/keys.ts';
import { runtime } from '../../shared/runtime.ts';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { insertRecords } from '../support/database.ts';
import { eventually } from '../support/eventually.ts';
import { closeServer, listenOnLoopback } from '../support/loopback-server.ts';
import { converse as converseWith, finishedReplay, startReplay } from '../support/replays.ts';

/** 10 messages a month: a 2-turn conversation (4 messages) and one replay of it (4 more) fit, a second replay does not. */
const tinyPlan = { name: 'Tiny (test)', quotas: { chat_messages: 10, voice_seconds: 60, knowledge_chunks: 10 }, concurrentCalls: 1, requestsPerSecond: 5, burst: 10 };

let toolServer: Server;
let toolBase: string;
let api: TestApi;

beforeAll(async () => {
  toolServer = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ status: 'shipped' }));
    });
  });
  toolBase = `http://127.0.0.1:${await listenOnLoopback(toolServer)}`;
  // The quota check reads the usage afresh each time, so a test sees the counts it waited for.
  api = await startApi({ REPLAY_MAX_SESSIONS: '3', REPLAY_MAX_TURNS: '10', PLANS: JSON.stringify({ tiny: tinyPlan }), QUOTA_CACHE_SECONDS: '0' }, { queues: true, streamPoller: true });
});
afterAll(async () => {
  await api.close();
  await closeServer(toolServer);
});

const analysisConfig = {
  intentRecognition: { enabled: true, intents: [{ name: 'delivery', description: 'Where an order is' }, { name: 'refund', description: 'Money back' }] },
  resolution: { enabled: true, checklist: ['Status shipped'] },
  sentiment: { enabled: true },
  dataExtraction: { fields: [{ name: 'order_id', type: 'string', description: 'The order number' }] },
};

async function agentWith(key: string, body: Record<string, unknown>): Promise<string> {
  const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Orders', description: 'Orders', role: 'You help with orders.', publishMode: 'MANUAL', ...body } });
  expect(agent.status, agent.text).toBe(201);
  return agent.body.id;
}

async function replayed(key: string, agentId: string, body: Record<string, unknown>): Promise<any> {
  const replay = await finishedReplay(api, key, agentId, await startReplay(api, key, agentId, body));
  expect(replay).toMatchObject({ status: 'COMPLETED' });
  return replay;
}

const converse = (key: string, agentId: string, turns: readonly string[]) => converseWith(api, key, agentId, turns);

async function usageOf(key: string) {
  const response = await api.request('GET', '/v1/chat/usage', { key });
  expect(response.status, response.text).toBe(200);
  return usageResponse.parse(response.body).currentPeriod;
}

const usageReaching = (key: string, done: (usage: Awaited<ReturnType<typeof usageOf>>) => boolean) => eventually(() => usageOf(key), done);

/** The parts of an analysis that do not depend on when it was made or on the ids of the messages it judged. */
function judged(analysis: AnalysisResult) {
  const { completedAt: _completedAt, intent, sentiment, ...rest } = analysis;
  return {
    ...rest,
    intent: intent && { conversation: intent.conversation, message: intent.message && { ...intent.message, messageId: undefined } },
    sentiment: sentiment && { conversation: sentiment.conversation, message: sentiment.message && { ...sentiment.message, messageId: undefined } },
  };
}

describe("a replayed session's analyses", () => {
  let key: string;
  let agentId: string;
  let sessionId: string;
  let stored: AnalysisResult;

  beforeAll(async () => {
    ({ key } = await api.newOrg());
    const tool = await api.request('POST', '/v1/chat/tools', {
      key,
      body: {
        name: 'get_order',
        description: 'Where an order is',
        type: 'API_TOOL',
        ajvPropertiesSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
        apiTool: { url: `${toolBase}/orders/{{id}}`, method: 'GET', headers: {} },
      },
    });
    expect(tool.status, tool.text).toBe(201);
    agentId = await agentWith(key, { tools: [{ toolId: tool.body.id }], analysis: analysisConfig });
    sessionId = await converse(key, agentId, ['Hello, where is my order? order id A-17', 'Please run get_order with {"id":"A-17"}', 'Thanks, great']);
    expect((await api.request('PATCH', `/v1/chat/chat/sessions/${sessionId}/close`, { key })).status).toBe(200);
    const session = await eventually(
      () => api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key }),
      (response) => response.body.analysis !== undefined,
    );
    stored = session.body.analysis;
    expect(stored).toMatchObject({ status: 'COMPLETED', resolution: { classification: 'RESOLVED' }, extractedData: { order_id: 'A-17' } });
    // Version 2, a draft: the tool detached, so the two turns that called it now get an echo.
    const detached = await api.request('PATCH', `/v2/chat/agents/${agentId}`, { key, body: { tools: [] } });
    expect(detached.body).toMatchObject({ draftVersion: 2, publishedVersion: 1 });
  });

  it('through the same version: the replayed transcript is analysed exactly as the stored one was, and nothing differs', async () => {
    // Act
    const [result] = (await replayed(key, agentId, { sessionIds: [sessionId], candidate: { version: 1 } })).results;

    // Assess
    expect(result.turnsChanged).toBe(0);
    expect(result.analysis.original).toEqual(stored);
    expect(judged(result.analysis.replay)).toEqual(judged(stored));
    expect(result.analysis.changes).toEqual([]);
  });

  it('through a version without the tool: the verdict the replies decide changes, and the others stay', async () => {
    // Act
    const [result] = (await replayed(key, agentId, { sessionIds: [sessionId], candidate: { version: 2 } })).results;

    // Assess
    expect(result.turnsChanged).toBe(2);
    expect(result.analysis.original).toEqual(stored);
    expect(result.analysis.replay).toMatchObject({
      status: 'COMPLETED',
      model: stored.model,
      intent: { conversation: stored.intent!.conversation },
      resolution: { classification: 'UNRESOLVED', satisfiedChecklistItems: [] },
      extractedData: { order_id: 'A-17' },
    });
    expect(stored.summary).toContain('calling tools 2 times');
    expect(result.analysis.replay.summary).not.toContain('calling tools');
    expect(result.analysis.changes).toEqual([{ field: 'resolution', original: 'RESOLVED', replay: 'UNRESOLVED' }]);
  });

  it("with the candidate's own analysis configuration: a field it adds shows as changed, and no configuration means no analyses", async () => {
    // Prepare
    const fields = [...analysisConfig.dataExtraction.fields, { name: 'mood', type: 'enum', values: ['great', 'bad'] }];
    const changes = { analysis: { ...analysisConfig, dataExtraction: { fields } } };

    // Act
    const [withField] = (await replayed(key, agentId, { sessionIds: [sessionId], candidate: { changes } })).results;
    const [without] = (await replayed(key, agentId, { sessionIds: [sessionId], candidate: { changes: { analysis: null } } })).results;

    // Assess
    expect(withField.analysis.replay.extractedData).toEqual({ order_id: 'A-17', mood: 'great' });
    expect(withField.analysis.changes).toEqual([{ field: 'extractedData.mood', original: null, replay: 'great' }]);
    expect(without.turns).toHaveLength(3);
    expect(without.analysis).toBeUndefined();
  });
});

/** The stream records of the agent's `replay.completed` outbox items, as DynamoDB Streams would hand them over. */
async function replayCompletedRecords(orgId: string, agentId: string): Promise<DynamoDBRecord[]> {
  const deps = runtime();
  const page = await deps.documentClient.send(
    new QueryCommand({
      TableName: deps.config.TABLE_NAME,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :outbox)',
      FilterExpression: '#type = :type',
      ExpressionAttributeNames: { '#type': 'type' },
      ExpressionAttributeValues: { ':pk': keys.agentPartition(orgId, agentId), ':outbox': 'OUTBOX#', ':type': 'replay.completed' },
    }),
  );
  return insertRecords(page.Items ?? []);
}

describe("a replay's usage", () => {
  it("counts the replay's turns, their messages and their tokens in the organization's usage, once however often its record comes", async () => {
    // Prepare
    const { key, orgId } = await api.newOrg();
    const other = await api.newOrg();
    const agentId = await agentWith(key, {});
    const sessionId = await converse(key, agentId, ['Hello there', 'How are you today']);
    const live = await usageReaching(key, (usage) => usage.metrics.chat_messages === 4);
    const [liveTokens] = live.tokens;

    // Act
    const replay = await replayed(key, agentId, { sessionIds: [sessionId], candidate: { version: 1 } });
    const counted = await usageReaching(key, (usage) => usage.metrics.replay_turns > 0);
    const records = await replayCompletedRecords(orgId, agentId);
    const redelivered = await usageMeter({ Records: records });
    const again = await usageMeter({ Records: [...records, ...records] });

    // Assess
    const [result] = replay.results;
    expect(result.usage).toEqual({ turns: 2, tokens: [{ modelId: liveTokens!.modelId, inputTokens: expect.any(Number), outputTokens: expect.any(Number) }] });
    const [replayTokens] = result.usage.tokens;
    expect(replayTokens.inputTokens).toBeGreaterThan(0);
    expect(records).toHaveLength(1);
    expect(redelivered.batchItemFailures).toEqual([]);
    expect(again.batchItemFailures).toEqual([]);
    const expected = {
      metrics: expect.objectContaining({ chat_messages: 8, replay_turns: 2 }),
      tokens: [{ modelId: liveTokens!.modelId, inputTokens: liveTokens!.inputTokens + replayTokens.inputTokens, outputTokens: liveTokens!.outputTokens + replayTokens.outputTokens }],
    };
    expect(counted).toMatchObject(expected);
    expect(await usageOf(key)).toMatchObject(expected);
    expect((await usageOf(other.key)).metrics).toMatchObject({ chat_messages: 0, replay_turns: 0 });
  });
});

describe("a replay's quota", () => {
  it("is refused with 429 QUOTA_EXCEEDED when its turns' messages do not fit in what is left of the plan's chat_messages, until the plan grows", async () => {
    // Prepare: 4 of the tiny plan's 10 messages used, then 4 more by a replay of the 2 turns.
    const { key } = await api.newOrg();
    expect((await api.request('PATCH', '/v1/chat/subscription', { key, body: { plan: 'tiny' } })).status).toBe(200);
    const agentId = await agentWith(key, {});
    const sessionId = await converse(key, agentId, ['Hello there', 'How are you today']);
    await usageReaching(key, (usage) => usage.metrics.chat_messages === 4);
    await replayed(key, agentId, { sessionIds: [sessionId], candidate: { version: 1 } });
    await usageReaching(key, (usage) => usage.metrics.chat_messages === 8);

    // Act
    const refused = await api.request('POST', `/v2/chat/agents/${agentId}/replays`, { key, body: { sessionIds: [sessionId], candidate: { version: 1 } } });
    await api.request('PATCH', '/v1/chat/subscription', { key, body: { plan: 'pro' } });
    const afterUpgrade = await api.request('POST', `/v2/chat/agents/${agentId}/replays`, { key, body: { sessionIds: [sessionId], candidate: { version: 1 } } });

    // Assess
    expectError(refused, 429, 'QUOTA_EXCEEDED');
    expect(refused.body.error.message).toContain('has 2 left, and this needs 4');
    const now = new Date();
    const periodEnd = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
    expect(Math.abs(Number(refused.headers.get('retry-after')) - (periodEnd - now.getTime()) / 1000)).toBeLessThan(60);
    expect(afterUpgrade.status, afterUpgrade.text).toBe(202);
  });
});

describe('the verdicts compared', () => {
  const extracted = fc.dictionary(fc.constantFrom('a', 'b', 'c', 'd'), fc.oneof(fc.constant(null), fc.constantFrom('x', 'y'), fc.integer({ min: 0, max: 2 }), fc.boolean()));
  const analysis = (extractedData: Record<string, string | number | boolean | null>): AnalysisResult => ({
    status: 'COMPLETED',
    model: { id: 'm', provider: 'builtin', name: 'm' },
    completedAt: '2026-11-27T00:00:00.000Z',
    extractedData,
  });

  it('are exactly the fields whose values differ, a field one side lacks being null there', () => {
    fc.assert(
      fc.property(extracted, extracted, (before, after) => {
        const changes = analysisChanges(analysis(before), analysis(after));
        const fields = [...new Set([...Object.keys(before), ...Object.keys(after)])].filter((field) => (before[field] ?? null) !== (after[field] ?? null));
        expect(changes.map((change) => change.field).sort()).toEqual(fields.map((field) => `extractedData.${field}`).sort());
        for (const change of changes) expect(change.original).not.toBe(change.replay);
      }),
    );
  });
});
