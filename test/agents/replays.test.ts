/**
 * Replays (issue 29): past sessions' user turns run again through a candidate (a version, or changes over the
 * published one) with the built-in model, tools answered from the original's recorded results, a per-turn diff,
 * and a non-idempotent tool never called live. Another organization's agent, sessions and replays are never found.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { converse, createAgent, createApiTool, finishedReplay } from '../support/replays.ts';
import { closeServer, listenOnLoopback } from '../support/loopback-server.ts';
import { Receiver } from '../support/webhook-receiver.ts';

/** The customer's tool API: counts each request by method and path. */
let toolServer: Server;
let toolBase: string;
const requests: string[] = [];
const requestsTo = (prefix: string) => requests.filter((request) => request.startsWith(prefix)).length;
let api: TestApi;
const receiver = new Receiver();
let receiverUrl: string;

beforeAll(async () => {
  toolServer = createServer((request, response) => {
    requests.push(`${request.method} ${request.url}`);
    request.resume();
    request.on('end', () => {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ path: request.url, served: requests.length }));
    });
  });
  toolBase = `http://127.0.0.1:${await listenOnLoopback(toolServer)}`;
  receiverUrl = await receiver.start();
  api = await startApi({ REPLAY_MAX_SESSIONS: '3', REPLAY_MAX_TURNS: '10' }, { queues: true, streamPoller: true });
});
afterAll(async () => {
  await api.close();
  await closeServer(toolServer);
  await receiver.close();
});

const conversation = [
  'Hello there',
  'Please run get_order with {"id":"A1"}',
  'Thanks a lot',
  'Now run create_refund with {"orderId":"A1"}',
  'And run get_stock with {"sku":"S1"}',
  'Then run get_order with {"id":"B2"}',
  'How are you today',
  'Please run cancel_order with {"id":"A1"}',
  'Again run get_order with {"id":"A1"}',
  'That is everything',
];

describe('replaying a 10-turn conversation', () => {
  let key: string;
  let agentId: string;
  let sessionId: string;
  const tools: Record<string, string> = {};

  beforeAll(async () => {
    ({ key } = await api.newOrg());
    const hook = await api.request('POST', '/v1/chat/webhooks', { key, body: { url: `${receiverUrl}/ok/replays`, events: ['replay.completed'] } });
    expect(hook.status, hook.text).toBe(201);
    receiver.secrets.set('/ok/replays', [hook.body.secret]);
    tools.getOrder = await createApiTool(api, key, 'get_order', 'GET', `${toolBase}/orders`, 'id');
    tools.createRefund = await createApiTool(api, key, 'create_refund', 'POST', `${toolBase}/refunds`, 'orderId');
    tools.getStock = await createApiTool(api, key, 'get_stock', 'GET', `${toolBase}/stock`, 'sku');
    tools.cancelOrder = await createApiTool(api, key, 'cancel_order', 'POST', `${toolBase}/cancellations`, 'id');
    agentId = await createAgent(api, key, { tools: [tools.getOrder, tools.createRefund].map((toolId) => ({ toolId })) });
    sessionId = await converse(api, key, agentId, conversation);
    expect(requestsTo('GET /orders')).toBe(3);
    expect(requestsTo('POST /refunds')).toBe(1);
    // Version 2, a draft: the refund tool detached, the stock tool attached.
    const changed = await api.request('PATCH', `/v2/chat/agents/${agentId}`, { key, body: { tools: [{ toolId: tools.getOrder }, { toolId: tools.getStock }] } });
    expect(changed.body).toMatchObject({ draftVersion: 2, publishedVersion: 1 });
  });

  it('through a version: the changed turns differ, the rest match, recorded results answer the tools and nothing is called', async () => {
    const before = requests.length;
    const started = await api.request('POST', `/v2/chat/agents/${agentId}/replays`, { key, body: { sessionIds: [sessionId], candidate: { version: 2 } } });
    expect(started.status, started.text).toBe(202);
    expect(started.body).toMatchObject({ agentId, status: 'QUEUED', sessionIds: [sessionId], liveTools: false, progress: { sessionsDone: 0, sessionsTotal: 1, turnsTotal: 10 } });

    const replay = await finishedReplay(api, key, agentId, started.body.id);
    expect(replay).toMatchObject({ status: 'COMPLETED', progress: { sessionsDone: 1 } });
    const [result] = replay.results;
    expect(result).toMatchObject({ sessionId, status: 'COMPLETED', turnsChanged: 2 });
    expect(result.turns.map((turn: { diff: string }) => turn.diff)).toEqual(['SAME', 'SAME', 'SAME', 'CHANGED', 'CHANGED', 'SAME', 'SAME', 'SAME', 'SAME', 'SAME']);
    expect(result.turns.map((turn: { user: string }) => turn.user)).toEqual(conversation);

    // The refund tool is gone: the model echoes instead of calling it.
    const refund = result.turns[3];
    expect(refund.original.toolCalls).toEqual([expect.objectContaining({ name: 'create_refund', arguments: { orderId: 'A1' }, status: 'SUCCESS' })]);
    expect(refund.replay.toolCalls).toEqual([]);
    expect(refund.replay.reply).toContain('You said: "Now run create_refund');
    // The stock tool is new: it has no recording, and the replay did not ask for live tools.
    const stock = result.turns[4];
    expect(stock.original.toolCalls).toEqual([]);
    expect(stock.replay.toolCalls).toEqual([expect.objectContaining({ name: 'get_stock', arguments: { sku: 'S1' }, status: 'ERROR', result: expect.stringMatching(/^Not replayed:/) })]);
    // A recorded call is answered with the original's result.
    const order = result.turns[5];
    expect(order.replay).toEqual(order.original);
    expect(order.replay.toolCalls[0].result).toContain('/orders/B2');
    expect(requests.length).toBe(before);
    const [completed] = await eventually(() => receiver.eventsFor('/ok/replays'), (found) => found.length >= 1);
    expect(completed?.body).toMatchObject({ type: 'replay.completed', data: { replayId: started.body.id, agentId, status: 'COMPLETED', sessions: 1, turnsChanged: 2 } });
  });

  it('through inline changes with live tools: a safe tool runs live, a POST tool never does, and recorded ones match', async () => {
    const before = { stock: requestsTo('GET /stock'), posts: requestsTo('POST '), orders: requestsTo('GET /orders') };
    const candidate = { changes: { systemPrompt: 'Be brief.', tools: [tools.getOrder, tools.createRefund, tools.getStock, tools.cancelOrder].map((toolId) => ({ toolId })) } };
    const started = await api.request('POST', `/v2/chat/agents/${agentId}/replays`, { key, body: { sessionIds: [sessionId], candidate, liveTools: true } });
    expect(started.status, started.text).toBe(202);

    const [result] = (await finishedReplay(api, key, agentId, started.body.id)).results;
    expect(result.turns.map((turn: { diff: string }) => turn.diff)).toEqual(['SAME', 'SAME', 'SAME', 'SAME', 'CHANGED', 'SAME', 'SAME', 'CHANGED', 'SAME', 'SAME']);
    expect(result.turns[3].replay).toEqual(result.turns[3].original);
    expect(result.turns[4].replay.toolCalls).toEqual([expect.objectContaining({ name: 'get_stock', status: 'SUCCESS', result: expect.stringContaining('/stock/S1') })]);
    expect(result.turns[7].replay.toolCalls).toEqual([expect.objectContaining({ name: 'cancel_order', status: 'ERROR', result: expect.stringContaining('never called live') })]);
    expect(requestsTo('GET /stock')).toBe(before.stock + 1);
    expect(requestsTo('POST ')).toBe(before.posts);
    expect(requestsTo('GET /orders')).toBe(before.orders);
  });

  it("replays the agent's last closed sessions", async () => {
    const closed = await api.request('PATCH', `/v1/chat/chat/sessions/${sessionId}/close`, { key });
    expect(closed.status, closed.text).toBe(200);
    const started = await api.request('POST', `/v2/chat/agents/${agentId}/replays`, { key, body: { lastClosed: 2, candidate: { version: 1 } } });
    expect(started.status, started.text).toBe(202);
    expect(started.body.sessionIds).toEqual([sessionId]);
    const [result] = (await finishedReplay(api, key, agentId, started.body.id)).results;
    expect(result.turnsChanged).toBe(0);
  });

  it('refuses more sessions or turns than a replay takes, and a version or tool that does not exist', async () => {
    const replays = `/v2/chat/agents/${agentId}/replays`;
    const oneMore = await converse(api, key, agentId, ['Hello again']);
    const tooManyTurns = await api.request('POST', replays, { key, body: { sessionIds: [sessionId, oneMore], candidate: { version: 2 } } });
    expectError(tooManyTurns, 400, 'VALIDATION_ERROR');
    expect(tooManyTurns.body.error.message).toContain('at most 10 (REPLAY_MAX_TURNS)');
    const ids = [sessionId, oneMore, crypto.randomUUID(), crypto.randomUUID()];
    expectError(await api.request('POST', replays, { key, body: { sessionIds: ids, candidate: { version: 2 } } }), 400, 'VALIDATION_ERROR');
    expectError(await api.request('POST', replays, { key, body: { sessionIds: [sessionId], candidate: { version: 9 } } }), 404, 'NOT_FOUND');
    expectError(await api.request('POST', replays, { key, body: { sessionIds: [sessionId], candidate: { changes: { tools: [{ toolId: crypto.randomUUID() }] } } } }), 422, 'TOOLS_NOT_FOUND');
    expectError(await api.request('POST', replays, { key, body: { sessionIds: [sessionId], lastClosed: 1, candidate: { version: 2 } } }), 400, 'VALIDATION_ERROR');
    expectError(await api.request('POST', replays, { key, body: { sessionIds: [sessionId], candidate: { changes: { isActive: false } } } }), 400, 'VALIDATION_ERROR');
  });

  it("never finds another organization's agent, sessions or replays, nor another agent's sessions", async () => {
    const started = await api.request('POST', `/v2/chat/agents/${agentId}/replays`, { key, body: { sessionIds: [sessionId], candidate: { version: 2 } } });
    expect(started.status, started.text).toBe(202);
    const other = await api.newOrg();
    const otherAgent = await createAgent(api, other.key);
    expectError(await api.request('GET', `/v2/chat/agents/${agentId}/replays/${started.body.id}`, { key: other.key }), 404, 'NOT_FOUND');
    expectError(await api.request('GET', `/v2/chat/agents/${otherAgent}/replays/${started.body.id}`, { key: other.key }), 404, 'NOT_FOUND');
    expectError(await api.request('POST', `/v2/chat/agents/${agentId}/replays`, { key: other.key, body: { sessionIds: [sessionId], candidate: { version: 1 } } }), 404, 'NOT_FOUND');
    expectError(await api.request('POST', `/v2/chat/agents/${otherAgent}/replays`, { key: other.key, body: { sessionIds: [sessionId], candidate: { version: 1 } } }), 404, 'NOT_FOUND');
    const sibling = await createAgent(api, key);
    expectError(await api.request('POST', `/v2/chat/agents/${sibling}/replays`, { key, body: { sessionIds: [sessionId], candidate: { version: 1 } } }), 404, 'NOT_FOUND');
    await finishedReplay(api, key, agentId, started.body.id);
  });
});

describe('replaying a 10-turn conversation through a changed prompt', () => {
  const rules = {
    before: 'If the user asks about refunds, say "Refunds take 5 days." If the user mentions delivery, say "Delivery takes a week."',
    after: 'If the user asks about refunds or returns, say "Refunds take 3 days." If the user mentions delivery, say "Delivery takes a week."',
  };
  const talk = [
    'Hello there',
    'How long does a refund take?',
    'Please run create_refund with {"orderId":"A1"}',
    'And when is the delivery?',
    'Can I make a return?',
    'Please run get_order with {"id":"A1"}',
    'What about refunds for gifts?',
    'Thanks for the delivery news',
    'How are you today',
    'That is everything',
  ];

  it('changes exactly the turns the changed rules answer, and calls no tool live', async () => {
    const { key } = await api.newOrg();
    const toolIds = [await createApiTool(api, key, 'create_refund', 'POST', `${toolBase}/prompt-refunds`, 'orderId'), await createApiTool(api, key, 'get_order', 'GET', `${toolBase}/prompt-orders`, 'id')];
    const agentId = await createAgent(api, key, { systemPrompt: rules.before, tools: toolIds.map((toolId) => ({ toolId })) });
    const sessionId = await converse(api, key, agentId, talk);
    const changed = await api.request('PATCH', `/v2/chat/agents/${agentId}`, { key, body: { systemPrompt: rules.after } });
    expect(changed.body).toMatchObject({ draftVersion: 2, publishedVersion: 1 });
    const before = requests.length;

    const started = await api.request('POST', `/v2/chat/agents/${agentId}/replays`, { key, body: { sessionIds: [sessionId], candidate: { version: 2 }, liveTools: true } });
    expect(started.status, started.text).toBe(202);
    const [result] = (await finishedReplay(api, key, agentId, started.body.id)).results;

    const replies = (side: 'original' | 'replay') => result.turns.map((turn: { original: { reply: string }; replay: { reply: string } }) => turn[side].reply);
    expect(result.turns.map((turn: { diff: string }) => turn.diff)).toEqual(['SAME', 'CHANGED', 'SAME', 'SAME', 'CHANGED', 'SAME', 'CHANGED', 'SAME', 'SAME', 'SAME']);
    expect(result.turnsChanged).toBe(3);
    expect(replies('original')[1]).toBe('Refunds take 5 days.');
    expect(replies('replay')[1]).toBe('Refunds take 3 days.');
    expect(replies('original')[4]).toContain('You said: "Can I make a return?"');
    expect(replies('replay')[4]).toBe('Refunds take 3 days.');
    expect(replies('replay')[3]).toBe('Delivery takes a week.');
    expect(result.turns[2].replay.toolCalls).toEqual([expect.objectContaining({ name: 'create_refund', status: 'SUCCESS' })]);
    expect(result.turns[2].replay).toEqual(result.turns[2].original);
    expect(requests.length).toBe(before);
  });
});
