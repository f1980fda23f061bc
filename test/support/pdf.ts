import { PDFDocument, rgb, StandardFonts } from 'pdf-lib';

/** A PDF with a text layer: one page per entry, each line of it drawn as a line of text (Helvetica, 11 pt). */
export async function pdfWithText(pages: readonly string[]): Promise<Uint8Array> {
  const document = await PDFDocument.create();
  const font = await document.embedFont(StandardFonts.Helvetica);
  for (const text of pages) {
    const page = document.addPage([595, 842]);
    text.split('\n').forEach((line, index) => page.drawText(line, { x: 50, y: 790 - index * 14, size: 11, font }));
  }
  return document.save();
}

/** What a scanner makes: pages of graphics, no text layer at all. */
export async function pdfWithoutText(pageCount: number): Promise<Uint8Array> {
  const document = await PDFDocument.create();
  for (let index = 0; index < pageCount; index += 1) {
    document.addPage([595, 842]).drawRectangle({ x: 40, y: 40, width: 515, height: 762, color: rgb(0.9, 0.9, 0.85) });
  }
  return document.save();
}
