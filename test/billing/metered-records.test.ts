import { describe, expect, it } from 'vitest';
import { bucketBounds, bucketOf, meteredRecordOf } from '../../shared/billing/usage.ts';
import fc from 'fast-check';

const pk = 'ORG#org-1#SES#5b8f0c52-2a4e-4a51-8d0a-3c1f6e9f2b11';
const at = '2026-11-25T11:20:30.123Z';

describe('what a stream record counts', () => {
  it('counts user and assistant messages, tokens by model, and tool calls with their errors', () => {
    // Act
    const user = meteredRecordOf({ pk, entity: 'message', seq: 1, role: 'USER', createdAt: at });
    const tool = meteredRecordOf({ pk, entity: 'message', seq: 2, role: 'TOOL', createdAt: at, toolCall: { status: 'ERROR' } });
    const assistant = meteredRecordOf({
      pk,
      entity: 'message',
      seq: 3,
      role: 'ASSISTANT',
      createdAt: at,
      metadata: { model: { id: 'model-a' }, usage: { inputTokens: 12, outputTokens: 7 } },
    });

    // Assess
    expect(user).toEqual({ orgId: 'org-1', sessionId: '5b8f0c52-2a4e-4a51-8d0a-3c1f6e9f2b11', seq: 1, at, counts: { chat_messages: 1 } });
    expect(tool?.counts).toEqual({ tool_calls: 1, tool_errors: 1 });
    expect(assistant?.counts).toEqual({ chat_messages: 1, 'tokens_in:model-a': 12, 'tokens_out:model-a': 7 });
  });

  it('counts a voice session end as its seconds, rounded up, once per session (no sequence number)', () => {
    // Act
    const voice = meteredRecordOf({
      pk,
      entity: 'outbox',
      type: 'session.ended',
      payload: { type: 'VOICE', createdAt: '2026-11-25T11:00:00.000Z', endedAt: '2026-11-25T11:01:30.200Z' },
    });
    const chat = meteredRecordOf({ pk, entity: 'outbox', type: 'session.ended', payload: { type: 'CHAT', createdAt: at, endedAt: at } });

    // Assess
    expect(voice).toEqual({ orgId: 'org-1', sessionId: '5b8f0c52-2a4e-4a51-8d0a-3c1f6e9f2b11', once: 'voice', at: '2026-11-25T11:01:30.200Z', counts: { voice_seconds: 91 } });
    expect(chat).toBeUndefined();
  });

  it("counts a finished replay's turns as replayed turns and two messages each, and its tokens by model, once per replay", () => {
    // Prepare
    const replayId = '0b5e4d3c-2a19-4f8e-9d7c-6b5a4e3d2c1b';
    const data = { replayId, usage: { turns: 3, tokens: [{ modelId: 'model-a', inputTokens: 30, outputTokens: 12 }, { modelId: 'model-b', inputTokens: 5, outputTokens: 2 }] } };

    // Act
    const replay = meteredRecordOf({ pk: 'ORG#org-1#AGENT#9d1e2f3a-4b5c-4d6e-8f70-812a3b4c5d6e', entity: 'outbox', type: 'replay.completed', payload: { createdAt: at, data } });
    const before = meteredRecordOf({ pk: 'ORG#org-1#AGENT#9d1e2f3a-4b5c-4d6e-8f70-812a3b4c5d6e', entity: 'outbox', type: 'replay.completed', payload: { createdAt: at, data: { replayId } } });

    // Assess
    expect(replay).toEqual({
      orgId: 'org-1',
      sessionId: `replay-${replayId}`,
      once: 'replay',
      at,
      counts: { replay_turns: 3, chat_messages: 6, 'tokens_in:model-a': 30, 'tokens_out:model-a': 12, 'tokens_in:model-b': 5, 'tokens_out:model-b': 2 },
    });
    // A replay finished before replays were metered carries no usage: nothing to count.
    expect(before).toBeUndefined();
  });

  it('puts every time in the one bucket whose bounds hold it, at each granularity', () => {
    fc.assert(
      fc.property(fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }), fc.constantFrom('hour', 'day', 'month' as const), (date, granularity) => {
        const { start, end } = bucketBounds(date, granularity);
        expect(start.getTime()).toBeLessThanOrEqual(date.getTime());
        expect(end.getTime()).toBeGreaterThan(date.getTime());
        expect(bucketOf(start.toISOString(), granularity)).toBe(bucketOf(date.toISOString(), granularity));
        expect(bucketOf(end.toISOString(), granularity)).not.toBe(bucketOf(date.toISOString(), granularity));
      }),
    );
  });
});
