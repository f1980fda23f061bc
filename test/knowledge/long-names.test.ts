import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startApi({ KNOWLEDGE_VECTOR_DIR: mkdtempSync(join(tmpdir(), 'vectors-')) }, { queues: true });
});
afterAll(() => api.close());

/** 4 bytes each in UTF-8: 255 of them are 1,020 bytes, more than a sort key holds beside its prefix. */
const emojiName = (count: number) => '😀'.repeat(count);

describe('names of many multi-byte characters (a name never overflows a DynamoDB key)', { timeout: 120_000 }, () => {
  it('takes a document named with 255 emoji, and the same name again is a new version of it', async () => {
    const { key } = await api.newOrg();
    const store = await api.request('POST', '/v1/chat/knowledge-stores', { key, body: { name: 'Emoji' } });
    expect(store.status, store.text).toBe(201);
    const name = emojiName(255);

    const first = await api.request('POST', `/v1/chat/knowledge-stores/${store.body.id}/documents`, { key, body: { name, text: 'First text.' } });
    expect(first.status, first.text).toBe(202);
    expect(first.body).toMatchObject({ name, version: 1 });
    const again = await api.request('POST', `/v1/chat/knowledge-stores/${store.body.id}/documents`, { key, body: { name, text: 'Second text.' } });
    expect(again.status, again.text).toBe(202);
    expect(again.body).toMatchObject({ id: first.body.id, name, version: 2 });

    const upload = await api.request('POST', `/v1/chat/knowledge-stores/${store.body.id}/documents/uploads`, { key, body: { name: emojiName(300), format: 'pdf' } });
    expect(upload.status, upload.text).toBe(201);

    expect((await api.request('DELETE', `/v1/chat/knowledge-stores/${store.body.id}/documents/${first.body.id}`, { key })).status).toBe(204);
    const reused = await api.request('POST', `/v1/chat/knowledge-stores/${store.body.id}/documents`, { key, body: { name, text: 'Third text.' } });
    expect(reused.status, reused.text).toBe(202);
    expect(reused.body.id).not.toBe(first.body.id);
  });

  it('answers 201/202 or a 400, never a 500, to long multi-byte names on every create route that takes one', async () => {
    const { key } = await api.newOrg();
    const store = await api.request('POST', '/v1/chat/knowledge-stores', { key, body: { name: 'Fuzz' } });
    expect(store.status, store.text).toBe(201);
    let numberSeq = 0;
    const routes: { path: string; body: (name: string) => Record<string, unknown> }[] = [
      { path: `/v1/chat/knowledge-stores/${store.body.id}/documents`, body: (name) => ({ name, text: 'Some text.' }) },
      { path: `/v1/chat/knowledge-stores/${store.body.id}/documents/uploads`, body: (name) => ({ name, format: 'markdown' }) },
      { path: '/v1/chat/knowledge-stores', body: (name) => ({ name, description: name }) },
      { path: '/v2/chat/agents', body: (name) => ({ fullName: name, description: name, role: 'You help.' }) },
      { path: '/v1/chat/contacts', body: (name) => ({ name, phoneNumber: `+1415${String(6_000_000 + (numberSeq += 1)).padStart(7, '0')}` }) },
      { path: '/v1/chat/api-keys', body: (name) => ({ name, scopes: ['agents:read'] }) },
    ];
    // Mostly 4-byte characters (a limit of 300 counts code points: up to 1,200 bytes) and one that lower-cases to
    // two code points; lengths around the limits of 200 and 300 characters.
    const wide = fc.string({ unit: fc.constantFrom('😀', '🦄', '𝒜', '🚀', 'İ'), minLength: 190, maxLength: 310 });
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...routes), wide, async (route, name) => {
        const response = await api.request('POST', route.path, { key, body: route.body(name) });
        expect([200, 201, 202, 400], `${route.path}: ${response.text}`).toContain(response.status);
        if (response.status === 400) expect(response.body.error.code).toBe('VALIDATION_ERROR');
      }),
      { numRuns: 40, endOnFailure: true },
    );
  });
});
