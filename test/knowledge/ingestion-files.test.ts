import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalFlatVectorStore } from '../../shared/knowledge/local-flat-index.ts';
import { maxPdfPages } from '../../shared/knowledge/knowledge-schemas.ts';
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
  files['/many-pages.pdf'] = { type: 'application/pdf', body: await pdfWithText(Array.from({ length: maxPdfPages + 1 }, (_, page) => `p${page + 1}`)) };
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

/** The first document of a run also starts the ingestion function's execution environment (and loads PDF.js): slow on a busy machine. */
const settleTimeoutMs = 90_000;

async function settled(key: string, storeId: string, documentId: string): Promise<any> {
  return eventually(
    async () => (await api.request('GET', `/v1/chat/knowledge-stores/${storeId}/documents/${documentId}`, { key })).body,
    (found) => found?.status !== 'PROCESSING',
    settleTimeoutMs,
  );
}

describe('PDF documents', { timeout: 120_000 }, () => {
  it('reads the text layer page by page: each chunk keeps its page, and the query finds the right one', async () => {
    const { key } = await api.newOrg();
    const store = await newStore(key);
    const submitted = await addUrl(key, store.id, 'Handbook', `${siteUrl}/handbook.pdf`);
    const document = await settled(key, store.id, submitted.id);
    expect(document).toMatchObject({ status: 'UPSERTED', format: 'pdf', bytes: files['/handbook.pdf']!.body.length });
    expect(document.chunkCount).toBeGreaterThanOrEqual(3);

    const answer = await api.request('POST', `/v1/chat/knowledge-stores/${store.id}/query`, { key, body: { query: 'How many days of paid holiday?', topK: 1 } });
    const holidayPage = handbookPages.findIndex((text) => text.includes('twenty-eight days of paid holiday')) + 1;
    expect(answer.body.data[0]).toMatchObject({ documentId: submitted.id, documentName: 'Handbook', page: holidayPage });
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

  it('fails a PDF of more pages than are read with TOO_LARGE, from its page count, without reading its text', async () => {
    const { key } = await api.newOrg();
    const store = await newStore(key);
    const submitted = await addUrl(key, store.id, 'Many tiny pages', `${siteUrl}/many-pages.pdf`);
    const document = await settled(key, store.id, submitted.id);
    expect(document).toMatchObject({ status: 'FAILED', chunkCount: 0, error: { code: 'TOO_LARGE', message: `The PDF has ${maxPdfPages + 1} pages; at most ${maxPdfPages} are read: split it into smaller files.` } });
    // Refused at once, not after a read of every page (or the function's timeout, again and again): generous under load.
    expect(Date.parse(document.updatedAt) - Date.parse(document.createdAt)).toBeLessThan(45_000);
  });
});

/** Sends a presigned POST as a browser form would: the fields, then the file last. */
async function postForm(upload: { url: string; fields: Record<string, string> }, file: Uint8Array, changes: Record<string, string> = {}): Promise<Response> {
  const form = new FormData();
  for (const [name, value] of Object.entries({ ...upload.fields, ...changes })) form.append(name, value);
  form.append('file', new Blob([Buffer.from(file)]), 'file.pdf');
  return fetch(upload.url, { method: 'POST', body: form });
}

async function requestUpload(key: string, storeId: string, body: Record<string, unknown>): Promise<any> {
  const created = await api.request('POST', `/v1/chat/knowledge-stores/${storeId}/documents/uploads`, { key, body });
  expect(created.status, created.text).toBe(201);
  return created.body;
}

describe('document uploads (presigned S3 POST → Object Created → FIFO ingestion queue)', { timeout: 120_000 }, () => {
  it('ingests a PDF posted to the presigned URL; the document is PROCESSING until the file has arrived', async () => {
    const { orgId, key } = await api.newOrg();
    const store = await newStore(key);
    const answer = await requestUpload(key, store.id, { name: 'Handbook', format: 'pdf' });
    expect(answer).toMatchObject({
      documentId: answer.document.id,
      document: { name: 'Handbook', format: 'pdf', status: 'PROCESSING', version: 1 },
      upload: { url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/knowledge-uploads$/), maxBytes: 50 * 1024 * 1024 },
    });
    const objectKey = `uploads/${orgId}/${store.id}/${answer.documentId}/v1`;
    expect(answer.upload.fields).toMatchObject({ key: objectKey, 'Content-Type': 'application/pdf' });
    expect(Date.parse(answer.upload.expiresAt) - Date.now()).toBeGreaterThan(14 * 60_000);

    const posted = await postForm(answer.upload, files['/handbook.pdf']!.body);
    expect(posted.status, await posted.text()).toBe(204);
    const document = await settled(key, store.id, answer.documentId);
    expect(document).toMatchObject({ status: 'UPSERTED', format: 'pdf', bytes: files['/handbook.pdf']!.body.length });
    const found = await api.request('POST', `/v1/chat/knowledge-stores/${store.id}/query`, { key, body: { query: 'When are travel expenses reimbursed?', topK: 1 } });
    expect(found.body.data[0].text).toContain('reimbursed within ten working days');
    // The file is not kept once its version is built.
    const s3 = new S3Client({ endpoint: process.env.S3_ENDPOINT, forcePathStyle: true, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    await expect(s3.send(new HeadObjectCommand({ Bucket: process.env.KNOWLEDGE_UPLOAD_BUCKET, Key: objectKey }))).rejects.toMatchObject({ name: 'NotFound' });
    s3.destroy();
  });

  it('refuses what S3 refuses: a tampered key, another content type, an extra field, a bad signature; none is ingested', async () => {
    const { key } = await api.newOrg();
    const store = await newStore(key);
    const answer = await requestUpload(key, store.id, { name: 'Guarded', format: 'pdf' });
    const pdf = files['/handbook.pdf']!.body;
    const attempts: [Record<string, string>, number, string][] = [
      [{ key: `uploads/elsewhere/${answer.documentId}` }, 403, 'AccessDenied'],
      [{ 'Content-Type': 'text/html' }, 403, 'AccessDenied'],
      [{ acl: 'public-read' }, 403, 'AccessDenied'],
      [{ 'X-Amz-Signature': '0'.repeat(64) }, 403, 'SignatureDoesNotMatch'],
    ];
    for (const [changes, status, code] of attempts) {
      const refused = await postForm(answer.upload, pdf, changes);
      const text = await refused.text();
      expect(refused.status, text).toBe(status);
      expect(text).toContain(`<Code>${code}</Code>`);
    }
    const empty = await postForm(answer.upload, new Uint8Array());
    expect(await empty.text()).toContain('<Code>EntityTooSmall</Code>');
    // Still waiting for its file: nothing arrived.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await api.request('GET', `/v1/chat/knowledge-stores/${store.id}/documents/${answer.documentId}`, { key })).body).toMatchObject({ status: 'PROCESSING', chunkCount: 0 });
  });

  it('answers a file over 50 MiB as S3 does, 400 EntityTooLarge with its sizes, instead of dropping the connection', async () => {
    // Prepare: 51 MiB, past what the gateway keeps (50 MiB and the form's fields); the probe got no answer at all.
    const { key } = await api.newOrg();
    const store = await newStore(key);
    const answer = await requestUpload(key, store.id, { name: 'Huge', format: 'pdf' });
    const huge = new Uint8Array(51 * 1024 * 1024);

    // Act
    const tooLarge = await postForm(answer.upload, huge);
    const tooLargeText = await tooLarge.text();
    const tampered = await postForm(answer.upload, huge, { key: `uploads/elsewhere/${answer.documentId}` });
    const tamperedText = await tampered.text();
    const empty = await postForm(answer.upload, new Uint8Array());

    // Assess
    expect(tooLarge.status, tooLargeText).toBe(400);
    expect(tooLarge.headers.get('content-type')).toBe('application/xml');
    expect(tooLargeText).toMatch(
      /^<\?xml version="1\.0" encoding="UTF-8"\?>\n<Error><Code>EntityTooLarge<\/Code><Message>Your proposed upload exceeds the maximum allowed size<\/Message><ProposedSize>53477376<\/ProposedSize><MaxSizeAllowed>52428800<\/MaxSizeAllowed><RequestId>[^<]+<\/RequestId><\/Error>$/,
    );
    // The fields before the file are still checked: a tampered key is refused as on a small file.
    expect(tampered.status, tamperedText).toBe(403);
    expect(tamperedText).toContain('<Code>AccessDenied</Code>');
    expect(await empty.text()).toContain('<Code>EntityTooSmall</Code><Message>Your proposed upload is smaller than the minimum allowed size</Message><ProposedSize>0</ProposedSize><MinSizeAllowed>1</MinSizeAllowed>');
    expect((await api.request('GET', `/v1/chat/knowledge-stores/${store.id}/documents/${answer.documentId}`, { key })).body).toMatchObject({ status: 'PROCESSING', chunkCount: 0 });
  });

  it('answers 404 for another organization\'s store and 400 for an unknown format', async () => {
    const { key } = await api.newOrg();
    const other = await api.newOrg();
    const store = await newStore(key);
    const foreign = await api.request('POST', `/v1/chat/knowledge-stores/${store.id}/documents/uploads`, { key: other.key, body: { name: 'x', format: 'pdf' } });
    expect(foreign.status).toBe(404);
    const unknown = await api.request('POST', `/v1/chat/knowledge-stores/${store.id}/documents/uploads`, { key, body: { name: 'x', format: 'docx' } });
    expect(unknown.status).toBe(400);
  });
});

describe('redelivery', () => {
  it('keeps a version answering when two deliveries of its message run at once (a visibility timeout ran out mid-way)', async () => {
    const { orgId, key } = await api.newOrg();
    const store = await newStore(key);
    const [{ knowledgeUploadsRuntime }, { handleIngestionMessage }] = await Promise.all([import('../../shared/knowledge/knowledge-uploads-runtime.ts'), import('../../shared/knowledge/knowledge-ingestion.ts')]);
    const deps = knowledgeUploadsRuntime();
    const text = handbookPages.join('\n\n');
    // Submitted without a queue message: this test delivers it itself, twice at once.
    const document = await deps.knowledge.submitDocument({ orgId, storeId: store.id, newId: crypto.randomUUID(), name: 'Twice', format: 'text', bytes: text.length, at: new Date().toISOString() });
    const message = { kind: 'document.ingest' as const, orgId, storeId: store.id, documentId: document.id, version: document.version, text };
    const outcomes = await Promise.all([handleIngestionMessage(deps, message), handleIngestionMessage(deps, message)]);
    expect(outcomes).toContain('upserted');
    expect((await api.request('GET', `/v1/chat/knowledge-stores/${store.id}/documents/${document.id}`, { key })).body).toMatchObject({ status: 'UPSERTED', activeVersion: 1 });
    const found = await api.request('POST', `/v1/chat/knowledge-stores/${store.id}/query`, { key, body: { query: 'How many days of paid holiday?', topK: 1 } });
    expect(found.body.data[0]?.text).toContain('twenty-eight days of paid holiday');
  });
});

describe('the sweeper', () => {
  it('fails documents still PROCESSING past their deadline with TIMEOUT, with their event, and leaves the others', async () => {
    const { orgId, key } = await api.newOrg();
    const store = await newStore(key);
    const [{ knowledgeRuntime }, { handler: sweep }] = await Promise.all([import('../../shared/knowledge/knowledge-runtime.ts'), import('../../functions/knowledge-sweeper/handler.ts')]);
    const deps = knowledgeRuntime();
    // Documents whose ingestion never comes (no queue message): one overdue, one not yet.
    const at = new Date().toISOString();
    const submit = (name: string, deadlineMs: number) =>
      deps.knowledge.submitDocument({ orgId, storeId: store.id, newId: crypto.randomUUID(), name, format: 'text', bytes: 4, at, processingDeadline: new Date(Date.now() + deadlineMs).toISOString() });
    const stuck = await submit('Stuck', -1_000);
    const waiting = await submit('Waiting', 600_000);

    const { timedOut } = await sweep();
    expect(timedOut).toBeGreaterThanOrEqual(1);
    const read = async (id: string) => (await api.request('GET', `/v1/chat/knowledge-stores/${store.id}/documents/${id}`, { key })).body;
    expect(await read(stuck.id)).toMatchObject({ status: 'FAILED', chunkCount: 0, error: { code: 'TIMEOUT', message: expect.stringContaining('submit the document again') } });
    expect(await read(waiting.id)).toMatchObject({ status: 'PROCESSING' });
    // Its event was written with the state change.
    const outbox = await deps.documentClient.send(
      new QueryCommand({
        TableName: deps.config.TABLE_NAME,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :outbox)',
        ExpressionAttributeValues: { ':pk': `ORG#${orgId}#KS#${store.id}`, ':outbox': 'OUTBOX#' },
      }),
    );
    expect(outbox.Items?.map((item) => item.payload.data)).toEqual([{ knowledgeStoreId: store.id, documentId: stuck.id, status: 'FAILED' }]);
    // A second sweep finds nothing more of this store to fail.
    await sweep();
    expect(await read(waiting.id)).toMatchObject({ status: 'PROCESSING' });
  });
});
