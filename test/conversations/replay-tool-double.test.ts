/**
 * The recorded-result double of a replay (docs/agent-versions.md#replay): arguments match whatever their key order,
 * the same call's recordings are taken in order, and only a GET API tool is ever run live.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ExecutableTool } from '../../shared/agents/tool-schemas.ts';
import { recordedToolDouble } from '../../shared/conversations/replays.ts';
import type { ToolCallContext } from '../../shared/conversations/turn.ts';

const context: ToolCallContext = { toolCallId: 'call_1', sessionId: 'session', agentId: 'agent', sessionVariables: {}, signal: new AbortController().signal };

function tool(name: string, type: ExecutableTool['type'], method: 'GET' | 'POST' = 'GET'): ExecutableTool {
  const base = { id: crypto.randomUUID(), orgId: 'org', name, description: name, type, ajvPropertiesSchema: {}, createdAt: '2026-11-27T00:00:00Z', updatedAt: '2026-11-27T00:00:00Z' };
  return type === 'API_TOOL' ? { ...base, apiTool: { url: 'https://example.com', method, headers: {} } } : { ...base, functionTool: { url: 'https://example.com' } };
}

function liveCounter() {
  const calls: string[] = [];
  return { calls, executeTool: async (called: ExecutableTool) => (calls.push(called.name), { status: 'SUCCESS' as const, result: 'live', durationMs: 1 }) };
}

/** The same object with its keys in another order: each entry sorted by the rank `order` gives it. */
const shuffledKeys = (value: Record<string, unknown>, order: number[]) =>
  Object.fromEntries(Object.entries(value).map((entry, index) => ({ entry, rank: order[index] ?? 0 })).sort((a, b) => a.rank - b.rank).map(({ entry }) => entry));

describe('the recorded-result double', () => {
  it('answers a call from the recording with the same arguments in any key order, and calls nothing', async () => {
    await fc.assert(
      fc.asyncProperty(fc.dictionary(fc.string({ minLength: 1 }), fc.jsonValue(), { minKeys: 1 }), fc.array(fc.nat()), async (args, order) => {
        const live = liveCounter();
        const double = recordedToolDouble(live, [{ name: 'lookup', arguments: args, result: 'recorded', status: 'SUCCESS' }], true);
        const answer = await double(tool('lookup', 'API_TOOL', 'POST'), shuffledKeys(args, order), context);
        expect(answer).toMatchObject({ status: 'SUCCESS', result: 'recorded' });
        expect(live.calls).toEqual([]);
      }),
    );
  });

  it("takes the same call's recordings in order, the last one again once used up", async () => {
    const recorded = ['first', 'second'].map((result) => ({ name: 'lookup', arguments: { id: 'A1' }, result, status: 'SUCCESS' as const }));
    const double = recordedToolDouble(liveCounter(), recorded, false);
    const results = [];
    for (let call = 0; call < 3; call += 1) results.push((await double(tool('lookup', 'API_TOOL'), { id: 'A1' }, context)).result);
    expect(results).toEqual(['first', 'second', 'second']);
  });

  it('runs an unrecorded call live only for a GET API tool when live tools are asked for', async () => {
    const cases = [
      { tool: tool('get_stock', 'API_TOOL', 'GET'), liveTools: true, live: true },
      { tool: tool('get_stock', 'API_TOOL', 'GET'), liveTools: false, live: false },
      { tool: tool('create_refund', 'API_TOOL', 'POST'), liveTools: true, live: false },
      { tool: tool('notify', 'FUNCTION_TOOL'), liveTools: true, live: false },
    ];
    for (const { tool: called, liveTools, live } of cases) {
      const counter = liveCounter();
      const answer = await recordedToolDouble(counter, [], liveTools)(called, { sku: 'S1' }, context);
      expect(counter.calls, called.name).toEqual(live ? [called.name] : []);
      expect(answer.status, called.name).toBe(live ? 'SUCCESS' : 'ERROR');
      if (!live) expect(answer.result).toMatch(/^Not replayed: /);
    }
  });
});
