/**
 * Decision 400: every read and write of the platform's DynamoDB client asks for the capacity it consumes, whether or
 * not the bench's cost accounting is on, so that the units a request was billed are in every response.
 */
import { GetCommand, PutCommand, QueryCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, inject, it } from 'vitest';
import { costAccountingVariable } from '../../shared/platform/cost-accounting.ts';
import { createDocumentClient } from '../../shared/platform/store/dynamo.ts';
import { testTableName } from '../support/database.ts';

describe('the DynamoDB client', () => {
  it('reports the consumed capacity of reads and writes that did not ask for it, with the cost accounting off', async () => {
    // Prepare
    expect(process.env[costAccountingVariable]).toBeUndefined();
    const client = createDocumentClient({ AWS_REGION: 'us-east-1', DYNAMODB_ENDPOINT: inject('dynamodbEndpoint') });
    const TableName = testTableName();
    const pk = `CAPACITY#${crypto.randomUUID()}`;

    // Act
    const put = await client.send(new PutCommand({ TableName, Item: { pk, sk: 'a', text: 'x'.repeat(1500) } }));
    const get = await client.send(new GetCommand({ TableName, Key: { pk, sk: 'a' }, ConsistentRead: true }));
    const query = await client.send(new QueryCommand({ TableName, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk } }));
    const transaction = await client.send(new TransactWriteCommand({ TransactItems: [{ Put: { TableName, Item: { pk, sk: 'b' } } }] }));

    // Assess: 1.5 KB written is 2 units, read strongly 1; every response carries its figure.
    expect(put.ConsumedCapacity?.CapacityUnits).toBe(2);
    expect(get.ConsumedCapacity?.CapacityUnits).toBe(1);
    expect(query.ConsumedCapacity?.CapacityUnits).toBeGreaterThan(0);
    expect(transaction.ConsumedCapacity?.[0]?.CapacityUnits).toBeGreaterThan(0);
  });
});
