import { GetCommand, PutCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DeliveryChanges, StoredDelivery, WebhookDeliveryStore } from './ports.ts';
import type { DeliveryState, WebhookDelivery } from './webhook-schemas.ts';
import { conditionalWrite, isConditionFailure, putAll } from '../platform/store/dynamo.ts';
import { toRecord } from '../platform/store/items.ts';
import { keys } from '../platform/store/keys.ts';


const deliveryFieldOrder = [
  'id',
  'endpointId',
  'eventId',
  'eventType',
  'state',
  'attempts',
  'lastStatusCode',
  'lastError',
  'lastAttemptAt',
  'nextAttemptAt',
  'deliveredAt',
  'deadLetteredAt',
  'createdAt',
  'updatedAt',
];

/** Storage-only attributes of a delivery item, besides the keys: the request body and the organization. */
const toDelivery = (item: Record<string, unknown>): WebhookDelivery => {
  const { body: _body, orgId: _orgId, ...visible } = item;
  return toRecord<WebhookDelivery>(visible, deliveryFieldOrder);
};

/**
 * Deliveries live in their endpoint's partition (`ORG#<org>#WEBHOOK#<endpoint>`, `DELIVERY#<id>`); their ids are
 * ordered by the event's time, so a Query lists them in `createdAt` order without an index. Each item keeps the
 * request body, so later attempts and replays send exactly what the first one did, and expires after the retention.
 */
export class DynamoWebhookDeliveryStore implements WebhookDeliveryStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.client = client;
    this.tableName = tableName;
  }

  async create(stored: StoredDelivery, expiresAt: number): Promise<boolean> {
    return conditionalWrite(
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: this.itemOf(stored, expiresAt),
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
  }

  async recordDelivered(stored: readonly StoredDelivery[], expiresAt: number): Promise<void> {
    await putAll(this.client, this.tableName, stored.map((one) => this.itemOf(one, expiresAt)));
  }

  private itemOf({ orgId, delivery, body }: StoredDelivery, expiresAt: number): Record<string, unknown> {
    return { ...keys.webhookDelivery(orgId, delivery.endpointId, delivery.id), entity: 'webhookDelivery', ...delivery, orgId, body, expiresAt };
  }

  async get(orgId: string, endpointId: string, deliveryId: string): Promise<StoredDelivery | undefined> {
    const { Item: item } = await this.client.send(
      new GetCommand({ TableName: this.tableName, Key: keys.webhookDelivery(orgId, endpointId, deliveryId), ConsistentRead: true }),
    );
    return item ? { orgId, delivery: toDelivery(item), body: String(item.body) } : undefined;
  }

  async recordAttempt(orgId: string, endpointId: string, deliveryId: string, expectedAttempts: number, changes: DeliveryChanges): Promise<boolean> {
    const names: Record<string, string> = { '#state': 'state', '#attempts': 'attempts' };
    const values: Record<string, unknown> = { ':pending': 'PENDING', ':expected': expectedAttempts };
    const sets: string[] = [];
    const removals: string[] = [];
    for (const [field, value] of Object.entries(changes)) {
      names[`#${field}`] = field;
      if (value === undefined) removals.push(`#${field}`);
      else {
        values[`:${field}`] = value;
        sets.push(`#${field} = :${field}`);
      }
    }
    return conditionalWrite(
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: keys.webhookDelivery(orgId, endpointId, deliveryId),
          UpdateExpression: [sets.length ? `SET ${sets.join(', ')}` : '', removals.length ? `REMOVE ${removals.join(', ')}` : ''].join(' ').trim(),
          ConditionExpression: '#state = :pending AND #attempts = :expected',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        }),
      ),
    );
  }

  async reopen(orgId: string, endpointId: string, deliveryId: string, at: string): Promise<WebhookDelivery | 'pending' | 'missing'> {
    try {
      const { Attributes: item } = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: keys.webhookDelivery(orgId, endpointId, deliveryId),
          // The end it had no longer holds; the replay's own outcome sets `deliveredAt` or `deadLetteredAt` again.
          UpdateExpression: 'SET #state = :pending, #nextAttemptAt = :at, #updatedAt = :at REMOVE #deliveredAt, #deadLetteredAt',
          ConditionExpression: 'attribute_exists(pk) AND #state <> :pending',
          ExpressionAttributeNames: {
            '#state': 'state',
            '#nextAttemptAt': 'nextAttemptAt',
            '#updatedAt': 'updatedAt',
            '#deliveredAt': 'deliveredAt',
            '#deadLetteredAt': 'deadLetteredAt',
          },
          ExpressionAttributeValues: { ':pending': 'PENDING', ':at': at },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return toDelivery(item ?? {});
    } catch (error) {
      if (isConditionFailure(error)) return (error as { Item?: unknown }).Item ? 'pending' : 'missing';
      throw error;
    }
  }

  async list(
    orgId: string,
    endpointId: string,
    options: { state?: DeliveryState | undefined; direction: 'asc' | 'desc'; limit: number; after?: string | undefined },
  ): Promise<WebhookDelivery[]> {
    const deliveries: WebhookDelivery[] = [];
    let startKey: Record<string, unknown> | undefined = options.after === undefined ? undefined : keys.webhookDelivery(orgId, endpointId, options.after);
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
          ScanIndexForward: options.direction === 'asc',
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
          // A state filter applies after the read, so only an unfiltered query can stop DynamoDB at the page's end.
          ...(options.state ? {} : { Limit: options.limit - deliveries.length }),
          // The bodies stay behind: a page of deliveries reads only their bookkeeping.
          ProjectionExpression: deliveryFieldOrder.map((field) => `#${field}`).join(', '),
          ExpressionAttributeNames: Object.fromEntries(deliveryFieldOrder.map((field) => [`#${field}`, field])),
          ExpressionAttributeValues: {
            ':pk': keys.webhookDeliveries(orgId, endpointId),
            ':prefix': keys.webhookDeliveryPrefix,
            ...(options.state ? { ':state': options.state } : {}),
          },
          ...(options.state ? { FilterExpression: '#state = :state' } : {}),
        }),
      );
      for (const item of page.Items ?? []) deliveries.push(toDelivery(item));
      startKey = page.LastEvaluatedKey;
    } while (startKey && deliveries.length < options.limit);
    return deliveries.slice(0, options.limit);
  }
}
