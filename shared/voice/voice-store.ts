import { DeleteCommand, GetCommand, PutCommand, TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DomainEvent } from '../events/events.ts';
import { ConcurrentModificationError, PhoneNumberTakenError } from '../platform/errors.ts';
import type { StoredSession } from '../conversations/ports.ts';
import type { SecretCipher, SecretContext } from '../platform/ports.ts';
import type { PhoneNumberOwner, StoredPhoneNumber, TelephonyCredentials, VoiceStore } from './ports.ts';
import type { TwilioCallStatus, VoiceCall } from './voice-schemas.ts';
import { deleteClaimed, putClaimed } from '../platform/store/claimed-item.ts';
import { conditionalWrite, putIfUnchanged, sendTransaction, transactionCancellationCodes } from '../platform/store/dynamo.ts';
import { toRecord } from '../platform/store/items.ts';
import { keys } from '../platform/store/keys.ts';
import { queryAll } from '../platform/store/query-all.ts';
import { outboxPut } from '../events/outbox.ts';
import { sessionCreationWrites } from '../conversations/session-store.ts';

const phoneNumberFieldOrder = ['id', 'phone_number', 'provider', 'label', 'agentId', 'record_inbound_calls', 'createdAt', 'updatedAt'];

/** Statuses only move forward; every final status ranks last, so the first one to arrive wins. */
const statusRank: Record<TwilioCallStatus, number> = {
  queued: 0,
  initiated: 1,
  ringing: 2,
  'in-progress': 3,
  completed: 4,
  busy: 4,
  'no-answer': 4,
  failed: 4,
  canceled: 4,
};

/** API Gateway closes a WebSocket connection after 2 hours; its binding is kept a little longer. */
const connectionRetentionSeconds = 3 * 60 * 60;

const tokenContext = (orgId: string): SecretContext => ({ orgId, purpose: 'telephony-auth-token', id: 'twilio' });

/**
 * Phone numbers (`ORG#<org>` / `PHONE#<id>`, plus the worldwide claim `PHONENUMBER#<e164>`), the carrier
 * credentials (`TELEPHONY#twilio`, the auth token sealed), calls (`#CALL` in the session's partition) and the
 * bindings of ConversationRelay connections (docs/voice.md#storage).
 */
export class DynamoVoiceStore implements VoiceStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly cipher: SecretCipher;

  constructor(client: DynamoDBDocumentClient, tableName: string, cipher: SecretCipher) {
    this.client = client;
    this.tableName = tableName;
    this.cipher = cipher;
  }

  async createPhoneNumber(number: StoredPhoneNumber): Promise<void> {
    const claim = { ...keys.phoneNumberClaim(number.phone_number), entity: 'phoneNumberClaim', orgId: number.orgId, phoneNumberId: number.id };
    if (!(await putClaimed(this.client, this.tableName, claim, { ...keys.phoneNumber(number.orgId, number.id), entity: 'phoneNumber', ...number }))) {
      throw new PhoneNumberTakenError(`${number.phone_number} is already imported (numbers belong to one organization).`);
    }
  }

  async getPhoneNumber(orgId: string, phoneNumberId: string): Promise<StoredPhoneNumber | undefined> {
    const result = await this.client.send(new GetCommand({ TableName: this.tableName, Key: keys.phoneNumber(orgId, phoneNumberId), ConsistentRead: true }));
    return result.Item ? toPhoneNumber(result.Item) : undefined;
  }

  async listPhoneNumbers(orgId: string, limit: number): Promise<StoredPhoneNumber[]> {
    const items = await queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': keys.orgPartition(orgId), ':prefix': keys.phoneNumberPrefix },
      ConsistentRead: true,
    });
    return items
      .map(toPhoneNumber)
      .sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0))
      .slice(0, limit);
  }

  async replacePhoneNumber(previous: StoredPhoneNumber, next: StoredPhoneNumber): Promise<void> {
    const applied = await putIfUnchanged(this.client, this.tableName, { ...keys.phoneNumber(next.orgId, next.id), entity: 'phoneNumber', ...next }, previous.updatedAt);
    if (!applied) throw new ConcurrentModificationError('The phone number changed meanwhile; read it again and retry.');
  }

  async deletePhoneNumber(orgId: string, phoneNumberId: string): Promise<boolean> {
    const number = await this.getPhoneNumber(orgId, phoneNumberId);
    return number !== undefined && deleteClaimed(this.client, this.tableName, orgId, keys.phoneNumberClaim(number.phone_number), keys.phoneNumber(orgId, phoneNumberId));
  }

  async phoneNumberOwner(e164: string): Promise<PhoneNumberOwner | undefined> {
    const result = await this.client.send(new GetCommand({ TableName: this.tableName, Key: keys.phoneNumberClaim(e164), ConsistentRead: true }));
    return result.Item ? { orgId: result.Item.orgId as string, phoneNumberId: result.Item.phoneNumberId as string } : undefined;
  }

  async putCredentials(orgId: string, credentials: TelephonyCredentials, updatedAt: string): Promise<void> {
    const authToken = await this.cipher.seal(credentials.authToken, tokenContext(orgId));
    await this.client.send(
      new PutCommand({
        TableName: this.tableName,
        Item: { ...keys.telephonyCredentials(orgId), entity: 'telephonyCredentials', provider: 'twilio', accountSid: credentials.accountSid, authToken, updatedAt },
      }),
    );
  }

  async getCredentials(orgId: string): Promise<(TelephonyCredentials & { updatedAt: string }) | undefined> {
    const result = await this.client.send(new GetCommand({ TableName: this.tableName, Key: keys.telephonyCredentials(orgId), ConsistentRead: true }));
    if (!result.Item) return undefined;
    return {
      accountSid: result.Item.accountSid as string,
      authToken: await this.cipher.open(result.Item.authToken as string, tokenContext(orgId)),
      updatedAt: result.Item.updatedAt as string,
    };
  }

  async deleteCredentials(orgId: string): Promise<boolean> {
    return conditionalWrite(
      this.client.send(new DeleteCommand({ TableName: this.tableName, Key: keys.telephonyCredentials(orgId), ConditionExpression: 'attribute_exists(pk)' })),
    );
  }

  async createCall(session: StoredSession, expiresAt: number, call: VoiceCall, events: DomainEvent[]): Promise<boolean> {
    try {
      await this.client.send(
        new TransactWriteCommand({
          TransactItems: [...sessionCreationWrites(this.tableName, session, expiresAt, events), { Put: { TableName: this.tableName, Item: this.callItem(call) } }],
        }),
      );
      return true;
    } catch (error) {
      if (transactionCancellationCodes(error)?.[0] === 'ConditionalCheckFailed') return false;
      throw error;
    }
  }

  async recordCarrierCall(session: StoredSession, callSid: string | undefined, created: DomainEvent): Promise<void> {
    const outbox = outboxPut(this.tableName, keys.sessionPartition(session.orgId, session.id), created);
    if (callSid === undefined) {
      await this.client.send(new PutCommand(outbox.Put));
      return;
    }
    await this.client.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Update: {
              TableName: this.tableName,
              Key: keys.session(session.orgId, session.id),
              UpdateExpression: 'SET metadata.roomName = :sid',
              ExpressionAttributeValues: { ':sid': callSid },
            },
          },
          {
            Update: {
              TableName: this.tableName,
              Key: keys.voiceCall(session.orgId, session.id),
              UpdateExpression: 'SET callSid = :sid',
              ExpressionAttributeValues: { ':sid': callSid },
            },
          },
          outbox,
        ],
      }),
    );
  }

  async getCall(orgId: string, sessionId: string): Promise<VoiceCall | undefined> {
    const result = await this.client.send(new GetCommand({ TableName: this.tableName, Key: keys.voiceCall(orgId, sessionId), ConsistentRead: true }));
    return result.Item ? toRecord<VoiceCall>(result.Item, []) : undefined;
  }

  async advanceCall(orgId: string, sessionId: string, status: TwilioCallStatus, changes: Partial<VoiceCall>): Promise<boolean> {
    const fields = Object.entries({ ...changes, status, statusRank: statusRank[status] }).filter(([, value]) => value !== undefined);
    return conditionalWrite(
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: keys.voiceCall(orgId, sessionId),
          UpdateExpression: `SET ${fields.map((_, index) => `#f${index} = :v${index}`).join(', ')}`,
          ConditionExpression: 'attribute_exists(pk) AND statusRank < :rank',
          ExpressionAttributeNames: Object.fromEntries(fields.map(([name], index) => [`#f${index}`, name])),
          ExpressionAttributeValues: { ...Object.fromEntries(fields.map(([, value], index) => [`:v${index}`, value])), ':rank': statusRank[status] },
        }),
      ),
    );
  }

  async markAgentHangup(orgId: string, sessionId: string, at: string): Promise<void> {
    await this.client.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: keys.voiceCall(orgId, sessionId),
        UpdateExpression: 'SET agentHangupAt = if_not_exists(agentHangupAt, :at)',
        ExpressionAttributeValues: { ':at': at },
      }),
    );
  }

  async recordRecording(orgId: string, sessionId: string, recording: { recordingKey: string; recordingSid: string }): Promise<void> {
    await this.client.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: keys.voiceCall(orgId, sessionId),
        UpdateExpression: 'SET recordingKey = :key, recordingSid = :sid',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':key': recording.recordingKey, ':sid': recording.recordingSid },
      }),
    );
  }

  async offerRelay(orgId: string, sessionId: string, tokenHash: string): Promise<void> {
    // A relay already connected keeps its connection: the URL of this token is then refused like any other.
    await conditionalWrite(
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: keys.voiceCall(orgId, sessionId),
          UpdateExpression: 'SET relayTokenHash = :hash',
          ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(relayConnectionId)',
          ExpressionAttributeValues: { ':hash': tokenHash },
        }),
      ),
    );
  }

  async claimRelay(connectionId: string, orgId: string, sessionId: string, tokenHash: string): Promise<boolean> {
    try {
      await sendTransaction(this.client, [
        {
          Update: {
            TableName: this.tableName,
            Key: keys.voiceCall(orgId, sessionId),
            UpdateExpression: 'SET relayConnectionId = :connection REMOVE relayTokenHash',
            ConditionExpression: 'relayTokenHash = :hash AND attribute_not_exists(relayConnectionId)',
            ExpressionAttributeValues: { ':connection': connectionId, ':hash': tokenHash },
          },
        },
        {
          Put: {
            TableName: this.tableName,
            Item: {
              ...keys.relayConnection(connectionId),
              entity: 'relayConnection',
              orgId,
              sessionId,
              expiresAt: Math.floor(Date.now() / 1000) + connectionRetentionSeconds,
            },
          },
        },
      ]);
      return true;
    } catch (error) {
      if (transactionCancellationCodes(error)?.[0] === 'ConditionalCheckFailed') return false;
      throw error;
    }
  }

  async connection(connectionId: string): Promise<{ orgId: string; sessionId: string } | undefined> {
    const result = await this.client.send(new GetCommand({ TableName: this.tableName, Key: keys.relayConnection(connectionId) }));
    return result.Item ? { orgId: result.Item.orgId as string, sessionId: result.Item.sessionId as string } : undefined;
  }

  private callItem(call: VoiceCall): Record<string, unknown> {
    return { ...keys.voiceCall(call.orgId, call.sessionId), entity: 'voiceCall', ...call, statusRank: statusRank[call.status] };
  }
}

/** Numbers imported before inbound recording existed do not record. */
const toPhoneNumber = (item: Record<string, unknown>): StoredPhoneNumber => ({
  ...toRecord<StoredPhoneNumber>(item, phoneNumberFieldOrder),
  record_inbound_calls: item.record_inbound_calls === true,
  orgId: item.orgId as string,
});
