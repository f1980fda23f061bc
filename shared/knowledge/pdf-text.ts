/** The PDF signature every PDF file starts with (a few bytes of junk before it are tolerated by readers). */
const pdfSignature = '%PDF-';

/** What reading one PDF may take: more pages, text or time than this and it is refused, not read to the end. */
export interface PdfReadingLimits {
  maxPages: number;
  maxTextBytes: number;
  /** Epoch ms by which the text must be read. */
  deadline: number;
}

/** A PDF over one of its reading limits; the message says which, for the document's error. */
export class PdfLimitError extends Error {}

/**
 * The text layer of a PDF, one string per page, read by PDF.js's serverless build (unpdf: no native
 * dependencies, so the same code runs in Lambda and locally). A scanned PDF has pages but no text: empty strings.
 * Pages are read one at a time, so a PDF over its limits is refused as soon as that shows (its page count at once)
 * rather than after reading it all. Throws when the bytes are not a readable PDF.
 */
export async function pdfPageTexts(bytes: Uint8Array, limits: PdfReadingLimits): Promise<string[]> {
  if (!Buffer.from(bytes.subarray(0, 1024)).toString('latin1').includes(pdfSignature)) throw new Error('The file is not a PDF (no %PDF- header).');
  // Loaded on first use: PDF.js is most of the ingestion bundle, and a cold start for a text document need not run it.
  const { getDocumentProxy } = await import('unpdf');
  // PDF.js takes ownership of (detaches) the buffer it is given: hand it a copy.
  const document = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
  try {
    if (document.numPages > limits.maxPages) throw new PdfLimitError(`The PDF has ${document.numPages} pages; at most ${limits.maxPages} are read: split it into smaller files.`);
    const pages: string[] = [];
    let textBytes = 0;
    for (let number = 1; number <= document.numPages; number += 1) {
      if (Date.now() > limits.deadline) {
        throw new PdfLimitError(`Reading the PDF's text took too long (stopped at page ${number} of ${document.numPages}): split it into smaller files.`);
      }
      const page = await document.getPage(number);
      const content = await page.getTextContent();
      // As unpdf's extractText joins a page's items.
      const text = content.items.map((item) => ('str' in item ? item.str + (item.hasEOL ? '\n' : '') : '')).join('');
      page.cleanup();
      textBytes += Buffer.byteLength(text) + 1;
      if (textBytes > limits.maxTextBytes) throw new PdfLimitError(`The PDF's text is larger than ${limits.maxTextBytes} bytes (reached at page ${number} of ${document.numPages}).`);
      pages.push(text.replace(/[ \t]+\n/g, '\n').trim());
    }
    return pages;
  } finally {
    await document.loadingTask.destroy();
  }
}
