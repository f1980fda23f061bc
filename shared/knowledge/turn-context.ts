import type { RetrievedChunk } from './knowledge-schemas.ts';
import { knowledgeContextMessage } from '../models/prompt-conventions.ts';

/** The chunks as the model sees them, each cited as `<document> › <heading path>` (`, page <p>` for a PDF). */
export function knowledgeContext(chunks: readonly RetrievedChunk[]): string {
  return knowledgeContextMessage(chunks.map((chunk) => ({ source: citedSource(chunk), text: chunk.text })));
}

const citedSource = (chunk: RetrievedChunk): string =>
  [chunk.documentName, ...chunk.headingPath].join(' › ') + (chunk.page === undefined ? '' : `, page ${chunk.page}`);
