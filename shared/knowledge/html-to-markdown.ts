import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';

/** Blocks whose text becomes a paragraph; headings become Markdown headings, so chunking keeps the outline. */
const blockSelector = 'h1, h2, h3, h4, h5, h6, p, li, pre, blockquote, td, th, dt, dd';

/**
 * The readable part of an HTML page (Readability: navigation, ads and boilerplate left out) as Markdown-like text:
 * `#` headings and one paragraph per block. Undefined when the page has no readable content.
 */
export function htmlToMarkdown(html: string): string | undefined {
  const { document } = parseHTML(html);
  const article = new Readability(document as unknown as ConstructorParameters<typeof Readability>[0], { keepClasses: false }).parse();
  if (!article?.content) return undefined;
  const { document: content } = parseHTML(`<!doctype html><html><body>${article.content}</body></html>`);
  const lines: string[] = [];
  // The page's title heads the outline unless the article has a top-level heading of its own.
  if (article.title?.trim() && !content.querySelector('h1')) lines.push(`# ${article.title.trim()}`);
  for (const element of content.querySelectorAll(blockSelector)) {
    // A block inside another selected block (a p in a li) is read with its parent.
    if (element.parentElement?.closest(blockSelector)) continue;
    const text = (element.textContent ?? '').replace(/\s+/g, ' ').trim();
    if (!text) continue;
    const level = /^H([1-6])$/.exec(element.tagName)?.[1];
    lines.push(level ? `${'#'.repeat(Number(level))} ${text}` : text);
  }
  const markdown = lines.join('\n\n').trim();
  return markdown || undefined;
}
