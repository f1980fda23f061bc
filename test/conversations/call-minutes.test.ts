import { describe, expect, it } from 'vitest';
import { endSession } from '../../shared/conversations/sessions.ts';
import type { StoredSession } from '../../shared/conversations/ports.ts';

const createdAt = '2026-11-21T12:00:00.000Z';
const endedAt = '2026-11-21T12:01:30.200Z';

/** Ends a session of `type` through a store that records the end unless another process did first. */
async function end(type: 'VOICE' | 'CHAT', recorded = true): Promise<[string, number][]> {
  const points: [string, number][] = [];
  const session = { orgId: 'acme', id: 'ses-1', type, state: 'OPEN', createdAt, updatedAt: createdAt, metadata: {} } as unknown as StoredSession;
  await endSession(
    { sessions: { end: async () => recorded } as never, clock: { now: () => new Date(endedAt) }, metrics: { add: (metric, value) => void points.push([metric.name, value]) } },
    session,
    'CLOSED',
    'HANGUP_CALLEE',
    endedAt,
  );
  return points;
}

describe('call minutes', () => {
  it('are counted once when a call ends, from its start, in the whole seconds usage meters', async () => {
    expect(await end('VOICE')).toEqual([['CallMinutes', 91 / 60]]);
  });

  it('are not counted for a chat, nor by an end another process recorded first', async () => {
    expect(await end('CHAT')).toEqual([]);
    expect(await end('VOICE', false)).toEqual([]);
  });
});
