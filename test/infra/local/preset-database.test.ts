/**
 * `npm start` with DYNAMODB_ENDPOINT set before it starts (docs/local-runtime.md#a-dynamodb-of-your-own): it uses
 * that database instead of starting DynamoDB Local, with the table in place, and leaves it running when it stops.
 * The bench puts its counting proxy there (bench/whole-turn.ts).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { defaultTableName } from '../../../infra/local/environment.ts';
import { freePort } from '../../../infra/local/free-port.ts';
import { call, childEnv, startServer, stopEverything, stopServer, tempDataDir } from '../../support/local-process.ts';

afterAll(stopEverything, 30_000);

describe('npm start with DYNAMODB_ENDPOINT set', () => {
  it('serves on that database, starts no DynamoDB Local of its own, and leaves that one running when it stops', async () => {
    // Prepare
    const endpoint = inject('dynamodbEndpoint');
    const dataDir = tempDataDir();
    const port = await freePort();
    const key = randomBytes(30).toString('base64url');
    const env = childEnv({ DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', INIT_ORG_ID: 'preset', INIT_API_KEY: key, DYNAMODB_ENDPOINT: endpoint });

    // Act
    const server = await startServer(env, port);
    const created = await call(server, 'POST', '/v2/chat/agents', { key, body: { fullName: 'Preset', description: 'On a database of its own', role: 'You help.' } });
    const running = JSON.parse(readFileSync(join(dataDir, 'running.json'), 'utf8')) as { dynamodbEndpoint: string };
    const exit = await stopServer(server);

    // Assess
    expect(created.status).toBe(201);
    expect(running.dynamodbEndpoint).toBe(endpoint);
    expect(existsSync(join(dataDir, 'dynamodb'))).toBe(false);
    expect(exit).toEqual({ code: 0, signal: null });
    const database = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    expect((await database.send(new ListTablesCommand({}))).TableNames).toContain(defaultTableName);
  });
});
