/**
 * The least a persisted turn costs with the mandated AWS SDK: an HTTP server whose every request makes the three
 * DynamoDB calls of a turn (the key lookup, one BatchGetItem of session, agent and a tool, one TransactWriteItems
 * of two messages and the session update) and nothing else: no auth logic, validation, model or SSE (`/reads`: the
 * two reads alone, in sequence, as before a turn's first delta). Run by
 * `sdk-floor.ts` in a child process, so that its CPU is read apart.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BatchGetCommand, GetCommand, PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { parseConfig } from '../shared/platform/config.ts';
import { accountInvocation } from '../shared/platform/cost-accounting.ts';
import { createDocumentClient } from '../shared/platform/store/dynamo.ts';

const config = parseConfig();
const client = createDocumentClient(config);
const TableName = config.TABLE_NAME;
const key = (pk: string, sk: string) => ({ pk, sk });
await Promise.all(
  [key('floor#key', '#'), key('floor#session', '#'), key('floor#agent', '#'), key('floor#tool', '#')].map((Key) =>
    client.send(new PutCommand({ TableName, Item: { ...Key, payload: 'x'.repeat(400), seq: 0 } })),
  ),
);
let next = 0;
// One invocation a request, for the cost accounting of `bench/cost-runtime.ts` (nothing when it is off).
const server = createServer((request, response) => void accountInvocation('sdk-floor', 'rest-api', () => turn(request, response)));
async function turn(request: IncomingMessage, response: ServerResponse): Promise<void> {
  request.resume();
  await client.send(new GetCommand({ TableName, Key: key('floor#key', '#'), ConsistentRead: true }));
  await client.send(
    new BatchGetCommand({
      RequestItems: { [TableName]: { Keys: [key('floor#session', '#'), key('floor#agent', '#'), key('floor#tool', '#')], ConsistentRead: true } },
    }),
  );
  // `/reads`: only what a turn does before its first delta.
  if (request.url === '/reads') return void response.writeHead(200).end();
  const seq = (next += 2);
  await client.send(
    new TransactWriteCommand({
      TransactItems: [
        { Put: { TableName, Item: { ...key('floor#messages', `MSG#${seq}`), role: 'USER', content: 'hello there' } } },
        { Put: { TableName, Item: { ...key('floor#messages', `MSG#${seq + 1}`), role: 'ASSISTANT', content: 'x'.repeat(120) } } },
        { Update: { TableName, Key: key('floor#session', '#'), UpdateExpression: 'SET seq = :seq', ExpressionAttributeValues: { ':seq': seq } } },
      ],
    }),
  );
  response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
}
server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }));
process.on('disconnect', () => process.exit(0));
