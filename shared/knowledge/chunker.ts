/**
 * Heading-aware chunking: Markdown is cut at its headings first, so that a chunk never spans two sections, then
 * each section into windows of about `size` tokens (≈ 4 characters each) cut at paragraph, line or sentence
 * boundaries where one is near, the next window repeating the last `overlap` tokens. Each chunk keeps its heading
 * path (`["Billing", "Refunds"]`), which also prefixes the text that is embedded and indexed.
 */
export interface ChunkingOptions {
  size: number;
  overlap: number;
}

export interface TextChunk {
  index: number;
  text: string;
  headingPath: string[];
  tokenCount: number;
  /** The page (from 1) a chunk of a paged document (PDF) comes from. */
  page?: number;
}

const charsPerToken = 4;

interface Section {
  headingPath: string[];
  body: string;
}

function sections(text: string, markdown: boolean): Section[] {
  if (!markdown) return [{ headingPath: [], body: text }];
  const result: Section[] = [];
  const path: string[] = [];
  let lines: string[] = [];
  let inFence = false;
  const flush = () => {
    if (lines.join('').trim()) result.push({ headingPath: [...path], body: lines.join('\n') });
    lines = [];
  };
  for (const line of text.split(/\r?\n/)) {
    if (/^\s*(```|~~~)/.test(line)) inFence = !inFence;
    const heading = inFence ? null : /^(#{1,6})\s+(.+?)\s*#*\s*$/.exec(line);
    if (!heading) {
      lines.push(line);
      continue;
    }
    flush();
    const level = heading[1]!.length;
    path.splice(level - 1);
    while (path.length < level - 1) path.push('');
    path.push(heading[2]!);
  }
  flush();
  return result.map((section) => ({ ...section, headingPath: section.headingPath.filter(Boolean) }));
}

/** Where to end a window that should end near `target`: the last paragraph, line, sentence or word break before it. */
function breakBefore(body: string, start: number, target: number): number {
  if (target >= body.length) return body.length;
  const floor = start + Math.floor((target - start) / 2);
  for (const pattern of [/\n\s*\n/g, /\n/g, /[.!?]\s/g, /\s/g]) {
    let best = -1;
    pattern.lastIndex = floor;
    for (let match = pattern.exec(body); match && match.index < target; match = pattern.exec(body)) best = match.index + match[0].length;
    if (best > floor) return best;
  }
  return target;
}

export function chunkText(text: string, options: ChunkingOptions, markdown = true): TextChunk[] {
  const size = options.size * charsPerToken;
  const overlap = options.overlap * charsPerToken;
  const chunks: TextChunk[] = [];
  for (const section of sections(text, markdown)) {
    const body = section.body.trim();
    for (let start = 0; start < body.length; ) {
      const end = breakBefore(body, start, start + size);
      const piece = body.slice(start, end).trim();
      if (piece) chunks.push({ index: chunks.length, text: piece, headingPath: section.headingPath, tokenCount: Math.ceil(piece.length / charsPerToken) });
      if (end >= body.length) break;
      // The next window starts `overlap` before this end, at a word boundary, and always moves forward.
      const back = body.lastIndexOf(' ', end - overlap);
      start = Math.max(start + 1, overlap > 0 && back > start ? back + 1 : end);
    }
  }
  return chunks;
}

/** A paged document (PDF): each page is chunked on its own, so that every chunk keeps the one page it comes from. */
export function chunkPages(pages: readonly string[], options: ChunkingOptions): TextChunk[] {
  const chunks: TextChunk[] = [];
  pages.forEach((pageText, pageIndex) => {
    for (const chunk of chunkText(pageText, options, false)) chunks.push({ ...chunk, index: chunks.length, page: pageIndex + 1 });
  });
  return chunks;
}

/** What gets embedded and indexed for a chunk: its heading path, then its text. */
export const indexedText = (chunk: Pick<TextChunk, 'text' | 'headingPath'>): string =>
  chunk.headingPath.length ? `${chunk.headingPath.join(' > ')}\n${chunk.text}` : chunk.text;
