import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Organization, OrgStore } from './ports.ts';
import { conditionalWrite } from '../platform/store/dynamo.ts';
import { toRecord } from '../platform/store/items.ts';
import { keys } from '../platform/store/keys.ts';

export class DynamoOrgStore implements OrgStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.client = client;
    this.tableName = tableName;
  }

  async ensure(org: Organization): Promise<Organization> {
    const created = await conditionalWrite(
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...keys.org(org.id), entity: 'org', ...org },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
    if (created) return org;
    return (await this.get(org.id)) ?? org;
  }

  async get(orgId: string): Promise<Organization | undefined> {
    const existing = await this.client.send(new GetCommand({ TableName: this.tableName, Key: keys.org(orgId) }));
    return existing.Item ? toRecord<Organization>(existing.Item) : undefined;
  }
}
