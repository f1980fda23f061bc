/**
 * A replay longer than one invocation of the replay function (docs/agent-versions.md#replay): before the
 * invocation's time runs out it queues the rest and returns, so the replay ends without waiting for a redelivery;
 * a session cut off runs again from the next invocation, and one that cannot fit in a whole invocation is recorded
 * FAILED while the others go on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { finishedReplay, sessionsAskingFor, startReplay, startToolServer } from '../support/replays.ts';

/**
 * The replay function's timeout here: 10 s for sessions after the margin it keeps for recording one. The visibility
 * timeout stays the declared 910 s, so a replay that needed its message received again would not end in this test.
 */
const replayTimeoutSeconds = 15;

/** The customer's tool API: `/probe/hold` is not answered the first time, `/probe/never` never (within the tool timeout). */
let tools: Awaited<ReturnType<typeof startToolServer>>;
let api: TestApi;

beforeAll(async () => {
  tools = await startToolServer((path, times) => path === '/probe/never' || (path === '/probe/hold' && times === 1));
  // A tool call may outlast a whole invocation.
  api = await startApi({ TOOL_TIMEOUT_MS: '60000' }, { queues: { timeoutSeconds: { replay: replayTimeoutSeconds } } });
});
afterAll(async () => {
  await api.close();
  await tools.close();
});

async function replayed(key: string, agentId: string, sessionIds: readonly string[]) {
  return finishedReplay(api, key, agentId, await startReplay(api, key, agentId, { sessionIds, candidate: { version: 2 }, liveTools: true }));
}

describe('a replay longer than one invocation', () => {
  it('queues the rest before its time runs out: the session cut off runs again from the next invocation', async () => {
    const { key, agentId, sessionIds } = await sessionsAskingFor(api, tools.base, ['first', 'hold']);

    const replay = await replayed(key, agentId, sessionIds);

    expect(replay).toMatchObject({ status: 'COMPLETED', progress: { sessionsDone: 2, sessionsTotal: 2 }, turnsChanged: 2 });
    expect(replay.results.map((result: { status: string }) => result.status)).toEqual(['COMPLETED', 'COMPLETED']);
    expect(replay.results[1].turns[0].replay.toolCalls).toEqual([expect.objectContaining({ name: 'probe', status: 'SUCCESS', result: expect.stringContaining('/probe/hold') })]);
    // The first session was recorded once; the second ran twice, cut off the first time.
    expect(tools.requestsTo('/probe/first')).toBe(1);
    expect(tools.requestsTo('/probe/hold')).toBe(2);
  }, 120_000);

  it('records a session that does not fit in a whole invocation as FAILED, and replays the others', async () => {
    const { key, agentId, sessionIds } = await sessionsAskingFor(api, tools.base, ['never', 'after']);

    const replay = await replayed(key, agentId, sessionIds);

    expect(replay).toMatchObject({ status: 'COMPLETED', progress: { sessionsDone: 2 }, turnsChanged: 1 });
    expect(replay.results[0]).toMatchObject({ sessionId: sessionIds[0], status: 'FAILED', turns: [], error: expect.stringContaining('did not finish within one invocation') });
    expect(replay.results[1]).toMatchObject({ sessionId: sessionIds[1], status: 'COMPLETED', turnsChanged: 1 });
    expect(tools.requestsTo('/probe/never')).toBe(1);
  }, 120_000);
});
