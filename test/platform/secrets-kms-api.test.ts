import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Runtime } from '../../shared/runtime.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { startKmsStandIn, type KmsStandIn } from '../support/kms-stand-in.ts';

let kms: KmsStandIn;
let api: TestApi;
let deps: Runtime;
beforeAll(async () => {
  kms = await startKmsStandIn();
  // As the stack configures the functions, with the SDK pointed at the stand-in.
  api = await startApi({ SECRETS_KMS_KEY_ID: kms.keyArn, KMS_ENDPOINT: kms.url });
  deps = (await import('../../shared/runtime.ts')).runtime();
});
afterAll(async () => {
  await api.close();
  await kms.close();
});

it('seals through KMS when SECRETS_KMS_KEY_ID is set: a data key per secret, one Decrypt for repeated signing', async () => {
  const { orgId, key } = await api.newOrg();
  const created = await api.request('POST', '/v1/chat/webhooks', { key, body: { url: 'https://1.1.1.1/hooks', events: ['*'] } });
  expect(created.status, created.text).toBe(201);
  expect(kms.calls).toEqual(['GenerateDataKey']);
  for (let attempt = 0; attempt < 3; attempt += 1) {
    expect((await deps.webhooks.deliverable(orgId, created.body.id, Date.now()))?.secrets).toEqual([created.body.secret]);
  }
  expect(kms.calls).toEqual(['GenerateDataKey', 'Decrypt']);
});
