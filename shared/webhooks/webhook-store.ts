import { DeleteCommand, GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { IdempotencyCompletion, SecretCipher, SecretContext } from '../platform/ports.ts';
import type { DeliverableEndpoint, WebhookEndpoint, WebhookStore } from './ports.ts';
import { allEvents } from './webhook-schemas.ts';
import { isSealed } from '../platform/secrets/envelope-cipher.ts';
import { conditionalWrite } from '../platform/store/dynamo.ts';
import { transactWithCompletion } from '../platform/store/idempotency-store.ts';
import { toRecord } from '../platform/store/items.ts';
import { replaceFields } from '../platform/store/replace-fields.ts';
import { keys } from '../platform/store/keys.ts';
import { queryAll } from '../platform/store/query-all.ts';

const webhookFieldOrder = ['id', 'orgId', 'url', 'events', 'description', 'enabled', 'createdAt', 'updatedAt'];

export const toWebhookEndpoint = (item: Record<string, unknown>): WebhookEndpoint => toRecord<WebhookEndpoint>(item, webhookFieldOrder);

/** Both secrets of an endpoint are sealed under its context, so a rotation moves the current one as it is stored. */
const secretContext = (orgId: string, endpointId: string): SecretContext => ({ orgId, purpose: 'webhook-secret', id: endpointId });

/**
 * Webhook endpoints live in their organization's partition (`WEBHOOK#<id>`), with their signing secrets as internal
 * attributes (`secret`, `previousSecret`, `previousSecretValidUntil`) that `toRecord` never lets out. The secrets
 * are sealed by `cipher` (docs/security.md#secrets-at-rest).
 */
export class DynamoWebhookStore implements WebhookStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly cipher: SecretCipher;

  constructor(client: DynamoDBDocumentClient, tableName: string, cipher: SecretCipher) {
    this.client = client;
    this.tableName = tableName;
    this.cipher = cipher;
  }

  async create(endpoint: WebhookEndpoint, secret: string, completion?: IdempotencyCompletion): Promise<void> {
    const sealed = await this.cipher.seal(secret, secretContext(endpoint.orgId, endpoint.id));
    const put = {
      TableName: this.tableName,
      Item: { ...keys.webhook(endpoint.orgId, endpoint.id), entity: 'webhook', ...endpoint, secret: sealed },
      ConditionExpression: 'attribute_not_exists(pk)',
    };
    // Alone, one plain Put: a transaction costs twice the write units.
    if (completion) await transactWithCompletion(this.client, this.tableName, [{ Put: put }], completion);
    else await this.client.send(new PutCommand(put));
  }

  async get(orgId: string, endpointId: string): Promise<WebhookEndpoint | undefined> {
    const item = await this.item(orgId, endpointId);
    return item ? toWebhookEndpoint(item) : undefined;
  }

  async list(orgId: string): Promise<WebhookEndpoint[]> {
    return (await this.items(orgId)).map(toWebhookEndpoint);
  }

  /** Writes the visible fields only, so a rotation that lands meanwhile is kept; conditioned on `updatedAt`. */
  async replace(previous: WebhookEndpoint, next: WebhookEndpoint): Promise<void> {
    await replaceFields(this.client, { tableName: this.tableName, key: keys.webhook(next.orgId, next.id), what: 'webhook endpoint' }, previous, next);
  }

  async delete(orgId: string, endpointId: string): Promise<boolean> {
    return conditionalWrite(
      this.client.send(
        new DeleteCommand({ TableName: this.tableName, Key: keys.webhook(orgId, endpointId), ConditionExpression: 'attribute_exists(pk)' }),
      ),
    );
  }

  /**
   * One conditional update, no read first: the current secret moves to `previousSecret` (DynamoDB evaluates every
   * path of an update against the item as it was before it), the new one takes its place. Visible fields and
   * `updatedAt` are left alone, so a rotation never conflicts with a PATCH.
   */
  async rotateSecret(orgId: string, endpointId: string, secret: string, previousValidUntil: number): Promise<boolean> {
    const context = secretContext(orgId, endpointId);
    const sealed = await this.cipher.seal(secret, context);
    const write = this.client.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: keys.webhook(orgId, endpointId),
        UpdateExpression: 'SET #previousSecret = #secret, #secret = :secret, #previousSecretValidUntil = :validUntil',
        ConditionExpression: 'attribute_exists(pk) AND attribute_exists(#secret)',
        ExpressionAttributeNames: { '#secret': 'secret', '#previousSecret': 'previousSecret', '#previousSecretValidUntil': 'previousSecretValidUntil' },
        ExpressionAttributeValues: { ':secret': sealed, ':validUntil': previousValidUntil },
        ReturnValues: 'UPDATED_OLD',
      }),
    );
    if (!(await conditionalWrite(write))) return false;
    const replaced = (await write).Attributes?.secret;
    if (typeof replaced === 'string' && !isSealed(replaced)) await this.sealLegacyPreviousSecret(orgId, endpointId, replaced);
    return true;
  }

  /**
   * A secret stored in the clear before sealing began has just become the previous one: sealed now, unless another
   * rotation moved it on meanwhile (the condition), so no plaintext outlives its endpoint's first rotation.
   */
  private async sealLegacyPreviousSecret(orgId: string, endpointId: string, plaintext: string): Promise<void> {
    const sealed = await this.cipher.seal(plaintext, secretContext(orgId, endpointId));
    await conditionalWrite(
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: keys.webhook(orgId, endpointId),
          UpdateExpression: 'SET #previousSecret = :sealed',
          ConditionExpression: '#previousSecret = :plaintext',
          ExpressionAttributeNames: { '#previousSecret': 'previousSecret' },
          ExpressionAttributeValues: { ':sealed': sealed, ':plaintext': plaintext },
        }),
      ),
    );
  }

  async disable(orgId: string, endpointId: string, at: string): Promise<boolean> {
    return conditionalWrite(
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: keys.webhook(orgId, endpointId),
          UpdateExpression: 'SET #enabled = :false, #updatedAt = :at',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#enabled': 'enabled', '#updatedAt': 'updatedAt' },
          ExpressionAttributeValues: { ':false': false, ':at': at },
        }),
      ),
    );
  }

  async deliverableFor(orgId: string, eventType: string, nowMs: number): Promise<DeliverableEndpoint[]> {
    const items = await this.items(orgId, {
      FilterExpression: '#enabled = :enabled AND (contains(#events, :type) OR contains(#events, :all))',
      ExpressionAttributeNames: { '#enabled': 'enabled', '#events': 'events' },
      ExpressionAttributeValues: { ':enabled': true, ':type': eventType, ':all': allEvents },
    });
    return Promise.all(items.map((item) => this.toDeliverable(item, nowMs)));
  }

  async deliverable(orgId: string, endpointId: string, nowMs: number): Promise<DeliverableEndpoint | undefined> {
    const item = await this.item(orgId, endpointId);
    return item ? this.toDeliverable(item, nowMs) : undefined;
  }

  /**
   * The endpoint with the secrets that sign its deliveries now: the current one, then the previous one while the
   * rotation overlap lasts (`previousSecretValidUntil`, epoch ms, still ahead of `nowMs`); an expired one is never opened.
   */
  private async toDeliverable(item: Record<string, unknown>, nowMs: number): Promise<DeliverableEndpoint> {
    const endpoint = toWebhookEndpoint(item);
    const stored = typeof item.secret === 'string' ? [item.secret] : [];
    const validUntil = item.previousSecretValidUntil;
    if (typeof item.previousSecret === 'string' && typeof validUntil === 'number' && validUntil > nowMs) stored.push(item.previousSecret);
    const context = secretContext(endpoint.orgId, endpoint.id);
    return { ...endpoint, secrets: await Promise.all(stored.map((value) => this.cipher.open(value, context))) };
  }

  private async item(orgId: string, endpointId: string): Promise<Record<string, unknown> | undefined> {
    const result = await this.client.send(new GetCommand({ TableName: this.tableName, Key: keys.webhook(orgId, endpointId), ConsistentRead: true }));
    return result.Item;
  }

  /** Every endpoint item of the organization (strongly consistent), optionally narrowed by a filter. */
  private items(
    orgId: string,
    filter?: { FilterExpression: string; ExpressionAttributeNames: Record<string, string>; ExpressionAttributeValues: Record<string, unknown> },
  ): Promise<Record<string, unknown>[]> {
    return queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ConsistentRead: true,
      ...(filter ? { FilterExpression: filter.FilterExpression, ExpressionAttributeNames: filter.ExpressionAttributeNames } : {}),
      ExpressionAttributeValues: { ':pk': keys.orgPartition(orgId), ':prefix': keys.webhookPrefix, ...filter?.ExpressionAttributeValues },
    });
  }
}
