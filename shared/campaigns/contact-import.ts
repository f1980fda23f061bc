import { ConcurrentModificationError, ValidationError } from '../platform/errors.ts';
import { createContactBody, maxImportRows, type ImportContactsResult, type ImportFailureCode } from './contact-schemas.ts';
import { unstorableNameMessage, unstorablePropertyNames } from '../platform/schemas/storable-json.ts';
import { contactIdsByPhone, getContacts, writeContacts, type ContactWrite } from './contact-store.ts';
import { newId, nextUpdatedAt } from '../platform/clock.ts';
import { readCsvRecords } from '../platform/csv-records.ts';
import { normalizePhoneNumber, type Contact, type ContactDeps } from './contacts.ts';

type KnownColumn = 'phoneNumber' | 'name' | 'email' | 'timezone' | 'tags' | 'doNotCall';

/** Header names (compared without case, spaces, `_` or `-`) of the contact's own fields; any other column is an attribute. */
const columnAliases: Readonly<Record<string, KnownColumn>> = {
  phonenumber: 'phoneNumber',
  phone: 'phoneNumber',
  number: 'phoneNumber',
  name: 'name',
  email: 'email',
  timezone: 'timezone',
  tz: 'timezone',
  tags: 'tags',
  donotcall: 'doNotCall',
  dnc: 'doNotCall',
};

const truthy = new Set(['true', 'yes', 'y', '1']);
const falsy = new Set(['false', 'no', 'n', '0']);

/**
 * How long after it began an import may still start writing rows. The HTTP API gives up at 30 s and the function
 * at 29 s; the writes in flight at this point finish well before, and the rows left are reported DEADLINE_EXCEEDED
 * rather than the whole import answering 500 for work it did (docs/contacts.md#import).
 */
const importWriteWindowMs = 20_000;

type Failure = ImportContactsResult['failed'][number];

class RowError extends Error {
  readonly code: ImportFailureCode;
  constructor(code: ImportFailureCode, message: string) {
    super(message);
    this.code = code;
  }
}

/** One row as read: the cells of known columns, and attribute cells that are not empty. */
interface ParsedRow {
  row: number;
  phoneNumber: string;
  cells: Partial<Record<KnownColumn, string>>;
  attributes: Record<string, string>;
}

/**
 * Imports a CSV of contacts (docs/contacts.md#import): the header row names the columns, each row upserts the
 * contact with its number. A bad row is reported in `failed` (its `row` counts the header as row 1, as a
 * spreadsheet does) and never stops the others; only a document no row can be read from is refused whole.
 */
export async function importContacts(deps: ContactDeps, orgId: string, csv: string): Promise<ImportContactsResult> {
  const startedAt = Date.now();
  const failed: Failure[] = [];
  const { header, records } = readCsv(csv, failed);
  const rows = readRows(header, records, failed);
  const existingIds = await contactIdsByPhone(deps, orgId, rows.map((row) => row.phoneNumber));
  const existing = new Map((await getContacts(deps, orgId, [...existingIds.values()])).map((contact) => [contact.phoneNumber, contact]));
  const writes: (ContactWrite & { row: number })[] = [];
  for (const row of rows) {
    try {
      const previous = existing.get(row.phoneNumber);
      writes.push({ row: row.row, previous, next: contactOf(deps, orgId, row, previous) });
    } catch (error) {
      if (!(error instanceof RowError)) throw error;
      failed.push({ row: row.row, code: error.code, message: error.message });
    }
  }
  const outcomes = await writeContacts(deps, writes, startedAt + importWriteWindowMs);
  let created = 0;
  let updated = 0;
  outcomes.forEach((outcome, index) => {
    const write = writes[index] as (typeof writes)[number];
    if (outcome === 'written') {
      if (write.previous) updated += 1;
      else created += 1;
    } else if (outcome === 'not-started') {
      failed.push({ row: write.row, code: 'DEADLINE_EXCEEDED', message: 'The import ran out of time before this row; send it again (a row imported twice is an update).' });
    } else {
      // A number claimed by a request that ran beside the import, or a contact changed meanwhile: the row can be sent again.
      const message = outcome instanceof ConcurrentModificationError ? outcome.message : `${write.next.phoneNumber} was written by another request meanwhile; import the row again.`;
      failed.push({ row: write.row, code: 'CONCURRENT_MODIFICATION', message });
    }
  });
  failed.sort((a, b) => a.row - b.row);
  return { created, updated, failed };
}

function readCsv(csv: string, failed: Failure[]): { header: string[]; records: { row: number; cells: string[] }[] } {
  const [first, ...rest] = readCsvRecords(csv);
  if (!first) throw new ValidationError('The CSV has no header row.', { details: [{ field: 'body', message: 'must start with a header row' }] });
  if ('malformed' in first) {
    throw new ValidationError(`The header row is not valid CSV: ${first.malformed}`, { details: [{ field: 'body', message: 'must start with a valid header row' }] });
  }
  if (rest.length > maxImportRows) {
    throw new ValidationError(`The CSV has ${rest.length} rows; one import takes at most ${maxImportRows}.`, {
      details: [{ field: 'body', message: `at most ${maxImportRows} rows` }],
    });
  }
  const records: { row: number; cells: string[] }[] = [];
  for (const record of rest) {
    if ('malformed' in record) failed.push({ row: record.row, code: 'MALFORMED_ROW', message: `The row is not valid CSV: ${record.malformed}` });
    else records.push(record);
  }
  return { header: first.cells, records };
}

const columnKey = (name: string) => name.toLowerCase().replace(/[\s_-]/g, '');

function readRows(header: string[], records: { row: number; cells: string[] }[], failed: Failure[]): ParsedRow[] {
  // Own properties only: a `constructor` column is an attribute name, not Object.prototype's.
  const columns = header.map((name) => ({ name, field: Object.hasOwn(columnAliases, columnKey(name)) ? columnAliases[columnKey(name)] : undefined }));
  const names = columns.map((column) => column.field ?? column.name);
  const repeated = names.find((name, index) => names.indexOf(name) !== index);
  if (repeated !== undefined || names.includes('')) {
    throw new ValidationError('Each header column must have its own, non-empty name.', {
      details: [{ field: 'body', message: repeated ? `column ${repeated} appears twice` : 'a header column has no name' }],
    });
  }
  // Other columns become attribute names, so they follow the rule of a JSON body's property names.
  const unstorable = names.find((name) => unstorablePropertyNames.has(name));
  if (unstorable !== undefined) {
    throw new ValidationError(`The column ${unstorable} cannot be an attribute: ${unstorableNameMessage}.`, {
      details: [{ field: 'body', message: `column ${unstorable}: ${unstorableNameMessage}` }],
    });
  }
  if (!names.includes('phoneNumber')) {
    throw new ValidationError('The header row has no phoneNumber column.', { details: [{ field: 'body', message: 'the header must name a phoneNumber column' }] });
  }
  const firstRowOfNumber = new Map<string, number>();
  const rows: ParsedRow[] = [];
  for (const { row, cells } of records) {
    const fail = (code: ImportFailureCode, message: string) => failed.push({ row, code, message });
    if (cells.length !== columns.length) {
      fail('MALFORMED_ROW', `The row has ${cells.length} columns; the header has ${columns.length}.`);
      continue;
    }
    const parsed: ParsedRow = { row, phoneNumber: '', cells: {}, attributes: {} };
    columns.forEach((column, index) => {
      const value = cells[index] as string;
      if (column.field) parsed.cells[column.field] = value;
      else if (value !== '') parsed.attributes[column.name] = value;
    });
    const raw = parsed.cells.phoneNumber ?? '';
    if (raw === '') {
      fail('MISSING_VALUE', 'phoneNumber is empty.');
      continue;
    }
    const phoneNumber = normalizePhoneNumber(raw);
    if (!phoneNumber) {
      fail('INVALID_PHONE_NUMBER', `${raw} is not an E.164 number such as +14155550100 (a + and the country code).`);
      continue;
    }
    const first = firstRowOfNumber.get(phoneNumber);
    if (first !== undefined) {
      fail('DUPLICATE_IN_FILE', `${phoneNumber} is already on row ${first}; each number is imported once.`);
      continue;
    }
    firstRowOfNumber.set(phoneNumber, row);
    rows.push({ ...parsed, phoneNumber });
  }
  return rows;
}

/** The contact a row makes: a new one, or `previous` with the row's non-empty cells over it (attributes merged). */
function contactOf(deps: ContactDeps, orgId: string, row: ParsedRow, previous: Contact | undefined): Contact {
  const given = Object.fromEntries(Object.entries(row.cells).filter(([, value]) => value !== '')) as Partial<Record<KnownColumn, string>>;
  if (!previous && given.name === undefined) throw new RowError('MISSING_VALUE', 'name is empty; a new contact needs one.');
  const doNotCall = given.doNotCall === undefined ? undefined : booleanCell(given.doNotCall);
  const candidate = {
    phoneNumber: row.phoneNumber,
    name: given.name ?? previous?.name,
    email: given.email ?? previous?.email,
    timezone: given.timezone ?? previous?.timezone,
    attributes: { ...previous?.attributes, ...row.attributes },
    tags: given.tags === undefined ? (previous?.tags ?? []) : given.tags.split(/[;|]/).map((tag) => tag.trim()).filter((tag) => tag !== ''),
    doNotCall: doNotCall ?? previous?.doNotCall ?? false,
  };
  const result = createContactBody.safeParse(candidate);
  if (!result.success) {
    const issue = result.error.issues[0];
    const field = String(issue?.path[0] ?? 'row');
    const code: ImportFailureCode = field === 'timezone' ? 'INVALID_TIMEZONE' : 'INVALID_FIELD';
    throw new RowError(code, `${issue?.path.join('.') || field} ${issue?.message ?? 'is invalid'}.`);
  }
  const now = deps.clock.now().toISOString();
  if (!previous) return { id: newId(), orgId, ...result.data, createdAt: now, updatedAt: now };
  return { ...previous, ...result.data, updatedAt: nextUpdatedAt(deps.clock, previous.updatedAt) };
}

function booleanCell(value: string): boolean {
  const lower = value.toLowerCase();
  if (truthy.has(lower)) return true;
  if (falsy.has(lower)) return false;
  throw new RowError('INVALID_FIELD', `doNotCall ${value} must be true or false (yes/no, 1/0 also work).`);
}
