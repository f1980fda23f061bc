import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { SseClient } from '../support/sse-client.ts';

// Its own file: the limit applies to every stream of the process.
let api: TestApi;
beforeAll(async () => {
  api = await startApi({ EVENT_STREAM_POLL_MS: '50', EVENT_STREAM_MAX_SECONDS: '1' });
});
afterAll(() => api.close());

describe('GET /v1/chat/events/stream, at its time limit', () => {
  it('ends by itself with a cursor to reconnect from', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const openedAt = Date.now();

    // Act
    const client = await SseClient.open(`${api.baseUrl}/v1/chat/events/stream`, { 'x-api-key': key });
    await client.ended;

    // Assess
    const lastedMs = Date.now() - openedAt;
    expect(lastedMs).toBeGreaterThanOrEqual(1000);
    // Not forever: the stream ends by itself, however busy the machine makes it late.
    expect(lastedMs).toBeLessThan(30_000);
    expect(client.blocks.at(-1)).toEqual({
      comments: ['this stream has reached its time limit; reconnect with Last-Event-ID'],
      id: expect.stringMatching(/^\d{13}$/),
    });
  });
});
