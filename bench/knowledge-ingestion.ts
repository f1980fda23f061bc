import { childResult } from './child-result.ts';
import type { KnowledgeIngestionBenchResult } from './knowledge-ingestion-runtime.ts';
import type { Check } from './report.ts';

/** Issue 14: a small document is UPSERTED within 2 s (p50) on the local runtime. */
export const knowledgeIngestionTargets = { smallDocumentP50Ms: 2_000 };

/** Ingestion end to end on the local runtime, in a child process of its own (bench/knowledge-ingestion-runtime.ts). */
export function measureKnowledgeIngestion(dynamodbEndpoint: string, tableName: string): Promise<KnowledgeIngestionBenchResult> {
  return childResult<KnowledgeIngestionBenchResult>('knowledge-ingestion-runtime.ts', dynamodbEndpoint, tableName);
}

export function knowledgeIngestionChecks(result: KnowledgeIngestionBenchResult): Check[] {
  const p50 = result.smallDocumentMs.p50;
  return [
    { figure: 'knowledge small document UPSERTED p50 (local runtime)', value: Math.round(p50), unit: 'ms', target: knowledgeIngestionTargets.smallDocumentP50Ms, comparison: '<=', pass: p50 <= knowledgeIngestionTargets.smallDocumentP50Ms },
  ];
}

/** Lines of section 12, after the retrieval figures. */
export function knowledgeIngestionReport(result: KnowledgeIngestionBenchResult): string[] {
  const { smallDocumentMs: small, floorSmallDocumentMs: floor, pdf } = result;
  return [
    `   Small document (≈ 1 KB Markdown) POST → UPSERTED on the local runtime, ${small.documents} documents: p50 ${small.p50.toFixed(0)} ms, p99 ${small.p99.toFixed(0)} ms (target p50 ≤ ${knowledgeIngestionTargets.smallDocumentP50Ms} ms); floor, the same ingestion in-process: p50 ${floor.p50.toFixed(1)} ms`,
    `   ${pdf.pages}-page PDF (${(pdf.bytes / 1024).toFixed(0)} KiB, ${pdf.chunks} chunks) upload request → presigned POST → S3 event → FIFO → UPSERTED: ${pdf.endToEndMs.toFixed(0)} ms; floor, its text extraction alone: ${pdf.floorExtractMs.toFixed(0)} ms`,
  ];
}
