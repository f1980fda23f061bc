import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { logger } from '../../shared/platform/logger.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { emfProblems } from '../support/emf.ts';
import { eventually } from '../support/eventually.ts';
import { closeServer, listenOnLoopback } from '../support/loopback-server.ts';

/** The EMF documents the API's invocations flushed (at DEBUG locally), in order. */
const flushed: Record<string, unknown>[] = [];
let api: TestApi;
let toolServer: Server;
let toolUrl: string;

beforeAll(async () => {
  vi.spyOn(logger, 'debug').mockImplementation((message: unknown, ...extra: unknown[]) => {
    if (message === 'metrics') flushed.push((extra[0] as { emf: Record<string, unknown> }).emf);
  });
  toolServer = createServer((_request, response) => response.end('{"temperature":21}'));
  toolUrl = `http://127.0.0.1:${await listenOnLoopback(toolServer)}/weather`;
  api = await startApi();
});
afterAll(async () => {
  await api.close();
  await closeServer(toolServer);
  vi.restoreAllMocks();
});

/** Every point of `name` flushed since document `from`. */
const points = (name: string, from: number): number[] => flushed.slice(from).flatMap((document) => (document[name] === undefined ? [] : [document[name] as number].flat()));

describe('the metrics of a chat turn', () => {
  it('are flushed with its request: one turn, its overhead and tokens as its reply states them, its tool calls', async () => {
    const { key } = await api.newOrg();
    const tool = await api.request('POST', '/v1/chat/tools', {
      key,
      body: { name: 'GET_WEATHER', description: 'Weather', type: 'API_TOOL', apiTool: { url: toolUrl, method: 'GET' } },
    });
    const agent = await api.request('POST', '/v2/chat/agents', {
      key,
      body: { fullName: 'Weather', description: 'Weather', role: 'You report weather.', tools: [{ toolId: tool.body.id }] },
    });
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
    const from = flushed.length;
    const sent = await api.request('POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, { key, body: { content: 'GET_WEATHER {}', stream: false } });
    expect(sent.status).toBe(200);
    const reply = sent.body.assistantMessage.metadata;

    await eventually(() => points('Turns', from), (turns) => turns.length > 0);
    for (const document of flushed.slice(from)) expect(emfProblems(document)).toEqual([]);
    expect(points('Turns', from)).toEqual([1]);
    expect(points('TurnsFailed', from)).toEqual([]);
    expect(points('TurnOverhead', from)).toHaveLength(1);
    expect(points('TurnOverhead', from)[0]).toBeCloseTo(reply.timings.platformMs, 1);
    expect(points('InputTokens', from)).toEqual([reply.usage.inputTokens]);
    expect(points('OutputTokens', from)).toEqual([reply.usage.outputTokens]);
    expect(points('ToolCalls', from)).toEqual([1]);
    expect(points('ToolCallsFailed', from)).toEqual([0]);
  });

  it('of a streamed reply are flushed when its stream ends', async () => {
    const { key } = await api.newOrg();
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'Echo', description: 'Echo', role: 'You echo.' } });
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
    const from = flushed.length;
    const sent = await api.request('POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, { key, body: { content: 'Hello!', stream: true } });
    expect(sent.status).toBe(200);
    expect(sent.text).toContain('[DONE]');
    const turns = await eventually(() => points('Turns', from), (found) => found.length > 0);
    expect(turns).toEqual([1]);
    expect(points('TurnOverhead', from)).toHaveLength(1);
    expect(points('ToolCalls', from)).toEqual([]);
  });
});
