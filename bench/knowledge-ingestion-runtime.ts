/**
 * Document ingestion end to end on the local runtime, in a child process on the database the parent names: the API,
 * the SQS emulator with the upload router and the ingestion function in their execution environments, and the
 * upload gateway, as `npm start` runs them. A small Markdown document posted as JSON, timed from the POST to the GET
 * that first shows it UPSERTED; a 100-page PDF uploaded with its presigned POST, timed the same way. Each beside
 * its floor: the same work in this process without the API, the queues or the polling (`handleIngestionMessage`),
 * and the PDF's text extraction alone. Reports its figures and exits.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { queueConsumers, tableStreamConsumers } from '../functions/consumers.ts';
import { routeGroups } from '../functions/route-groups.ts';
import { useLocalDatabase } from '../infra/local/environment.ts';
import { startQueuePollers } from '../infra/local/queue-poller.ts';
import { startLocalQueues } from '../infra/local/queues.ts';
import { startLocalUploads } from '../infra/local/s3-upload-gateway.ts';
import { createLocalServer } from '../infra/local/server.ts';
import { benchOrganization } from './bench-api.ts';
import { handleIngestionMessage } from '../shared/knowledge/knowledge-ingestion.ts';
import { knowledgeUploadsRuntime } from '../shared/knowledge/knowledge-uploads-runtime.ts';
import { pdfPageTexts } from '../shared/knowledge/pdf-text.ts';
import { pdfWithText } from '../test/support/pdf.ts';
import { percentiles, type Percentiles } from './turns.ts';

export interface KnowledgeIngestionBenchResult {
  /** POST of a ~1 KB Markdown document → the first GET that shows it UPSERTED. */
  smallDocumentMs: Percentiles & { documents: number };
  /** The same document ingested in-process: chunk, embed, write vectors, one transaction (no API, queue or polling). */
  floorSmallDocumentMs: Percentiles & { documents: number };
  /** Upload request → presigned POST → Object Created → router → FIFO queue → ingestion → UPSERTED seen by a GET. */
  pdf: { pages: number; bytes: number; chunks: number; endToEndMs: number; floorExtractMs: number };
}

const pollEveryMs = 10;
const smallDocuments = 20;
const pdfPages = 100;

const vectorDir = mkdtempSync(join(tmpdir(), 'bench-vectors-'));
process.env.KNOWLEDGE_VECTOR_DIR = vectorDir;
useLocalDatabase({ endpoint: process.env.BENCH_DYNAMODB_ENDPOINT as string, tableName: process.env.TABLE_NAME as string });
const consumers = queueConsumers.filter((consumer) => consumer.name.startsWith('knowledge-'));
const queues = await startLocalQueues({ consumers, rules: [], streamConsumers: tableStreamConsumers });
const uploads = await startLocalUploads(queues);
const { server, preload } = createLocalServer(routeGroups);
await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
const baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
await preload();
const pollers = startQueuePollers({ queues, consumers });

const deps = knowledgeUploadsRuntime();
const { orgId, call } = await benchOrganization(deps, baseUrl);
const upserted = async (storeId: string, documentId: string): Promise<Record<string, any>> => {
  for (;;) {
    const document = await call('GET', `/v1/chat/knowledge-stores/${storeId}/documents/${documentId}`);
    if (document.status === 'UPSERTED') return document;
    if (document.status === 'FAILED') throw new Error(`document ${documentId} failed: ${JSON.stringify(document.error)}`);
    await new Promise((resolve) => setTimeout(resolve, pollEveryMs));
  }
};

const smallText = (index: number) =>
  `# Returns, note ${index}\n\n## Deadlines\nItems may be returned within 30 days of delivery. Refunds reach the original payment method within five working days.\n\n## Exceptions\nGift cards, perishable goods and personalised items cannot be returned. Damaged items are replaced free of charge when reported within 48 hours.\n`.repeat(3);

const store = await call('POST', '/v1/chat/knowledge-stores', { name: 'bench ingestion' });
// One document first, so that both functions' execution environments are started before anything is timed.
await upserted(store.id, (await call('POST', `/v1/chat/knowledge-stores/${store.id}/documents`, { name: 'warm-up', text: smallText(0) })).id);
const endToEnd: number[] = [];
for (let index = 1; index <= smallDocuments; index += 1) {
  const started = performance.now();
  const document = await call('POST', `/v1/chat/knowledge-stores/${store.id}/documents`, { name: `note ${index}`, text: smallText(index) });
  await upserted(store.id, document.id);
  endToEnd.push(performance.now() - started);
}

const floorStore = await call('POST', '/v1/chat/knowledge-stores', { name: 'bench ingestion floor' });
const floor: number[] = [];
for (let index = 0; index <= smallDocuments; index += 1) {
  const at = new Date().toISOString();
  const text = smallText(index);
  const document = await deps.knowledge.submitDocument({ orgId, storeId: floorStore.id, newId: crypto.randomUUID(), name: `note ${index}`, format: 'markdown', bytes: Buffer.byteLength(text), at });
  const started = performance.now();
  await handleIngestionMessage(deps, { kind: 'document.ingest', orgId, storeId: floorStore.id, documentId: document.id, version: document.version, text });
  if (index > 0) floor.push(performance.now() - started);
}

const pages = Array.from({ length: pdfPages }, (_, page) =>
  Array.from({ length: 40 }, (_, line) => `Page ${page + 1}, line ${line + 1}: the warranty covers parts and labour for ${page + 2} years in region ${line % 7}.`).join('\n'),
);
const pdf = await pdfWithText(pages);
const extractStarted = performance.now();
await pdfPageTexts(pdf, { maxPages: Number.POSITIVE_INFINITY, maxTextBytes: Number.POSITIVE_INFINITY, deadline: Number.POSITIVE_INFINITY });
const floorExtractMs = performance.now() - extractStarted;
const pdfStarted = performance.now();
const requested = await call('POST', `/v1/chat/knowledge-stores/${store.id}/documents/uploads`, { name: 'warranty manual', format: 'pdf' });
const form = new FormData();
for (const [name, value] of Object.entries(requested.upload.fields as Record<string, string>)) form.append(name, value);
form.append('file', new Blob([Buffer.from(pdf)]), 'manual.pdf');
const posted = await fetch(requested.upload.url as string, { method: 'POST', body: form });
if (posted.status !== 204) throw new Error(`upload: ${posted.status} ${await posted.text()}`);
const pdfDocument = await upserted(store.id, requested.documentId as string);
const pdfEndToEndMs = performance.now() - pdfStarted;

const result: KnowledgeIngestionBenchResult = {
  smallDocumentMs: { documents: endToEnd.length, ...percentiles(endToEnd) },
  floorSmallDocumentMs: { documents: floor.length, ...percentiles(floor) },
  pdf: { pages: pdfPages, bytes: pdf.length, chunks: pdfDocument.chunkCount as number, endToEndMs: pdfEndToEndMs, floorExtractMs },
};
process.send?.(result);
await pollers.stop();
await uploads.stop();
await queues.stop();
server.closeAllConnections();
server.close();
rmSync(vectorDir, { recursive: true, force: true });
process.exit(0);
