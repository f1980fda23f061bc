import { DeleteCommand, PutCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { conditionalWrite, type TransactItem } from '../platform/store/dynamo.ts';
import { keys } from '../platform/store/keys.ts';

/** Slot `slot` of an organization's concurrent calls, to be held by `holder` (a session id) until `expiresAt`. */
export interface CallSlotClaim {
  orgId: string;
  slot: number;
  holder: string;
  /** Epoch seconds: past it the slot is free again, whoever held it (and DynamoDB's TTL deletes it). */
  expiresAt: number;
  /** Epoch seconds of the claim: a hold that lapsed before it does not count. */
  now: number;
}

/**
 * The put that takes a slot: it must be free, or its hold lapsed. On its own, or inside the transaction of a
 * campaign's claim, so that the attempt and its slot are taken together.
 */
export function callSlotPut(tableName: string, claim: CallSlotClaim) {
  return {
    TableName: tableName,
    Item: { ...keys.callSlot(claim.orgId, claim.slot), entity: 'callSlot', holder: claim.holder, expiresAt: claim.expiresAt },
    ConditionExpression: 'attribute_not_exists(pk) OR expiresAt < :now',
    ExpressionAttributeValues: { ':now': claim.now },
  } satisfies NonNullable<TransactItem['Put']>;
}

/** An organization's call slots (`ORG#<org>#CALLSLOTS` / `SLOT#<n>`): one item per call in progress. */
export class DynamoCallSlots {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.client = client;
    this.tableName = tableName;
  }

  /** The numbers of the slots held at `now` (epoch seconds). */
  async held(orgId: string, now: number): Promise<number[]> {
    const result = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk',
        FilterExpression: 'expiresAt >= :now',
        ExpressionAttributeValues: { ':pk': keys.callSlots(orgId), ':now': now },
        ConsistentRead: true,
      }),
    );
    return (result.Items ?? []).map((item) => Number((item.sk as string).slice('SLOT#'.length)));
  }

  async claim(claim: CallSlotClaim): Promise<boolean> {
    return conditionalWrite(this.client.send(new PutCommand(callSlotPut(this.tableName, claim))));
  }

  /** Frees what `holder` holds; nothing when it holds nothing (released already, or its hold lapsed and was taken). */
  async release(orgId: string, holder: string): Promise<void> {
    const result = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk',
        FilterExpression: 'holder = :holder',
        ExpressionAttributeValues: { ':pk': keys.callSlots(orgId), ':holder': holder },
        ConsistentRead: true,
      }),
    );
    for (const item of result.Items ?? []) {
      await conditionalWrite(
        this.client.send(
          new DeleteCommand({ TableName: this.tableName, Key: { pk: item.pk, sk: item.sk }, ConditionExpression: 'holder = :holder', ExpressionAttributeValues: { ':holder': holder } }),
        ),
      );
    }
  }
}
