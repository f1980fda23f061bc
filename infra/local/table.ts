import { CreateTableCommand, DescribeTableCommand, ResourceInUseException, UpdateTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { tableDefinition } from '../../shared/platform/store/table.ts';

type IndexDefinition = (typeof tableDefinition.globalSecondaryIndexes)[number];

const stringAttribute = (name: string) => ({ AttributeName: name, AttributeType: 'S' as const });

const indexSchema = (index: IndexDefinition) => ({
  IndexName: index.indexName,
  KeySchema: [
    { AttributeName: index.partitionKey, KeyType: 'HASH' as const },
    { AttributeName: index.sortKey, KeyType: 'RANGE' as const },
  ],
  Projection: { ProjectionType: 'ALL' as const },
});

/**
 * Creates the table in DynamoDB Local from the same definition the CDK stack deploys. A table kept from an older
 * version (a persisted DATA_DIR) gets the indexes it lacks, and is ready when this returns.
 */
export async function ensureTable(client: DynamoDBClient, tableName: string): Promise<void> {
  const attributes = new Set<string>([tableDefinition.partitionKey, tableDefinition.sortKey]);
  for (const index of tableDefinition.globalSecondaryIndexes) {
    attributes.add(index.partitionKey);
    attributes.add(index.sortKey);
  }
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [...attributes].map(stringAttribute),
        KeySchema: [
          { AttributeName: tableDefinition.partitionKey, KeyType: 'HASH' },
          { AttributeName: tableDefinition.sortKey, KeyType: 'RANGE' },
        ],
        GlobalSecondaryIndexes: tableDefinition.globalSecondaryIndexes.map(indexSchema),
        StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
      }),
    );
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  const existing = new Set((await describe(client, tableName)).map((index) => index.IndexName));
  for (const index of tableDefinition.globalSecondaryIndexes.filter((candidate) => !existing.has(candidate.indexName))) {
    await client.send(
      new UpdateTableCommand({
        TableName: tableName,
        AttributeDefinitions: [stringAttribute(index.partitionKey), stringAttribute(index.sortKey)],
        GlobalSecondaryIndexUpdates: [{ Create: indexSchema(index) }],
      }),
    );
  }
  while ((await describe(client, tableName)).some((index) => index.IndexStatus !== 'ACTIVE')) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function describe(client: DynamoDBClient, tableName: string) {
  return (await client.send(new DescribeTableCommand({ TableName: tableName }))).Table?.GlobalSecondaryIndexes ?? [];
}
