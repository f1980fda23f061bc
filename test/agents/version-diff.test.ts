/** The diff between two versions' configurations (`GET /v2/chat/agents/{id}/versions/{n}/diff`), on any JSON. */
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { diffValues } from '../../shared/agents/agent-versions.ts';

/** JSON values as a configuration stores them (through JSON, so no -0 or undefined). */
const json = fc.json({ maxDepth: 3 }).map((text) => JSON.parse(text) as unknown);

describe('the diff of two configurations', () => {
  it('is empty exactly when the two are equal', () => {
    fc.assert(
      fc.property(json, json, (before, after) => {
        expect(diffValues(before, after, '').length === 0).toBe(isDeepStrictEqual(before, after));
        expect(diffValues(before, before, '')).toEqual([]);
      }),
    );
  });

  it('reports the same paths both ways, with before and after swapped', () => {
    fc.assert(
      fc.property(json, json, (before, after) => {
        const swapped = diffValues(after, before, '').map(({ path, before: was, after: is }) => ({ path, ...(is === undefined ? {} : { before: is }), ...(was === undefined ? {} : { after: was }) }));
        expect(swapped).toEqual(diffValues(before, after, ''));
      }),
    );
  });

  it('names nested fields and array items by path, leaving out an absent side', () => {
    const before = { voice: { voiceId: 'en-us' }, tools: [{ toolId: 'a' }], systemPrompt: 'Be brief.' };
    const after = { voice: { voiceId: 'en-gb' }, tools: [{ toolId: 'a', toolDescription: 'Orders' }] };
    expect(diffValues(before, after, '')).toEqual([
      { path: 'systemPrompt', before: 'Be brief.' },
      { path: 'tools[0].toolDescription', after: 'Orders' },
      { path: 'voice.voiceId', before: 'en-us', after: 'en-gb' },
    ]);
  });
});
