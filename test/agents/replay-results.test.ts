/**
 * Replays at scale (issue 29): results far beyond one DynamoDB item and one Query page read back whole; an agent's
 * replays are listed, newest first, in its organization only; a handoff made during a replay passes the later turns
 * to its target, at the version a live session would use, and writes nothing. Replays whose invocation dies:
 * replay-crashes.test.ts.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../shared/platform/store/keys.ts';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { testDocuments, testTableName } from '../support/database.ts';
import { converse, createAgent, createApiTool, finishedReplay, startReplay, startToolServer, storedAgentItems } from '../support/replays.ts';

/** The customer's tool API: counts each request by path. */
let tools: Awaited<ReturnType<typeof startToolServer>>;
let api: TestApi;

beforeAll(async () => {
  tools = await startToolServer();
  api = await startApi({ REPLAY_MAX_SESSIONS: '3', REPLAY_MAX_TURNS: '40' }, { queues: true });
});
afterAll(async () => {
  await api.close();
  await tools.close();
});

describe('replay results beyond one item', () => {
  it('a session whose replay holds about 1.4 MB completes, is stored in parts and reads back whole', async () => {
    const { orgId, key } = await api.newOrg();
    const agentId = await createAgent(api, key);
    // 32,000 three-byte characters: 96 KB a message, in the user turn of the result.
    const messages = Array.from({ length: 15 }, (_, index) => `Turn ${index + 1}: ${'€'.repeat(32_000 - 12)}`);
    const sessionId = await converse(api, key, agentId, messages);

    const replayId = await startReplay(api, key, agentId, { sessionIds: [sessionId], candidate: { version: 1 } });
    const replay = await finishedReplay(api, key, agentId, replayId);

    expect(replay).toMatchObject({ status: 'COMPLETED', progress: { sessionsDone: 1, sessionsTotal: 1, turnsTotal: 15 }, turnsChanged: 0 });
    expect(replay.results).toHaveLength(1);
    expect(replay.results[0]).toMatchObject({ sessionId, status: 'COMPLETED', turnsChanged: 0 });
    expect(replay.results[0].turns.map((turn: { user: string }) => turn.user)).toEqual(messages);
    expect(replay.results[0].turns.every((turn: { diff: string; original: unknown; replay: unknown }) => turn.diff === 'SAME' && JSON.stringify(turn.original) === JSON.stringify(turn.replay))).toBe(true);
    const parts = await storedAgentItems(orgId, agentId, `REPLAYRESULT#${replayId}#`);
    const sizes = parts.map((part) => (part.body as Uint8Array).byteLength);
    expect(sizes.every((size) => size <= 350_000)).toBe(true);
    expect(sizes.reduce((sum, size) => sum + size, 0)).toBeGreaterThan(1_300_000);
    // More than one Query page: the read follows LastEvaluatedKey.
    const firstPage = await testDocuments.send(
      new QueryCommand({
        TableName: testTableName(),
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': keys.agentPartition(orgId, agentId), ':prefix': `REPLAYRESULT#${replayId}#` },
      }),
    );
    expect(firstPage.LastEvaluatedKey).toBeDefined();
  }, 120_000);
});

describe("listing an agent's replays", () => {
  it('pages summaries newest first, without the turns, and only in the agent’s organization', async () => {
    const { key } = await api.newOrg();
    const agentId = await createAgent(api, key);
    const sessionId = await converse(api, key, agentId, ['Hello there']);
    expect((await api.request('PATCH', `/v2/chat/agents/${agentId}`, { key, body: { handoffAgents: [] } })).status).toBe(200);
    const replayIds: string[] = [];
    for (const version of [1, 2, 1]) replayIds.push(await startReplay(api, key, agentId, { sessionIds: [sessionId], candidate: { version } }));
    for (const replayId of replayIds) await finishedReplay(api, key, agentId, replayId);

    const first = await api.request('GET', `/v2/chat/agents/${agentId}/replays?limit=2`, { key });
    const second = await api.request('GET', `/v2/chat/agents/${agentId}/replays?limit=2&page=2`, { key });

    expect(first.status, first.text).toBe(200);
    expect(first.body.pagination).toEqual({ page: 1, limit: 2, total: 3, totalPages: 2 });
    expect([...first.body.data, ...second.body.data].map((replay: { id: string }) => replay.id)).toEqual([...replayIds].reverse());
    expect(first.body.data[1]).toEqual({
      id: replayIds[1],
      agentId,
      status: 'COMPLETED',
      candidate: { version: 2 },
      liveTools: false,
      sessionIds: [sessionId],
      progress: { sessionsDone: 1, sessionsTotal: 1, turnsTotal: 1 },
      turnsChanged: 0,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      completedAt: expect.any(String),
    });
    const other = await api.newOrg();
    const otherAgent = await createAgent(api, other.key);
    expectError(await api.request('GET', `/v2/chat/agents/${agentId}/replays`, { key: other.key }), 404, 'NOT_FOUND');
    expect((await api.request('GET', `/v2/chat/agents/${otherAgent}/replays`, { key: other.key })).body).toEqual({ data: [], pagination: { page: 1, limit: 10, total: 0, totalPages: 0 } });
  }, 120_000);
});

describe('a handoff during a replay', () => {
  it("passes the session's later turns to the target at its published version, back to the candidate on a handback, and writes nothing", async () => {
    const { key } = await api.newOrg();
    const invoice = await createApiTool(api, key, 'get_invoice', 'GET', `${tools.base}/invoices`, 'id');
    const front = await createAgent(api, key, { fullName: 'Front desk' });
    // The billing desk's published version 1 has the invoice tool and may hand back; its draft, version 2, has no tool.
    const billing = await createAgent(api, key, { fullName: 'Billing', tools: [{ toolId: invoice }], handoffAgents: [{ agentId: front, description: 'Anything else' }] });
    expect((await api.request('PATCH', `/v2/chat/agents/${billing}`, { key, body: { tools: [] } })).body).toMatchObject({ draftVersion: 2, publishedVersion: 1 });
    const conversation = [
      'Hello there',
      `Please run handoff with {"agentId":"${billing}"}`,
      'Please run get_invoice with {"id":"I1"}',
      `Please run handoff with {"agentId":"${front}"}`,
      'Please run get_invoice with {"id":"I2"}',
    ];
    // The front desk's version 1 hands nothing over: the original session stays with it.
    const sessionId = await converse(api, key, front, conversation);
    expect((await api.request('PATCH', `/v2/chat/agents/${front}`, { key, body: { handoffAgents: [{ agentId: billing, description: 'Invoices' }] } })).body.draftVersion).toBe(2);
    const before = tools.requests.length;

    const replayId = await startReplay(api, key, front, { sessionIds: [sessionId], candidate: { version: 2 } });
    const [result] = (await finishedReplay(api, key, front, replayId)).results;

    const turns = result.turns as { diff: string; replay: { reply: string; toolCalls: { name: string; status: string; arguments: unknown }[]; agentId?: string; agentVersion?: number } }[];
    expect(turns.map((turn) => turn.diff)).toEqual(['SAME', 'CHANGED', 'CHANGED', 'CHANGED', 'SAME']);
    expect(turns[1]?.replay.toolCalls).toEqual([expect.objectContaining({ name: 'handoff', status: 'SUCCESS', arguments: { agentId: billing } })]);
    expect(turns[1]?.replay.agentId).toBeUndefined();
    // The billing desk answers at its published version, with the tool its draft has not.
    expect(turns[2]?.replay).toMatchObject({ agentId: billing, agentVersion: 1, toolCalls: [expect.objectContaining({ name: 'get_invoice', status: 'ERROR' })] });
    expect(turns[3]?.replay).toMatchObject({ agentId: billing, agentVersion: 1, toolCalls: [expect.objectContaining({ name: 'handoff', status: 'SUCCESS', arguments: { agentId: front } })] });
    // Handed back, the candidate answers again: it has no invoice tool.
    expect(turns[4]?.replay.agentId).toBeUndefined();
    expect(turns[4]?.replay.toolCalls).toEqual([]);
    expect(tools.requests.length).toBe(before);
    const original = await api.request('GET', `/api/v1/chat/sessions/${sessionId}`, { key });
    expect(original.body.messageCount).toBe(conversation.length * 2);
    expect(original.body.metadata.activeAgentId).toBeUndefined();
    const billingSessions = await api.request('GET', `/v1/chat/chat/sessions?agentId=${billing}`, { key });
    expect(billingSessions.body.pagination.total).toBe(0);
  }, 120_000);
});
