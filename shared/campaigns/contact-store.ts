import { BatchGetCommand, DeleteCommand, GetCommand, PutCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Contact } from './contact-model.ts';
import { ConcurrentModificationError, ContactPhoneTakenError } from '../platform/errors.ts';
import type { IdempotencyCompletion } from '../platform/ports.ts';
import { isConditionFailure, sendTransaction, transactionCancellationCodes, type TransactItem } from '../platform/store/dynamo.ts';
import { transactWithCompletion } from '../platform/store/idempotency-store.ts';
import { toRecord } from '../platform/store/items.ts';
import { keys } from '../platform/store/keys.ts';
import { queryAll } from '../platform/store/query-all.ts';

/**
 * What the contact functions need: the runtime (shared/runtime.ts) is one, so `getContact(runtime, …)` works as is.
 *
 * Layout (docs/contacts.md#storage): contacts in their organization's `ORG#<org>#CONTACTS` partition; one claim item
 * per number (`ORG#<org>#CONTACTPHONE#<e164>`) that makes numbers unique and mirrors `doNotCall`; the DNC list in
 * `ORG#<org>#DNC`. Every write of a contact writes its claim in the same transaction.
 */
export interface ContactStoreDeps {
  documentClient: DynamoDBDocumentClient;
  config: { TABLE_NAME: string };
}

/** An entry of the organization's do-not-call list. */
export interface DncEntry {
  phoneNumber: string;
  reason?: string | undefined;
  createdAt: string;
}

const contactFieldOrder = ['id', 'orgId', 'phoneNumber', 'name', 'email', 'timezone', 'attributes', 'tags', 'doNotCall', 'createdAt', 'updatedAt'];

export const toContact = (item: Record<string, unknown>): Contact => toRecord<Contact>(item, contactFieldOrder);

const toDncEntry = (item: Record<string, unknown>): DncEntry => toRecord<DncEntry>(item, ['phoneNumber', 'reason', 'createdAt']);

/** DynamoDB's limit of keys in one BatchGetItem. */
const batchGetLimit = 100;

export async function getContact(deps: ContactStoreDeps, orgId: string, contactId: string): Promise<Contact | undefined> {
  const result = await deps.documentClient.send(
    new GetCommand({ TableName: deps.config.TABLE_NAME, Key: keys.contact(orgId, contactId), ConsistentRead: true }),
  );
  return result.Item ? toContact(result.Item) : undefined;
}

/** Contacts by id, those that exist, in no particular order; any number of ids (read 100 at a time, a few reads in flight). */
export async function getContacts(deps: ContactStoreDeps, orgId: string, contactIds: readonly string[]): Promise<Contact[]> {
  const items = await batchGetMany(deps, [...new Set(contactIds)].map((id) => keys.contact(orgId, id)));
  return items.map(toContact);
}

/** The contact holding each of these numbers, by number; numbers no contact holds are absent. */
export async function contactIdsByPhone(deps: ContactStoreDeps, orgId: string, phoneNumbers: readonly string[]): Promise<Map<string, string>> {
  const claims = await batchGetMany(deps, [...new Set(phoneNumbers)].map((phone) => keys.contactPhone(orgId, phone)));
  return new Map(claims.map((claim) => [claim.phoneNumber as string, claim.contactId as string]));
}

/** Every contact of the organization (lists filter and sort them in memory: docs/contacts.md#limits). */
export async function listContacts(deps: ContactStoreDeps, orgId: string): Promise<Contact[]> {
  const items = await queryAll(deps.documentClient, {
    TableName: deps.config.TABLE_NAME,
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': keys.contactsPartition(orgId), ':prefix': keys.contactPrefix },
  });
  return items.map(toContact);
}

/**
 * A campaign's audience: the contacts named by id (missing ids skipped) and those with any of the tags, each once,
 * read a page at a time. DNC contacts are included: the campaign counts them as skipped.
 */
export async function* listAudience(
  deps: ContactStoreDeps,
  orgId: string,
  audience: { contactIds?: string[]; tags?: string[] },
): AsyncIterable<Contact> {
  const seen = new Set<string>();
  const ids = [...new Set(audience.contactIds ?? [])];
  for (let start = 0; start < ids.length; start += batchGetLimit) {
    for (const contact of await getContacts(deps, orgId, ids.slice(start, start + batchGetLimit))) {
      seen.add(contact.id);
      yield contact;
    }
  }
  const tags = [...new Set(audience.tags ?? [])];
  if (tags.length === 0) return;
  const tagValues = Object.fromEntries(tags.map((tag, index) => [`:tag${index}`, tag]));
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await deps.documentClient.send(
      new QueryCommand({
        TableName: deps.config.TABLE_NAME,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        FilterExpression: Object.keys(tagValues).map((name) => `contains(tags, ${name})`).join(' OR '),
        ExpressionAttributeValues: { ':pk': keys.contactsPartition(orgId), ':prefix': keys.contactPrefix, ...tagValues },
        ExclusiveStartKey: startKey,
      }),
    );
    for (const item of page.Items ?? []) {
      const contact = toContact(item);
      if (seen.has(contact.id)) continue;
      seen.add(contact.id);
      yield contact;
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey);
}

/**
 * True when the number must not be dialled: it is on the organization's DNC list, or the contact holding it has
 * `doNotCall`. One BatchGetItem of two keys, strongly consistent, so a change just made is seen by the next dial.
 */
export async function isDialBlocked(deps: ContactStoreDeps, orgId: string, phoneNumber: string): Promise<boolean> {
  const items = await batchGet(deps, [keys.dncEntry(orgId, phoneNumber), keys.contactPhone(orgId, phoneNumber)]);
  return items.some((item) => item.entity === 'dnc' || item.doNotCall === true);
}

const contactPut = (tableName: string, contact: Contact, previous: Contact | undefined): TransactItem => ({
  Put: {
    TableName: tableName,
    Item: { ...keys.contact(contact.orgId, contact.id), entity: 'contact', ...contact },
    ...(previous
      ? { ConditionExpression: 'updatedAt = :previousUpdatedAt', ExpressionAttributeValues: { ':previousUpdatedAt': previous.updatedAt } }
      : { ConditionExpression: 'attribute_not_exists(pk)' }),
  },
});

/** The claim on the contact's number: new (nobody holds it) or the contact's own. */
const phoneClaimPut = (tableName: string, contact: Contact, ownClaim: boolean): TransactItem => ({
  Put: {
    TableName: tableName,
    Item: {
      ...keys.contactPhone(contact.orgId, contact.phoneNumber),
      entity: 'contactPhone',
      phoneNumber: contact.phoneNumber,
      contactId: contact.id,
      doNotCall: contact.doNotCall,
    },
    ...(ownClaim
      ? { ConditionExpression: 'contactId = :contactId', ExpressionAttributeValues: { ':contactId': contact.id } }
      : { ConditionExpression: 'attribute_not_exists(pk)' }),
  },
});

/** The writes that turn `previous` (undefined: a new contact) into `next`, claims included; the claim comes second. */
function contactWrites(tableName: string, next: Contact, previous: Contact | undefined): TransactItem[] {
  const samePhone = previous?.phoneNumber === next.phoneNumber;
  const writes = [contactPut(tableName, next, previous), phoneClaimPut(tableName, next, samePhone)];
  if (previous && !samePhone) {
    writes.push({
      Delete: {
        TableName: tableName,
        Key: keys.contactPhone(previous.orgId, previous.phoneNumber),
        ConditionExpression: 'contactId = :contactId',
        ExpressionAttributeValues: { ':contactId': previous.id },
      },
    });
  }
  return writes;
}

const phoneTaken = (phoneNumber: string) =>
  new ContactPhoneTakenError(`A contact with number ${phoneNumber} already exists in this organization.`, {
    details: [{ field: 'phoneNumber', message: 'is already used by another contact' }],
  });

/** Why a contact write was canceled, from its transaction's reasons (claim second, as `contactWrites` orders them). */
function contactWriteFailure(error: unknown, contact: Contact): Error | undefined {
  const codes = transactionCancellationCodes(error);
  if (!codes) return undefined;
  if (codes[1] === 'ConditionalCheckFailed') return phoneTaken(contact.phoneNumber);
  if (codes[0] === 'ConditionalCheckFailed' || codes[2] === 'ConditionalCheckFailed') {
    return new ConcurrentModificationError('The contact changed while it was being written; read it again and retry.');
  }
  return undefined;
}

export async function createContact(deps: ContactStoreDeps, contact: Contact, completion?: IdempotencyCompletion): Promise<void> {
  try {
    await transactWithCompletion(deps.documentClient, deps.config.TABLE_NAME, contactWrites(deps.config.TABLE_NAME, contact, undefined), completion);
  } catch (error) {
    throw contactWriteFailure(error, contact) ?? error;
  }
}

/** Writes `next` over `previous` if nobody changed it meanwhile; a new number must be free. */
export async function replaceContact(deps: ContactStoreDeps, previous: Contact, next: Contact): Promise<void> {
  try {
    await sendTransaction(deps.documentClient, contactWrites(deps.config.TABLE_NAME, next, previous));
  } catch (error) {
    throw contactWriteFailure(error, next) ?? error;
  }
}

/** Deletes the contact and frees its number; false when it was not there. */
export async function deleteContact(deps: ContactStoreDeps, orgId: string, contactId: string): Promise<boolean> {
  const contact = await getContact(deps, orgId, contactId);
  if (!contact) return false;
  try {
    await sendTransaction(deps.documentClient, [
      {
        Delete: {
          TableName: deps.config.TABLE_NAME,
          Key: keys.contact(orgId, contactId),
          ConditionExpression: 'updatedAt = :updatedAt',
          ExpressionAttributeValues: { ':updatedAt': contact.updatedAt },
        },
      },
      {
        Delete: {
          TableName: deps.config.TABLE_NAME,
          Key: keys.contactPhone(orgId, contact.phoneNumber),
          ConditionExpression: 'contactId = :contactId',
          ExpressionAttributeValues: { ':contactId': contactId },
        },
      },
    ]);
    return true;
  } catch (error) {
    if (transactionCancellationCodes(error)?.includes('ConditionalCheckFailed')) {
      throw new ConcurrentModificationError('The contact changed while it was being deleted; read it again and retry.');
    }
    throw error;
  }
}

/** One contact write of a batch: a new contact (`previous` undefined) or a change. */
export interface ContactWrite {
  previous?: Contact | undefined;
  next: Contact;
}

/** Contact writes per transaction: each is at most 3 items, within TransactWriteItems' 100. */
const writesPerTransaction = 33;
/** Transactions in flight at once during a batch (measured: bench section 13). */
const transactionsInFlight = 8;

/** What became of one write of a batch: applied, the error that refused it, or never started (out of time). */
export type ContactWriteOutcome = 'written' | 'not-started' | Error;

/**
 * Applies many contact writes (the CSV import) in transactions of several contacts each, a few in flight; when a
 * transaction is canceled, its writes are retried one by one so that only the write at fault fails. No transaction
 * starts after `startBy` (epoch ms): the writes left are answered 'not-started'. Answers each write's outcome, in order.
 */
export async function writeContacts(deps: ContactStoreDeps, writes: readonly ContactWrite[], startBy: number): Promise<ContactWriteOutcome[]> {
  const tableName = deps.config.TABLE_NAME;
  const outcomes: ContactWriteOutcome[] = new Array(writes.length).fill('not-started');
  const groups: number[][] = [];
  for (let start = 0; start < writes.length; start += writesPerTransaction) {
    groups.push(Array.from({ length: Math.min(writesPerTransaction, writes.length - start) }, (_, index) => start + index));
  }
  const writeOne = async (index: number) => {
    if (Date.now() > startBy) return;
    const write = writes[index] as ContactWrite;
    try {
      await sendTransaction(deps.documentClient, contactWrites(tableName, write.next, write.previous));
      outcomes[index] = 'written';
    } catch (error) {
      const failure = contactWriteFailure(error, write.next);
      if (!failure) throw error;
      outcomes[index] = failure;
    }
  };
  const writeGroup = async (group: number[]) => {
    if (Date.now() > startBy) return;
    const items = group.flatMap((index) => contactWrites(tableName, (writes[index] as ContactWrite).next, (writes[index] as ContactWrite).previous));
    try {
      await sendTransaction(deps.documentClient, items);
      for (const index of group) outcomes[index] = 'written';
    } catch (error) {
      if (!transactionCancellationCodes(error)) throw error;
      for (const index of group) await writeOne(index);
    }
  };
  await eachInFlight(groups, transactionsInFlight, writeGroup);
  return outcomes;
}

/** Adds the number to the DNC list; a number already listed keeps its entry, which is answered. */
export async function addDncEntry(deps: ContactStoreDeps, orgId: string, entry: DncEntry): Promise<DncEntry> {
  try {
    await deps.documentClient.send(
      new PutCommand({
        TableName: deps.config.TABLE_NAME,
        Item: { ...keys.dncEntry(orgId, entry.phoneNumber), entity: 'dnc', ...entry },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    return entry;
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
    const existing = await getDncEntry(deps, orgId, entry.phoneNumber);
    if (existing) return existing;
    throw error;
  }
}

export async function getDncEntry(deps: ContactStoreDeps, orgId: string, phoneNumber: string): Promise<DncEntry | undefined> {
  const result = await deps.documentClient.send(
    new GetCommand({ TableName: deps.config.TABLE_NAME, Key: keys.dncEntry(orgId, phoneNumber), ConsistentRead: true }),
  );
  return result.Item ? toDncEntry(result.Item) : undefined;
}

/** The whole DNC list, in number order. */
export async function listDncEntries(deps: ContactStoreDeps, orgId: string): Promise<DncEntry[]> {
  const items = await queryAll(deps.documentClient, {
    TableName: deps.config.TABLE_NAME,
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': keys.dncPartition(orgId) },
  });
  return items.map(toDncEntry);
}

/** Removes the number from the DNC list; false when it was not listed. */
export async function removeDncEntry(deps: ContactStoreDeps, orgId: string, phoneNumber: string): Promise<boolean> {
  const result = await deps.documentClient.send(
    new DeleteCommand({ TableName: deps.config.TABLE_NAME, Key: keys.dncEntry(orgId, phoneNumber), ReturnValues: 'ALL_OLD' }),
  );
  return result.Attributes !== undefined;
}

/** Reads in flight at once when many keys are read. */
const readsInFlight = 4;

/** Any number of keys, 100 a BatchGetItem, a few in flight; missing items are left out. */
async function batchGetMany(deps: ContactStoreDeps, keyList: Record<string, string>[]): Promise<Record<string, unknown>[]> {
  const chunks: Record<string, string>[][] = [];
  for (let start = 0; start < keyList.length; start += batchGetLimit) chunks.push(keyList.slice(start, start + batchGetLimit));
  const found: Record<string, unknown>[] = [];
  await eachInFlight(chunks, readsInFlight, async (chunk) => {
    found.push(...(await batchGet(deps, chunk)));
  });
  return found;
}

/** Runs `work` on each item, at most `inFlight` at a time. */
async function eachInFlight<T>(items: readonly T[], inFlight: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, items.length) }, worker));
}

async function batchGet(deps: ContactStoreDeps, keyList: Record<string, string>[]): Promise<Record<string, unknown>[]> {
  const found: Record<string, unknown>[] = [];
  let pending: Record<string, unknown>[] = keyList;
  // BatchGetItem may answer only part and return the rest as unprocessed: ask again for those.
  for (let attempt = 0; pending.length > 0; attempt += 1) {
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 20 * 2 ** attempt)));
    const result = await deps.documentClient.send(
      new BatchGetCommand({ RequestItems: { [deps.config.TABLE_NAME]: { Keys: pending, ConsistentRead: true } } }),
    );
    found.push(...(result.Responses?.[deps.config.TABLE_NAME] ?? []));
    pending = result.UnprocessedKeys?.[deps.config.TABLE_NAME]?.Keys ?? [];
  }
  return found;
}
