/**
 * Reads a CSV document record by record, each on its own: a malformed record is reported and the reader carries on
 * with the next, so no quote can swallow the rows after it (docs/contacts.md#reading-the-csv). RFC 4180 with the
 * leniencies spreadsheets' files need:
 *
 * - a quote inside an unquoted cell is text (`5" screen`);
 * - an unquoted cell that reads as a formula (starts with `=`, `+`, `-` or `@`) keeps the commas inside its
 *   parentheses and "strings" (`=HYPERLINK("http://x","y")` is one cell), when they close on that line;
 * - spaces around a cell are dropped, a leading byte order mark is ignored, blank lines are skipped.
 *
 * Two things make a record malformed: text after the closing quote of a quoted cell (`"x")`), and a quote that is
 * never closed; the reader then resumes on the line after the one where that quote opened.
 */
export type CsvRecord =
  /** `row` counts the records read, the header being 1, as a spreadsheet numbers its rows. */
  | { row: number; cells: string[] }
  | { row: number; malformed: string };

export function readCsvRecords(text: string): CsvRecord[] {
  const source = text.startsWith('\uFEFF') ? text.slice(1) : text;
  const records: CsvRecord[] = [];
  let at = 0;
  while (at < source.length) {
    const record = readRecord(source, at);
    at = record.next;
    if (record.blank) continue;
    const row = records.length + 1;
    records.push(record.malformed === undefined ? { row, cells: record.cells } : { row, malformed: record.malformed });
  }
  return records;
}

interface ReadRecord {
  cells: string[];
  malformed?: string | undefined;
  blank: boolean;
  /** Where the next record starts. */
  next: number;
}

function readRecord(source: string, start: number): ReadRecord {
  const cells: string[] = [];
  let malformed: string | undefined;
  let at = start;
  for (;;) {
    const cell = readCell(source, at);
    if (cell.unclosedAt !== undefined) {
      return { cells, malformed: 'A quote is never closed.', blank: false, next: afterLineBreak(source, endOfLine(source, cell.unclosedAt)) };
    }
    cells.push(cell.value);
    malformed ??= cell.malformed;
    at = cell.end;
    if (source[at] === ',') {
      at += 1;
      continue;
    }
    const blank = cells.length === 1 && cells[0] === '' && !cell.quoted;
    return { cells, malformed, blank, next: afterLineBreak(source, at) };
  }
}

interface ReadCell {
  value: string;
  quoted: boolean;
  /** Where the cell ends: at its `,`, at a line break, or at the end of the document. */
  end: number;
  malformed?: string | undefined;
  /** Where a quote that is never closed opened. */
  unclosedAt?: number;
}

const isLineBreak = (char: string | undefined) => char === '\n' || char === '\r';
const isCellEnd = (char: string | undefined) => char === undefined || char === ',' || isLineBreak(char);
const isBlank = (char: string | undefined) => char === ' ' || char === '\t';
const formulaStart = /^[=+\-@]/;

function readCell(source: string, start: number): ReadCell {
  let at = start;
  while (isBlank(source[at])) at += 1;
  if (source[at] !== '"') return readUnquotedCell(source, start);
  const opening = at;
  let value = '';
  let from = opening + 1;
  for (;;) {
    const quote = source.indexOf('"', from);
    if (quote === -1) return { value: '', quoted: true, end: source.length, unclosedAt: opening };
    value += source.slice(from, quote);
    if (source[quote + 1] === '"') {
      value += '"';
      from = quote + 2;
      continue;
    }
    at = quote + 1;
    break;
  }
  while (isBlank(source[at])) at += 1;
  if (isCellEnd(source[at])) return { value, quoted: true, end: at };
  // Text after the closing quote: the record is reported; the cell runs to the next comma or line break.
  while (!isCellEnd(source[at])) at += 1;
  return { value, quoted: true, end: at, malformed: 'Text follows the closing quote of a quoted cell (quote the whole cell and double the quotes inside it).' };
}

function readUnquotedCell(source: string, start: number): ReadCell {
  let end = start;
  while (!isCellEnd(source[end])) end += 1;
  if (source[end] === ',' && formulaStart.test(source.slice(start, end).trimStart())) end = endOfFormula(source, start) ?? end;
  return { value: source.slice(start, end).trim(), quoted: false, end };
}

/** A formula longer than any field takes is read as plain text, which also bounds the work of each cell. */
const maxFormulaLength = 4096;

/** The end of a formula cell whose commas sit inside its parentheses or strings; undefined when one stays open. */
function endOfFormula(source: string, start: number): number | undefined {
  const limit = Math.min(source.length, start + maxFormulaLength);
  let depth = 0;
  let inString = false;
  let at = start;
  for (; at < limit && !isLineBreak(source[at]); at += 1) {
    const char = source[at];
    if (char === '"') inString = !inString;
    else if (inString) continue;
    else if (char === '(') depth += 1;
    else if (char === ')') depth = Math.max(0, depth - 1);
    else if (char === ',' && depth === 0) return at;
  }
  return isCellEnd(source[at]) && depth === 0 && !inString ? at : undefined;
}

function endOfLine(source: string, from: number): number {
  let at = from;
  while (at < source.length && !isLineBreak(source[at])) at += 1;
  return at;
}

function afterLineBreak(source: string, at: number): number {
  if (source[at] === '\r' && source[at + 1] === '\n') return at + 2;
  return isLineBreak(source[at]) ? at + 1 : at;
}
