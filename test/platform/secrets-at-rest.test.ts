import { ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSigningSecret } from '../../shared/platform/net/standard-webhooks.ts';
import type { Runtime } from '../../shared/runtime.ts';
import { SecretUnreadableError } from '../../shared/platform/secrets/envelope-cipher.ts';
import { keys } from '../../shared/platform/store/keys.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { testDocuments, testTableName } from '../support/database.ts';

let api: TestApi;
let deps: Runtime;
const table = testTableName();
beforeAll(async () => {
  api = await startApi();
  deps = (await import('../../shared/runtime.ts')).runtime();
});
afterAll(async () => {
  await api.close();
  testDocuments.destroy();
});

/** Every item of the table, whoever wrote it. */
async function everyItem(): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await testDocuments.send(new ScanCommand({ TableName: table, ExclusiveStartKey: start }));
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}

/** A secret as an attacker reading the table would look for it: whole, or its key material alone. */
const tracesOf = (secret: string) => [secret, secret.replace(/^whsec_/, ''), Buffer.from(secret.replace(/^whsec_/, ''), 'base64').toString('hex')];

const setAttribute = (key: Record<string, string>, name: string, value: string) =>
  testDocuments.send(
    new UpdateCommand({ TableName: table, Key: key, UpdateExpression: 'SET #name = :value', ExpressionAttributeNames: { '#name': name }, ExpressionAttributeValues: { ':value': value } }),
  );

async function createWebhook(key: string): Promise<{ id: string; secret: string }> {
  const created = await api.request('POST', '/v1/chat/webhooks', { key, body: { url: 'https://1.1.1.1/hooks', events: ['*'] } });
  expect(created.status, created.text).toBe(201);
  return created.body;
}

async function createFunctionTool(key: string, name: string): Promise<{ id: string; secret: string }> {
  const created = await api.request('POST', '/v1/chat/tools', {
    key,
    body: { name, description: 'Finds an order', type: 'FUNCTION_TOOL', functionTool: { url: 'https://1.1.1.1/functions' } },
  });
  expect(created.status, created.text).toBe(201);
  return { id: created.body.id, secret: created.body.functionTool.signingSecret };
}

describe('secrets at rest', () => {
  it('leaves only ciphertext in the table: webhook secrets (current and previous) and function-tool secrets', async () => {
    const { orgId, key } = await api.newOrg();
    const webhook = await createWebhook(key);
    const rotated = await api.request('POST', `/v1/chat/webhooks/${webhook.id}/rotate-secret`, { key });
    expect(rotated.status, rotated.text).toBe(200);
    const tool = await createFunctionTool(key, 'LOOKUP_ORDER');
    const secrets = [webhook.secret, rotated.body.secret as string, tool.secret];

    const table = JSON.stringify(await everyItem());
    for (const secret of secrets) for (const trace of tracesOf(secret)) expect(table).not.toContain(trace);
    const ours = (await everyItem()).filter((item) => item.pk === keys.orgPartition(orgId));
    const endpointItem = ours.find((item) => item.sk === keys.webhook(orgId, webhook.id).sk);
    const toolItem = ours.find((item) => item.sk === keys.tool(orgId, tool.id).sk);
    expect(endpointItem).toMatchObject({ secret: expect.stringMatching(/^sealed:v1:/), previousSecret: expect.stringMatching(/^sealed:v1:/) });
    expect(toolItem).toMatchObject({ functionSecret: expect.stringMatching(/^sealed:v1:/) });

    // What signs is still the secret the API showed once.
    expect((await deps.webhooks.deliverable(orgId, webhook.id, Date.now()))?.secrets).toEqual([rotated.body.secret, webhook.secret]);
    expect((await deps.tools.executableTools(orgId, [tool.id]))[0]?.functionSecret).toBe(tool.secret);
  });

  it('never shows a secret again through the API', async () => {
    const { key } = await api.newOrg();
    const webhook = await createWebhook(key);
    const tool = await createFunctionTool(key, 'LOOKUP_ORDER');
    const reads = await Promise.all(
      ['/v1/chat/webhooks', `/v1/chat/webhooks/${webhook.id}`, '/v1/chat/tools', `/v1/chat/tools/${tool.id}`].map((path) => api.request('GET', path, { key })),
    );
    for (const read of reads) {
      expect(read.status).toBe(200);
      for (const secret of [webhook.secret, tool.secret]) expect(read.text).not.toContain(secret.replace(/^whsec_/, ''));
      expect(read.text).not.toContain('sealed:');
    }
  });

  it('binds each sealed secret to its item: copied to another item or organization, it does not open', async () => {
    const owner = await api.newOrg();
    const other = await api.newOrg();
    const webhook = await createWebhook(owner.key);
    const sibling = await createWebhook(owner.key);
    const foreign = await createWebhook(other.key);
    const tool = await createFunctionTool(owner.key, 'LOOKUP_ORDER');
    const sealed = (await everyItem()).find((item) => item.pk === keys.orgPartition(owner.orgId) && item.sk === keys.webhook(owner.orgId, webhook.id).sk)
      ?.secret as string;

    await setAttribute(keys.webhook(owner.orgId, sibling.id), 'secret', sealed);
    await setAttribute(keys.webhook(other.orgId, foreign.id), 'secret', sealed);
    await setAttribute(keys.tool(owner.orgId, tool.id), 'functionSecret', sealed);

    await expect(deps.webhooks.deliverable(owner.orgId, sibling.id, Date.now())).rejects.toThrow(SecretUnreadableError);
    await expect(deps.webhooks.deliverable(other.orgId, foreign.id, Date.now())).rejects.toThrow(SecretUnreadableError);
    await expect(deps.tools.executableTools(owner.orgId, [tool.id])).rejects.toThrow(SecretUnreadableError);
    expect((await deps.webhooks.deliverable(owner.orgId, webhook.id, Date.now()))?.secrets).toEqual([webhook.secret]);
  });
});

describe('secrets stored in the clear before sealing began', () => {
  it('still sign a webhook, and are sealed as the previous secret by the next rotation', async () => {
    const { orgId, key } = await api.newOrg();
    const webhook = await createWebhook(key);
    const legacy = generateSigningSecret();
    await setAttribute(keys.webhook(orgId, webhook.id), 'secret', legacy);
    expect((await deps.webhooks.deliverable(orgId, webhook.id, Date.now()))?.secrets).toEqual([legacy]);

    const rotated = await api.request('POST', `/v1/chat/webhooks/${webhook.id}/rotate-secret`, { key });
    expect(rotated.status, rotated.text).toBe(200);
    const items = await everyItem();
    const item = items.find((candidate) => candidate.pk === keys.orgPartition(orgId) && candidate.sk === keys.webhook(orgId, webhook.id).sk);
    expect(item).toMatchObject({ secret: expect.stringMatching(/^sealed:v1:/), previousSecret: expect.stringMatching(/^sealed:v1:/) });
    for (const trace of tracesOf(legacy)) expect(JSON.stringify(items)).not.toContain(trace);
    expect((await deps.webhooks.deliverable(orgId, webhook.id, Date.now()))?.secrets).toEqual([rotated.body.secret, legacy]);
  });

  it('still sign a function tool', async () => {
    const { orgId, key } = await api.newOrg();
    const tool = await createFunctionTool(key, 'LOOKUP_ORDER');
    const legacy = generateSigningSecret();
    await setAttribute(keys.tool(orgId, tool.id), 'functionSecret', legacy);
    expect((await deps.tools.executableTools(orgId, [tool.id]))[0]?.functionSecret).toBe(legacy);
  });
});
