import type { RetrievedChunk } from './knowledge-schemas.ts';

/** Starts the system message that carries a turn's retrieved chunks to the model. */
export const knowledgeContextHeading = 'Knowledge excerpts retrieved for this message. Answer from them when they are relevant, and cite them as [n]:';

/** The chunks as the model sees them: `[n] <document> › <heading path>` (`, page <p>` for a PDF), then the text, excerpts apart by a blank line. */
export function knowledgeContext(chunks: readonly RetrievedChunk[]): string {
  const excerpts = chunks.map((chunk, index) => {
    const source = [chunk.documentName, ...chunk.headingPath].join(' › ') + (chunk.page === undefined ? '' : `, page ${chunk.page}`);
    return `[${index + 1}] ${source}\n${chunk.text.replace(/\n{2,}/g, '\n')}`;
  });
  return [knowledgeContextHeading, ...excerpts].join('\n\n');
}

/** The first excerpt of such a message: its source line and text. */
export function firstExcerpt(context: string): { source: string; text: string } | undefined {
  if (!context.startsWith(knowledgeContextHeading)) return undefined;
  const match = /\n\n\[1\] ([^\n]*)\n([^]*?)(?=\n\n\[2\] |$)/.exec(context);
  return match ? { source: match[1]!, text: match[2]! } : undefined;
}
