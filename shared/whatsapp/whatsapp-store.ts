import { DeleteCommand, GetCommand, PutCommand, TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DomainEvent } from '../events/events.ts';
import { ConcurrentModificationError, WhatsappNumberTakenError } from '../platform/errors.ts';
import type { StoredSession } from '../conversations/ports.ts';
import type { Message } from '../conversations/session-schemas.ts';
import type { SecretCipher, SecretContext } from '../platform/ports.ts';
import type { DeliveryStatus, StoredWhatsappNumber, WhatsappSecrets, WhatsappSend } from './whatsapp-schemas.ts';
import { deleteClaimed, putClaimed } from '../platform/store/claimed-item.ts';
import { conditionalWrite, putIfUnchanged } from '../platform/store/dynamo.ts';
import { toRecord } from '../platform/store/items.ts';
import { keys } from '../platform/store/keys.ts';
import { queryAll } from '../platform/store/query-all.ts';
import { sessionCreationWrites } from '../conversations/session-store.ts';

const numberFieldOrder = ['id', 'phoneNumberId', 'displayPhoneNumber', 'agentId', 'label', 'unsupportedMessageReply', 'createdAt', 'updatedAt'];

type SecretName = keyof WhatsappSecrets;

const secretPurposes: Record<SecretName, SecretContext['purpose']> = {
  accessToken: 'whatsapp-access-token',
  appSecret: 'whatsapp-app-secret',
  verifyToken: 'whatsapp-verify-token',
};

/** A number as read from the table: its secrets still sealed, opened one by one when needed. */
export interface SealedWhatsappNumber extends StoredWhatsappNumber {
  sealed: Record<SecretName, string>;
}

/** Delivery statuses only move forward (`read` after `delivered`, whatever order Meta's notifications arrive in). */
export const deliveryRank: Record<DeliveryStatus, number> = { sent: 1, delivered: 2, read: 3, failed: 4 };

/** How long a taken inbound message id is remembered: Meta retries a notification for up to 7 days. */
const inboundRetentionSeconds = 8 * 24 * 60 * 60;
/** Status notifications of a message can follow it for a while (read receipts days later). */
const outboundRetentionSeconds = 30 * 24 * 60 * 60;

/**
 * WhatsApp numbers (`ORG#<org>` / `WANUMBER#<id>`, their three secrets sealed, plus the worldwide claim
 * `WAPHONE#<phone number id>`), and per number: the customer → session pointers, the inbound message ids taken
 * and the outbound message ids sent (docs/whatsapp.md#storage).
 */
export class DynamoWhatsappStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly cipher: SecretCipher;

  constructor(client: DynamoDBDocumentClient, tableName: string, cipher: SecretCipher) {
    this.client = client;
    this.tableName = tableName;
    this.cipher = cipher;
  }

  async createNumber(number: StoredWhatsappNumber, secrets: WhatsappSecrets): Promise<void> {
    const sealed = await this.seal(number.orgId, number.id, secrets);
    const claim = { ...keys.whatsappNumberClaim(number.phoneNumberId), entity: 'whatsappNumberClaim', orgId: number.orgId, numberId: number.id };
    if (!(await putClaimed(this.client, this.tableName, claim, this.numberItem(number, sealed)))) {
      throw new WhatsappNumberTakenError(`Phone number id ${number.phoneNumberId} is already connected (a number belongs to one organization).`);
    }
  }

  async getNumber(orgId: string, numberId: string): Promise<SealedWhatsappNumber | undefined> {
    const result = await this.client.send(new GetCommand({ TableName: this.tableName, Key: keys.whatsappNumber(orgId, numberId), ConsistentRead: true }));
    return result.Item ? toNumber(result.Item) : undefined;
  }

  async listNumbers(orgId: string): Promise<SealedWhatsappNumber[]> {
    const items = await queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': keys.orgPartition(orgId), ':prefix': keys.whatsappNumberPrefix },
      ConsistentRead: true,
    });
    return items.map(toNumber).sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0));
  }

  /** Writes `next` (with any secrets given replacing the stored ones) if the stored number is still `previous`. */
  async replaceNumber(previous: SealedWhatsappNumber, next: StoredWhatsappNumber, secrets: Partial<WhatsappSecrets>): Promise<void> {
    const sealed = { ...previous.sealed, ...(await this.seal(next.orgId, next.id, secrets)) };
    const applied = await putIfUnchanged(this.client, this.tableName, this.numberItem(next, sealed), previous.updatedAt);
    if (!applied) throw new ConcurrentModificationError('The number changed meanwhile; read it again and retry.');
  }

  async deleteNumber(orgId: string, numberId: string): Promise<boolean> {
    const number = await this.getNumber(orgId, numberId);
    return number !== undefined && deleteClaimed(this.client, this.tableName, orgId, keys.whatsappNumberClaim(number.phoneNumberId), keys.whatsappNumber(orgId, numberId));
  }

  /** The organization and number that own Meta's phone number id. */
  async owner(phoneNumberId: string): Promise<{ orgId: string; numberId: string } | undefined> {
    const result = await this.client.send(new GetCommand({ TableName: this.tableName, Key: keys.whatsappNumberClaim(phoneNumberId) }));
    return result.Item ? { orgId: result.Item.orgId as string, numberId: result.Item.numberId as string } : undefined;
  }

  async openSecret(number: SealedWhatsappNumber, name: SecretName): Promise<string> {
    return this.cipher.open(number.sealed[name], secretContext(number.orgId, number.id, name));
  }

  /**
   * The customer's last session with this number, the newest of those their keys point to: their BSUID, or their
   * phone number without one, and their phone number too when a message names both (a conversation a template
   * started is keyed by the phone number it went to, and the reply names the BSUID as well).
   */
  async customerSession(orgId: string, numberId: string, customerKeys: readonly string[]): Promise<string | undefined> {
    const items = await Promise.all(
      [...new Set(customerKeys)].map(async (customerKey) => {
        const result = await this.client.send(new GetCommand({ TableName: this.tableName, Key: keys.whatsappCustomer(orgId, numberId, customerKey), ConsistentRead: true }));
        return result.Item as { sessionId: string; updatedAt: string } | undefined;
      }),
    );
    const newest = items.reduce<{ sessionId: string; updatedAt: string } | undefined>((found, item) => (item && (!found || item.updatedAt > found.updatedAt) ? item : found), undefined);
    return newest?.sessionId;
  }

  /**
   * The customer's new session and the pointer to it, in one transaction; a session a template starts comes with
   * its first message, the template's, and the `OUTBOUND#<wamid>` item its statuses find it by.
   */
  async openCustomerSession(
    session: StoredSession,
    expiresAt: number,
    events: DomainEvent[],
    customer: { numberId: string; customerKey: string },
    template?: { message: Message; wamid: string },
  ): Promise<void> {
    await this.client.send(
      new TransactWriteCommand({
        TransactItems: [
          ...sessionCreationWrites(this.tableName, session, expiresAt, events, template ? [template.message] : []),
          {
            Put: {
              TableName: this.tableName,
              Item: { ...keys.whatsappCustomer(session.orgId, customer.numberId, customer.customerKey), entity: 'whatsappCustomer', sessionId: session.id, updatedAt: session.createdAt },
            },
          },
          ...(template ? [{ Put: { TableName: this.tableName, Item: this.outboundItem(session.orgId, customer.numberId, template.wamid, { sessionId: session.id, seq: 1, index: 0 }, Date.parse(session.createdAt)) } }] : []),
        ],
      }),
    );
  }

  /** Takes an inbound message id; false when it was taken before (a redelivery). */
  async claimInbound(orgId: string, numberId: string, wamid: string, nowMs: number): Promise<boolean> {
    return conditionalWrite(
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...keys.whatsappInbound(orgId, numberId, wamid), entity: 'whatsappInbound', expiresAt: Math.floor(nowMs / 1000) + inboundRetentionSeconds },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
  }

  /** Gives a taken id back when its handling failed before anything was answered: the queue's retry takes it again. */
  async releaseInbound(orgId: string, numberId: string, wamid: string): Promise<void> {
    await this.client.send(new DeleteCommand({ TableName: this.tableName, Key: keys.whatsappInbound(orgId, numberId, wamid) }));
  }

  /**
   * Records on an assistant message (session `seq`, id `messageId`) what was sent for it, `metadata.whatsapp`, and
   * for each accepted message which reply and part it is (for its status notifications).
   */
  async recordSends(target: { orgId: string; sessionId: string; seq: number; messageId: string; numberId: string }, sends: WhatsappSend[], nowMs: number): Promise<void> {
    await this.client.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Update: {
              TableName: this.tableName,
              Key: keys.message(target.orgId, target.sessionId, target.seq),
              UpdateExpression: 'SET metadata.whatsapp = :whatsapp',
              ConditionExpression: 'id = :id',
              ExpressionAttributeValues: { ':whatsapp': { sends }, ':id': target.messageId },
            },
          },
          ...sends.flatMap((send, index) =>
            send.wamid ? [{ Put: { TableName: this.tableName, Item: this.outboundItem(target.orgId, target.numberId, send.wamid, { sessionId: target.sessionId, seq: target.seq, index }, nowMs) } }] : [],
          ),
        ],
      }),
    );
  }

  async outbound(orgId: string, numberId: string, wamid: string): Promise<{ sessionId: string; seq: number; index: number } | undefined> {
    const result = await this.client.send(new GetCommand({ TableName: this.tableName, Key: keys.whatsappOutbound(orgId, numberId, wamid), ConsistentRead: true }));
    return result.Item ? { sessionId: result.Item.sessionId as string, seq: result.Item.seq as number, index: result.Item.index as number } : undefined;
  }

  /** Moves one send's status forward; false when it already stands at that status or a later one. */
  async advanceSend(orgId: string, at: { sessionId: string; seq: number; index: number }, status: DeliveryStatus, updatedAt: string, error?: { code: string; message: string }): Promise<boolean> {
    const send = `metadata.whatsapp.sends[${at.index}]`;
    return conditionalWrite(
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: keys.message(orgId, at.sessionId, at.seq),
          UpdateExpression: `SET ${send}.#status = :status, ${send}.statusRank = :rank, ${send}.updatedAt = :at${error ? `, ${send}.#error = :error` : ''}`,
          ConditionExpression: `attribute_exists(${send}) AND (attribute_not_exists(${send}.statusRank) OR ${send}.statusRank < :rank)`,
          ExpressionAttributeNames: { '#status': 'status', ...(error ? { '#error': 'error' } : {}) },
          ExpressionAttributeValues: { ':status': status, ':rank': deliveryRank[status], ':at': updatedAt, ...(error ? { ':error': error } : {}) },
        }),
      ),
    );
  }

  /** Which reply and part a sent message is, for its status notifications (kept 30 days). */
  private outboundItem(orgId: string, numberId: string, wamid: string, at: { sessionId: string; seq: number; index: number }, nowMs: number): Record<string, unknown> {
    return { ...keys.whatsappOutbound(orgId, numberId, wamid), entity: 'whatsappOutbound', ...at, expiresAt: Math.floor(nowMs / 1000) + outboundRetentionSeconds };
  }

  private async seal(orgId: string, numberId: string, secrets: Partial<WhatsappSecrets>): Promise<Partial<Record<SecretName, string>>> {
    const entries = await Promise.all(
      (Object.entries(secrets) as [SecretName, string][]).map(async ([name, value]) => [name, await this.cipher.seal(value, secretContext(orgId, numberId, name))] as const),
    );
    return Object.fromEntries(entries);
  }

  private numberItem(number: StoredWhatsappNumber, sealed: Partial<Record<SecretName, string>>): Record<string, unknown> {
    return { ...keys.whatsappNumber(number.orgId, number.id), entity: 'whatsappNumber', ...number, sealed };
  }
}

const secretContext = (orgId: string, numberId: string, name: SecretName): SecretContext => ({ orgId, purpose: secretPurposes[name], id: numberId });

const toNumber = (item: Record<string, unknown>): SealedWhatsappNumber => ({
  ...toRecord<StoredWhatsappNumber>(item, numberFieldOrder),
  orgId: item.orgId as string,
  sealed: item.sealed as Record<SecretName, string>,
});

export type WhatsappStore = DynamoWhatsappStore;
