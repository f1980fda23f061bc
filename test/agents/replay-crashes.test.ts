/**
 * A replay whose invocation dies (docs/agent-versions.md#replay): the queue hands its message over again after the
 * visibility timeout, and the replay goes on after the last session it recorded. The session during which the
 * invocation died is tried once more; one during which two invocations died is recorded FAILED and the others go on.
 * Either way the replay ends, with one `replay.completed`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { finishedReplay, sessionsAskingFor, startReplay, startToolServer, storedAgentItems } from '../support/replays.ts';

/**
 * Every queue's visibility timeout here, instead of the replay queue's 910 s: how long after a crash its message
 * comes back. It must outlast the time from the message's receipt to the crash on a busy machine.
 */
const visibilityTimeoutSeconds = 20;

/** The customer's tool API: `/probe/hold` is not answered the first time, `/probe/twice` the first two times. */
let tools: Awaited<ReturnType<typeof startToolServer>>;
let api: TestApi;

beforeAll(async () => {
  tools = await startToolServer((path, times) => (path === '/probe/hold' && times === 1) || (path === '/probe/twice' && times <= 2));
  // A held tool call must outlast the wait for it: the replay's invocation is killed while it waits.
  api = await startApi({ TOOL_TIMEOUT_MS: '60000' }, { queues: { visibilityTimeoutSeconds } });
});
afterAll(async () => {
  await api.close();
  await tools.close();
});

/** Kills the replay function once the tool has had `times` requests at `path`, the last of them held. */
async function crashOnRequest(path: string, times: number): Promise<void> {
  expect(await eventually(() => tools.requestsTo(path), (count) => count >= times, 120_000)).toBe(times);
  await api.queues!.crash('replay');
}

async function replayCompletedEvents(orgId: string, agentId: string, replayId: string) {
  const outbox = await storedAgentItems(orgId, agentId, 'OUTBOX#');
  return outbox.filter((item) => item.type === 'replay.completed' && item.payload.data.replayId === replayId).map((item) => item.payload.data);
}

describe('a replay whose invocation dies', () => {
  it('goes on after the last session it recorded when the queue hands the message over again, and sends one replay.completed', async () => {
    const { orgId, key, agentId, sessionIds } = await sessionsAskingFor(api, tools.base, ['first', 'hold']);
    const replayId = await startReplay(api, key, agentId, { sessionIds, candidate: { version: 2 }, liveTools: true });

    await crashOnRequest('/probe/hold', 1);
    const partial = await api.request('GET', `/v2/chat/agents/${agentId}/replays/${replayId}`, { key });
    const replay = await finishedReplay(api, key, agentId, replayId);

    expect(partial.body).toMatchObject({ status: 'RUNNING', progress: { sessionsDone: 1, sessionsTotal: 2 }, turnsChanged: 1 });
    expect(partial.body.results).toEqual([expect.objectContaining({ sessionId: sessionIds[0], status: 'COMPLETED', turnsChanged: 1 })]);
    expect(replay).toMatchObject({ status: 'COMPLETED', progress: { sessionsDone: 2 }, turnsChanged: 2 });
    expect(replay.results.map((result: { sessionId: string }) => result.sessionId)).toEqual(sessionIds);
    expect(replay.results[1].turns[0].replay.toolCalls).toEqual([expect.objectContaining({ name: 'probe', status: 'SUCCESS', result: expect.stringContaining('/probe/hold') })]);
    // The first session was not replayed again; the second was, after the killed attempt.
    expect(tools.requestsTo('/probe/first')).toBe(1);
    expect(tools.requestsTo('/probe/hold')).toBe(2);
    // The usage metered counts the session the first invocation recorded as well as the one the next ran.
    expect(await replayCompletedEvents(orgId, agentId, replayId)).toEqual([expect.objectContaining({ status: 'COMPLETED', sessions: 2, turnsChanged: 2, usage: expect.objectContaining({ turns: 2 }) })]);
  }, 240_000);

  it('records FAILED a session during which it died twice, replays the sessions after it, and completes', async () => {
    const { orgId, key, agentId, sessionIds } = await sessionsAskingFor(api, tools.base, ['first', 'twice', 'after']);
    const replayId = await startReplay(api, key, agentId, { sessionIds, candidate: { version: 2 }, liveTools: true });

    await crashOnRequest('/probe/twice', 1);
    await crashOnRequest('/probe/twice', 2);
    const partial = await api.request('GET', `/v2/chat/agents/${agentId}/replays/${replayId}`, { key });
    const replay = await finishedReplay(api, key, agentId, replayId);

    expect(partial.body).toMatchObject({ status: 'RUNNING', progress: { sessionsDone: 1, sessionsTotal: 3 } });
    expect(partial.body).not.toHaveProperty('stoppedIn');
    expect(replay).toMatchObject({ status: 'COMPLETED', progress: { sessionsDone: 3, sessionsTotal: 3 }, turnsChanged: 2 });
    expect(replay.results).toEqual([
      expect.objectContaining({ sessionId: sessionIds[0], status: 'COMPLETED', turnsChanged: 1 }),
      { sessionId: sessionIds[1], status: 'FAILED', turnsChanged: 0, turns: [], error: expect.stringMatching(/stopped twice while replaying this session/) },
      expect.objectContaining({ sessionId: sessionIds[2], status: 'COMPLETED', turnsChanged: 1 }),
    ]);
    // Not a third try of the session that killed two invocations.
    expect(tools.requestsTo('/probe/twice')).toBe(2);
    expect(tools.requestsTo('/probe/after')).toBe(1);
    expect(await replayCompletedEvents(orgId, agentId, replayId)).toEqual([expect.objectContaining({ status: 'COMPLETED', sessions: 3, turnsChanged: 2 })]);
  }, 240_000);
});
