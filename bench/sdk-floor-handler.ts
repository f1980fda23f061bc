/**
 * The floor of a function's bundle and init (`npm run bench`, section 1): a handler with the AWS SDK's DynamoDB
 * client and lib-dynamodb and nothing else, bundled and imported as every function is.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';

const client = DynamoDBDocumentClient.from(new DynamoDBClient({}));

export const handler = async (event: { id: string }) => client.send(new GetCommand({ TableName: process.env.TABLE_NAME, Key: { pk: event.id, sk: '#' } }));
