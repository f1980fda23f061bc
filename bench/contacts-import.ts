import { BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import { systemClock } from '../shared/platform/clock.ts';
import { importContacts } from '../shared/campaigns/contact-import.ts';
import { createDocumentClient } from '../shared/platform/store/dynamo.ts';
import { keys } from '../shared/platform/store/keys.ts';
import type { Check } from './report.ts';

/**
 * DynamoDB Local's transactions, on this shared machine, say little of DynamoDB's own latency: the target is the
 * import's cost over the floor of writing the same items with no condition, no read and no transaction.
 */
export const contactsImportTargets = { timesFloor: 3 } as const;

export interface ContactsImportBenchResult {
  rows: number;
  /** A first import: every row creates a contact. */
  createMs: number;
  /** The same file again: every row updates its contact. */
  updateMs: number;
  /** Floor: the same items (contact and number claim of each row) written with BatchWriteItem, 25 a request, as many in flight. */
  floorBatchWriteMs: number;
}

const rows = 10_000;
const inFlight = 4;

/** In-process on a fresh DynamoDB Local: the import of 10,000 rows, created then updated, and its floor. */
export async function measureContactsImport(endpoint: string, tableName: string): Promise<ContactsImportBenchResult> {
  const documentClient = createDocumentClient({ AWS_REGION: 'us-east-1', DYNAMODB_ENDPOINT: endpoint });
  const deps = { documentClient, config: { TABLE_NAME: tableName }, clock: systemClock };
  const csv = ['phoneNumber,name,email,tags,plan', ...Array.from({ length: rows }, (_, index) => `+1415${String(2_000_000 + index)},Contact ${index},c${index}@example.com,bench;spring,gold`)].join('\n');

  const orgId = randomUUID();
  const createMs = await timed(async () => assertImported(await importContacts(deps, orgId, csv), 'created'));
  const updateMs = await timed(async () => assertImported(await importContacts(deps, orgId, csv), 'updated'));

  const floorOrg = randomUUID();
  const now = new Date().toISOString();
  const items = Array.from({ length: rows }, (_, index) => {
    const contact = {
      id: randomUUID(), orgId: floorOrg, phoneNumber: `+1415${String(2_000_000 + index)}`, name: `Contact ${index}`, email: `c${index}@example.com`,
      attributes: { plan: 'gold' }, tags: ['bench', 'spring'], doNotCall: false, createdAt: now, updatedAt: now,
    };
    return [
      { ...keys.contact(floorOrg, contact.id), entity: 'contact', ...contact },
      { ...keys.contactPhone(floorOrg, contact.phoneNumber), entity: 'contactPhone', phoneNumber: contact.phoneNumber, contactId: contact.id, doNotCall: false },
    ];
  }).flat();
  const floorBatchWriteMs = await timed(() => batchWriteAll(documentClient, tableName, items));
  documentClient.destroy();
  return { rows, createMs, updateMs, floorBatchWriteMs };
}

function assertImported(result: { created: number; updated: number; failed: unknown[] }, outcome: 'created' | 'updated'): void {
  if (result[outcome] !== rows || result.failed.length > 0) throw new Error(`contacts import bench: expected ${rows} ${outcome}, got ${JSON.stringify({ ...result, failed: result.failed.length })}`);
}

async function timed(work: () => Promise<void>): Promise<number> {
  const start = performance.now();
  await work();
  return performance.now() - start;
}

async function batchWriteAll(client: DynamoDBDocumentClient, tableName: string, items: Record<string, unknown>[]): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < items.length) {
        const chunk = items.slice(next, (next += 25));
        let pending = chunk.map((Item) => ({ PutRequest: { Item } }));
        while (pending.length > 0) {
          const result = await client.send(new BatchWriteCommand({ RequestItems: { [tableName]: pending } }));
          pending = (result.UnprocessedItems?.[tableName] ?? []) as typeof pending;
        }
      }
    }),
  );
}

export function contactsImportChecks(result: ContactsImportBenchResult): Check[] {
  const target = contactsImportTargets.timesFloor;
  const times = (ms: number) => Math.round((ms / result.floorBatchWriteMs) * 100) / 100;
  return [
    { figure: `contacts import of ${result.rows} new rows, × the BatchWrite floor`, value: times(result.createMs), unit: '×', target, comparison: '<=', pass: times(result.createMs) <= target },
    { figure: `contacts import of ${result.rows} rows updating, × the BatchWrite floor`, value: times(result.updateMs), unit: '×', target, comparison: '<=', pass: times(result.updateMs) <= target },
  ];
}

export function contactsImportReport(result: ContactsImportBenchResult): string[] {
  const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  return [
    '',
    `13. Contacts import (in-process on DynamoDB Local: CSV parse, number lookups, conditioned transactions of 33 rows) — target: ≤ ${contactsImportTargets.timesFloor}× the floor`,
    `   ${result.rows} new rows: ${seconds(result.createMs)} (${Math.round(result.rows / (result.createMs / 1000))} rows/s); the same rows again (updates): ${seconds(result.updateMs)}`,
    `   Floor, the same ${result.rows * 2} items with BatchWriteItem (25 a request, ${inFlight} in flight, no conditions, no reads): ${seconds(result.floorBatchWriteMs)}`,
  ];
}
