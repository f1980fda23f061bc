import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalFlatVectorStore } from '../../shared/knowledge/local-flat-index.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { pdfWithoutText, pdfWithText } from '../support/pdf.ts';

let api: TestApi;
const vectorDir = mkdtempSync(join(tmpdir(), 'vectors-'));
/** A customer's web site serving files: URL documents are fetched from it. */
let site: Server;
let siteUrl: string;
const files: Record<string, { type: string; body: Uint8Array }> = {};

const handbookPages = [
  'Employee handbook\nWelcome to the company. This handbook explains how we work together.',
  'Holidays\nEvery employee receives twenty-eight days of paid holiday per calendar year.\nUnused holiday days expire at the end of March.',
  'Expenses\nTravel expenses are reimbursed within ten working days when the receipt is uploaded.',
];

beforeAll(async () => {
  files['/handbook.pdf'] = { type: 'application/pdf', body: await pdfWithText(handbookPages) };
  files['/scan.pdf'] = { type: 'application/pdf', body: await pdfWithoutText(2) };
  files['/broken.pdf'] = { type: 'application/pdf', body: new TextEncoder().encode('%PDF-1.7\nthis is no PDF body at all') };
  site = createServer((request, response) => {
    const file = files[request.url ?? ''];
    response.writeHead(file ? 200 : 404, { 'content-type': file?.type ?? 'text/plain' });
    response.end(file ? Buffer.from(file.body) : 'not found');
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  api = await startApi({ KNOWLEDGE_VECTOR_DIR: vectorDir }, { streamPoller: true, queues: { visibilityTimeoutSeconds: 5 } });
});
afterAll(async () => {
  await new Promise((resolve) => site.close(resolve));
  await api.close();
});

async function newStore(key: string): Promise<any> {
  const created = await api.request('POST', '/v1/chat/knowledge-stores', { key, body: { name: 'Files', config: { chunking: { size: 50, overlap: 0 } } } });
  expect(created.status, created.text).toBe(201);
  return created.body;
}

async function addUrl(key: string, storeId: string, name: string, url: string): Promise<any> {
  const created = await api.request('POST', `/v1/chat/knowledge-stores/${storeId}/documents`, { key, body: { name, url } });
  expect(created.status, created.text).toBe(202);
  return created.body;
}

async function settled(key: string, storeId: string, documentId: string): Promise<any> {
  return eventually(
    async () => (await api.request('GET', `/v1/chat/knowledge-stores/${storeId}/documents/${documentId}`, { key })).body,
    (found) => found?.status !== 'PROCESSING',
  );
}

describe('PDF documents', () => {
  it('reads the text layer page by page: each chunk keeps its page, and the query finds the right one', async () => {
    const { key } = await api.newOrg();
    const store = await newStore(key);
    const submitted = await addUrl(key, store.id, 'Handbook', `${siteUrl}/handbook.pdf`);
    const document = await settled(key, store.id, submitted.id);
    expect(document).toMatchObject({ status: 'UPSERTED', format: 'pdf', bytes: files['/handbook.pdf']!.body.length });
    expect(document.chunkCount).toBeGreaterThanOrEqual(3);

    const answer = await api.request('POST', `/v1/chat/knowledge-stores/${store.id}/query`, { key, body: { query: 'How many days of paid holiday?', topK: 1 } });
    expect(answer.body.data[0]).toMatchObject({ documentId: submitted.id, documentName: 'Handbook' });
    expect(answer.body.data[0].text).toContain('twenty-eight days of paid holiday');

    const pages = new Map<string, number>();
    for await (const vector of new LocalFlatVectorStore(vectorDir).listVectors(`ks-${store.id}`)) pages.set(String(vector.metadata.text), Number(vector.metadata.page));
    expect(pages.size).toBe(document.chunkCount);
    for (const [text, page] of pages) expect(handbookPages[page - 1]!.replace(/\n/g, ' ')).toContain(text.replace(/\s+/g, ' ').slice(0, 30));
    expect([...pages.values()].sort()).toEqual(expect.arrayContaining([1, 2, 3]));
  });

  it('fails a PDF without a text layer with NO_TEXT, and an unreadable one with PARSE_ERROR', async () => {
    const { key } = await api.newOrg();
    const store = await newStore(key);
    const scan = await addUrl(key, store.id, 'Scan', `${siteUrl}/scan.pdf`);
    const broken = await addUrl(key, store.id, 'Broken', `${siteUrl}/broken.pdf`);
    expect(await settled(key, store.id, scan.id)).toMatchObject({ status: 'FAILED', chunkCount: 0, error: { code: 'NO_TEXT', message: expect.stringContaining('2 page(s) but no text layer') } });
    expect(await settled(key, store.id, broken.id)).toMatchObject({ status: 'FAILED', error: { code: 'PARSE_ERROR' } });
  });
});
