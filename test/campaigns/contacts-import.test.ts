/**
 * The contacts CSV import against hostile files and a slow table (docs/contacts.md#import): every data row is
 * created or reported, whatever its quotes, and an import that runs out of time reports the rows it did not reach
 * instead of answering 500 for the rows it wrote. Through the API on DynamoDB Local.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readCsvRecords } from '../../shared/platform/csv-records.ts';
import type { Runtime } from '../../shared/runtime.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { slowProxy } from '../support/crash-proxy.ts';
import { killGroup, startApiProcess, waitForExit } from '../support/local-process.ts';
import { closeServer, listenOnLoopback } from '../support/loopback-server.ts';
import { testTableName } from '../support/database.ts';

let api: TestApi;
let deps: Runtime;
let store: typeof import('../../shared/campaigns/contact-store.ts');
beforeAll(async () => {
  api = await startApi();
  deps = (await import('../../shared/runtime.ts')).runtime();
  store = await import('../../shared/campaigns/contact-store.ts');
});
afterAll(() => api.close());

const importCsv = (key: string, csv: string) =>
  api.request('POST', '/v1/chat/contacts/import', { key, rawBody: csv, headers: { 'content-type': 'text/csv' } });

let numberSeq = 0;
/** A US number (New York area code) unique in this run. */
const newNumber = () => `+1212${String(3_000_000 + (numberSeq += 1)).padStart(7, '0')}`;

async function storedContacts(orgId: string) {
  return new Map((await store.listContacts(deps, orgId)).map((contact) => [contact.phoneNumber, contact]));
}

describe('quotes in the CSV', () => {
  it('imports a formula written with quotes inside an unquoted cell verbatim, and every row after it', async () => {
    // Prepare
    const { orgId, key } = await api.newOrg();
    const csv = 'phoneNumber,name\n+15556660001,=HYPERLINK("http://evil","x")\n+15556660002,Second\n+15556660003,Third';

    // Act
    const response = await importCsv(key, csv);

    // Assess
    expect(response.status, response.text).toBe(200);
    expect(response.body).toEqual({ created: 3, updated: 0, failed: [] });
    const stored = await storedContacts(orgId);
    expect([...stored.keys()].sort()).toEqual(['+15556660001', '+15556660002', '+15556660003']);
    expect(stored.get('+15556660001')?.name).toBe('=HYPERLINK("http://evil","x")');
  });

  it('reports a row with text after a closing quote, or a quote never closed, and imports the rows after it', async () => {
    // Prepare
    const { orgId, key } = await api.newOrg();
    const csv = [
      'phone,name,note',
      '+15556660011,"x"),a', // row 2: text after the closing quote
      '+15556660012,5" screen,"said ""hi"", then left"', // row 3: a quote inside an unquoted cell is text
      '+15556660013,"Multi', // row 4: a quoted cell over two lines
      'Line",',
      '+15556660014,Fourth,', // row 5
      '+15556660015,"never closed,', // row 6: the quote never closes
      '+15556660016,Last,',
    ].join('\r\n');

    // Act
    const response = await importCsv(key, csv);

    // Assess
    expect(response.status, response.text).toBe(200);
    expect(response.body.created).toBe(4);
    expect(response.body.failed.map((failure: { row: number; code: string }) => [failure.row, failure.code])).toEqual([
      [2, 'MALFORMED_ROW'],
      [6, 'MALFORMED_ROW'],
    ]);
    const stored = await storedContacts(orgId);
    expect(stored.get('+15556660012')).toMatchObject({ name: '5" screen', attributes: { note: 'said "hi", then left' } });
    expect(stored.get('+15556660013')?.name).toBe('Multi\r\nLine');
    expect([...stored.keys()].sort()).toEqual(['+15556660012', '+15556660013', '+15556660014', '+15556660016']);
  });
});

/**
 * A cell as written in the file, and as read (undefined: the cell makes its row malformed): an unquoted cell
 * without the spaces around it, a quoted one exactly as quoted. A name is stored trimmed, an attribute as read.
 */
interface Cell {
  written: string;
  read: string | undefined;
}

const words = fc.stringMatching(/^[A-Za-z][A-Za-z0-9 ]{0,15}$/);
const plainCell = words.map((text): Cell => ({ written: text, read: text.trim() }));
/** Any text, quoted as RFC 4180 says: commas, quotes and line breaks included. */
const quotedCell = fc
  .tuple(fc.string({ unit: fc.constantFrom('a', 'B', ' ', ',', '"', '\n', '\r\n', '(', ')', '=', '+', "'"), minLength: 1, maxLength: 20 }), fc.constantFrom('', ' '))
  .filter(([text]) => text.trim() !== '')
  .map(([text, pad]): Cell => ({ written: `${pad}"${text.replaceAll('"', '""')}"${pad}`, read: text }));
/** Quotes inside an unquoted cell: a measure in inches, a nickname. */
const strayQuoteCell = fc
  .tuple(words, fc.stringMatching(/^[A-Za-z "]{1,10}$/))
  .map(([head, tail]): Cell => ({ written: `${head}${tail}`, read: `${head}${tail}`.trim() }));
/** A spreadsheet formula, its strings holding commas and parentheses. */
const formulaCell = fc
  .tuple(fc.constantFrom('=', '+', '-', '@'), fc.constantFrom('HYPERLINK', 'SUM', 'cmd|'), fc.array(fc.stringMatching(/^[a-z,() :/.]{0,8}$/), { minLength: 1, maxLength: 3 }))
  .map(([sign, name, args]): Cell => {
    const formula = `${sign}${name}(${args.map((arg) => `"${arg}"`).join(',')})`;
    return { written: formula, read: formula };
  });
const readableCell = fc.oneof(plainCell, quotedCell, strayQuoteCell, formulaCell);
/** Text after the closing quote: the row is reported. */
const junkAfterQuoteCell = fc.tuple(words, fc.stringMatching(/^[A-Za-z)]{1,5}$/)).map(([text, junk]): Cell => ({ written: `"${text}"${junk}`, read: undefined }));

interface PlannedRow {
  name: Cell;
  note: Cell;
}

const plannedRow = fc.oneof(
  { arbitrary: fc.record({ name: readableCell, note: readableCell }), weight: 4 },
  { arbitrary: fc.record({ name: junkAfterQuoteCell, note: readableCell }), weight: 1 },
  { arbitrary: fc.record({ name: readableCell, note: junkAfterQuoteCell }), weight: 1 },
);

/** The file: numbered rows, and maybe a last one whose quote never closes (it can swallow no row: none follows). */
function csvOf(rows: readonly PlannedRow[], numbers: readonly string[], unclosedLast: boolean): string {
  const lines = rows.map((row, index) => `${numbers[index]},${row.name.written},${row.note.written}`);
  if (unclosedLast) lines.push(`${newNumber()},"never closed`);
  return ['phoneNumber,name,note', ...lines].join('\n');
}

const isMalformed = (row: PlannedRow) => row.name.read === undefined || row.note.read === undefined;

describe('hostile quoting, any file', () => {
  it('reads each row on its own: a readable row gives its cells, a malformed one is reported, and no row is lost', () => {
    fc.assert(
      fc.property(fc.array(plannedRow, { maxLength: 12 }), fc.boolean(), (rows, unclosedLast) => {
        const numbers = rows.map((_, index) => `+1555${String(index).padStart(7, '0')}`);

        const records = readCsvRecords(csvOf(rows, numbers, unclosedLast));

        expect(records).toHaveLength(1 + rows.length + (unclosedLast ? 1 : 0));
        rows.forEach((row, index) => {
          const record = records[index + 1];
          if (isMalformed(row)) expect(record).toHaveProperty('malformed');
          else expect(record).toEqual({ row: index + 2, cells: [numbers[index], row.name.read, row.note.read] });
        });
        if (unclosedLast) expect(records.at(-1)).toHaveProperty('malformed');
      }),
      { numRuns: 300 },
    );
  });

  it('creates or reports every data row through the API, the counts adding up, the cells stored verbatim', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(plannedRow, { minLength: 1, maxLength: 8 }), fc.boolean(), async (rows, unclosedLast) => {
        // Prepare
        const { orgId, key } = await api.newOrg();
        const numbers = rows.map(() => newNumber());
        const dataRows = rows.length + (unclosedLast ? 1 : 0);

        // Act
        const response = await importCsv(key, csvOf(rows, numbers, unclosedLast));

        // Assess
        expect(response.status, response.text).toBe(200);
        const { created, updated, failed } = response.body as { created: number; updated: number; failed: { row: number; code: string }[] };
        expect(created + updated + failed.length).toBe(dataRows);
        const wantFailed = rows.flatMap((row, index) => (isMalformed(row) ? [index + 2] : []));
        if (unclosedLast) wantFailed.push(dataRows + 1);
        expect(failed.map((failure) => [failure.row, failure.code])).toEqual(wantFailed.map((row) => [row, 'MALFORMED_ROW']));
        const stored = await storedContacts(orgId);
        expect(stored.size).toBe(created);
        rows.forEach((row, index) => {
          const contact = stored.get(numbers[index] as string);
          if (isMalformed(row)) expect(contact).toBeUndefined();
          else expect(contact).toMatchObject({ name: row.name.read?.trim(), attributes: { note: row.note.read } });
        });
      }),
      { numRuns: 25 },
    );
  }, 120_000);
});

describe('an import on a slow table', () => {
  it('answers 200 within the gateway timeout for 10,000 rows, each written or reported to be sent again', async () => {
    // Prepare: each transaction takes a second longer, so the import cannot write every row within 29 s.
    const proxy = slowProxy(new URL(inject('dynamodbEndpoint')), (operation) => (operation === 'TransactWriteItems' ? 1_000 : 0));
    const proxyUrl = `http://127.0.0.1:${await listenOnLoopback(proxy)}`;
    const child = await startApiProcess(proxyUrl, testTableName(), inject('secretsKeyFile'));
    const { orgId, key } = await api.newOrg();
    const numbers = Array.from({ length: 10_000 }, () => newNumber());
    const csv = `phone,name\n${numbers.map((number, index) => `${number},Person ${index}`).join('\n')}\n`;

    try {
      // Act
      const started = Date.now();
      const response = await fetch(`${child.baseUrl}/v1/chat/contacts/import`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'text/csv' }, body: csv });
      const elapsedMs = Date.now() - started;

      // Assess
      const body = (await response.json()) as { created: number; updated: number; failed: { row: number; code: string; message: string }[] };
      expect(response.status, JSON.stringify(body).slice(0, 500)).toBe(200);
      expect(elapsedMs).toBeLessThan(29_000);
      expect(body.created + body.updated + body.failed.length).toBe(10_000);
      expect(body.created).toBeGreaterThan(0);
      expect(body.failed.length).toBeGreaterThan(0);
      expect(new Set(body.failed.map((failure) => failure.code))).toEqual(new Set(['DEADLINE_EXCEEDED']));
      expect(body.failed[0]?.message).toMatch(/send it again/);
      const reported = new Set(body.failed.map((failure) => numbers[failure.row - 2]));
      const stored = await storedContacts(orgId);
      expect(stored.size).toBe(body.created);
      expect(numbers.filter((number) => !reported.has(number)).every((number) => stored.has(number))).toBe(true);
    } finally {
      killGroup(child.child, 'SIGKILL');
      await waitForExit(child.child, 10_000);
      await closeServer(proxy);
    }
  }, 120_000);
});
