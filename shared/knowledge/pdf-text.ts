/** The PDF signature every PDF file starts with (a few bytes of junk before it are tolerated by readers). */
const pdfSignature = '%PDF-';

/**
 * The text layer of a PDF, one string per page, read by PDF.js's serverless build (unpdf: no native
 * dependencies, so the same code runs in Lambda and locally). A scanned PDF has pages but no text: empty strings.
 * Throws when the bytes are not a readable PDF.
 */
export async function pdfPageTexts(bytes: Uint8Array): Promise<string[]> {
  if (!Buffer.from(bytes.subarray(0, 1024)).toString('latin1').includes(pdfSignature)) throw new Error('The file is not a PDF (no %PDF- header).');
  // Loaded on first use: PDF.js is most of the ingestion bundle, and a cold start for a text document need not run it.
  const { extractText, getDocumentProxy } = await import('unpdf');
  // PDF.js takes ownership of (detaches) the buffer it is given: hand it a copy.
  const document = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
  try {
    const { text } = await extractText(document, { mergePages: false });
    return text.map((page) => page.replace(/[ \t]+\n/g, '\n').trim());
  } finally {
    await document.loadingTask.destroy();
  }
}
