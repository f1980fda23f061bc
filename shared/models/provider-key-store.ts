import { DeleteCommand, GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SecretCipher, SecretContext } from '../platform/ports.ts';
import { conditionalWrite } from '../platform/store/dynamo.ts';
import { keys } from '../platform/store/keys.ts';
import { queryAll } from '../platform/store/query-all.ts';
import type { ProviderKeyStore } from './ports.ts';
import type { ProviderConnection, ProviderKey, ProviderKeyInput, ProviderKeyProvider } from './provider-key-schemas.ts';

const keyContext = (orgId: string, provider: ProviderKeyProvider): SecretContext => ({ orgId, purpose: 'provider-api-key', id: provider });

/** Every field a put sets or removes (baseUrl and models are one or the other). */
const storedFields = ['entity', 'provider', 'apiKey', 'apiKeyHint', 'updatedAt', 'createdAt', 'baseUrl', 'models'];

/** The hint the API shows for a key: its last four characters. */
const hintOf = (apiKey: string): string => `…${apiKey.slice(-4)}`;

/**
 * An organization's own provider keys, one item each (`ORG#<org>` / `PROVIDERKEY#<provider>`): the key sealed
 * (bound to the organization and the provider), its hint, base URL and model names in clear (docs/models.md#storage).
 */
export class DynamoProviderKeyStore implements ProviderKeyStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly cipher: SecretCipher;

  constructor(client: DynamoDBDocumentClient, tableName: string, cipher: SecretCipher) {
    this.client = client;
    this.tableName = tableName;
    this.cipher = cipher;
  }

  async put(orgId: string, provider: ProviderKeyProvider, input: ProviderKeyInput, updatedAt: string): Promise<ProviderKey> {
    const sealed = await this.cipher.seal(input.apiKey, keyContext(orgId, provider));
    const set = ['#entity = :entity', '#provider = :provider', '#apiKey = :apiKey', '#apiKeyHint = :hint', '#updatedAt = :now', '#createdAt = if_not_exists(#createdAt, :now)'];
    if (input.baseUrl) set.push('#baseUrl = :baseUrl');
    if (input.models) set.push('#models = :models');
    const removed = [...(input.baseUrl ? [] : ['#baseUrl']), ...(input.models ? [] : ['#models'])];
    const result = await this.client.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: keys.providerKey(orgId, provider),
        // A replaced key drops the previous one's base URL and models: the body is the whole resource.
        UpdateExpression: `SET ${set.join(', ')}${removed.length > 0 ? ` REMOVE ${removed.join(', ')}` : ''}`,
        ExpressionAttributeNames: Object.fromEntries(storedFields.map((name) => [`#${name}`, name])),
        ExpressionAttributeValues: {
          ':entity': 'providerKey',
          ':provider': provider,
          ':apiKey': sealed,
          ':hint': hintOf(input.apiKey),
          ':now': updatedAt,
          ...(input.baseUrl ? { ':baseUrl': input.baseUrl } : {}),
          ...(input.models ? { ':models': input.models } : {}),
        },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return toProviderKey(result.Attributes!);
  }

  async get(orgId: string, provider: ProviderKeyProvider): Promise<ProviderKey | undefined> {
    const item = await this.item(orgId, provider);
    return item && toProviderKey(item);
  }

  async list(orgId: string): Promise<ProviderKey[]> {
    const items = await queryAll(this.client, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': keys.orgPartition(orgId), ':prefix': keys.providerKeyPrefix },
      ConsistentRead: true,
    });
    return items.map(toProviderKey);
  }

  async connection(orgId: string, provider: ProviderKeyProvider): Promise<ProviderConnection | undefined> {
    const item = await this.item(orgId, provider);
    if (!item) return undefined;
    return {
      provider,
      apiKey: await this.cipher.open(item.apiKey as string, keyContext(orgId, provider)),
      baseUrl: item.baseUrl as string | undefined,
      models: (item.models as string[] | undefined) ?? [],
      updatedAt: item.updatedAt as string,
    };
  }

  async delete(orgId: string, provider: ProviderKeyProvider): Promise<boolean> {
    return conditionalWrite(
      this.client.send(new DeleteCommand({ TableName: this.tableName, Key: keys.providerKey(orgId, provider), ConditionExpression: 'attribute_exists(pk)' })),
    );
  }

  private async item(orgId: string, provider: ProviderKeyProvider): Promise<Record<string, unknown> | undefined> {
    const result = await this.client.send(new GetCommand({ TableName: this.tableName, Key: keys.providerKey(orgId, provider), ConsistentRead: true }));
    return result.Item;
  }
}

function toProviderKey(item: Record<string, unknown>): ProviderKey {
  return {
    provider: item.provider as ProviderKey['provider'],
    apiKeyHint: item.apiKeyHint as string,
    ...(item.baseUrl ? { baseUrl: item.baseUrl as string } : {}),
    ...(item.models ? { models: item.models as string[] } : {}),
    createdAt: item.createdAt as string,
    updatedAt: item.updatedAt as string,
  };
}
