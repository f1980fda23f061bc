/** A DATA_DIR kept from an older version holds a table without today's indexes: the local start adds them. */
import { CreateTableCommand, DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { describe, expect, inject, it } from 'vitest';
import { ensureTable } from '../../../infra/local/table.ts';
import { tableDefinition } from '../../../shared/platform/store/table.ts';

describe('ensureTable on a table of an older version', () => {
  it('adds the indexes the table definition has and the table lacks', async () => {
    // Prepare
    const client = new DynamoDBClient({ endpoint: inject('dynamodbEndpoint'), region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    const tableName = `older-${crypto.randomUUID()}`;
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: ['pk', 'sk', 'gsi1pk', 'gsi1sk'].map((name) => ({ AttributeName: name, AttributeType: 'S' })),
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        GlobalSecondaryIndexes: [
          {
            IndexName: 'gsi1',
            KeySchema: [
              { AttributeName: 'gsi1pk', KeyType: 'HASH' },
              { AttributeName: 'gsi1sk', KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: 'ALL' },
          },
        ],
      }),
    );

    // Act
    await ensureTable(client, tableName);

    // Assess
    const table = (await client.send(new DescribeTableCommand({ TableName: tableName }))).Table;
    expect(table?.GlobalSecondaryIndexes?.map((index) => [index.IndexName, index.IndexStatus]).sort()).toEqual(
      tableDefinition.globalSecondaryIndexes.map((index) => [index.indexName, 'ACTIVE']),
    );
    client.destroy();
  });
});
