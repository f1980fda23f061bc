/**
 * The API configured as the stack configures it on AWS: the OpenAI-compatible key and Stripe's webhook secret are
 * not in the environment, only the ARNs of their secrets, read from a Secrets Manager stand-in.
 */
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../support/api.ts';
import { startOpenAIStub, stubModelId, type OpenAIStub } from '../support/openai-stub.ts';
import { startSecretsManagerStandIn, type SecretsManagerStandIn } from '../support/secrets-manager-stand-in.ts';
import { replyDeltas } from '../support/sse.ts';

let api: TestApi;
let llm: OpenAIStub;
let secretsManager: SecretsManagerStandIn;
let webhookSecretArn: string;
const webhookSecret = `whsec_${crypto.randomUUID().replaceAll('-', '')}`;

beforeAll(async () => {
  llm = await startOpenAIStub({ tokens: 3 });
  secretsManager = await startSecretsManagerStandIn();
  // The key has its value; the webhook secret is as the stack creates it: empty.
  const apiKeyArn = secretsManager.createSecret('agent-platform/openai-compatible-api-key', 'sk-from-secrets-manager');
  webhookSecretArn = secretsManager.createSecret('agent-platform/stripe-webhook-secret');
  api = await startApi({
    OPENAI_COMPATIBLE_BASE_URL: llm.baseUrl,
    OPENAI_COMPATIBLE_MODELS: 'stub-model',
    OPENAI_COMPATIBLE_API_KEY_ARN: apiKeyArn,
    STRIPE_WEBHOOK_SECRET_ARN: webhookSecretArn,
    SECRETS_MANAGER_ENDPOINT: secretsManager.url,
  });
});
afterAll(async () => {
  await api.close();
  await llm.close();
  await secretsManager.close();
});

describe('secret settings read from Secrets Manager', () => {
  it("sends the OpenAI-compatible key from its secret as the Bearer token of the model's requests", async () => {
    const { key } = await api.newOrg();
    const modelId = await stubModelId(api, key);
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'A', description: 'A', role: 'Be brief.', modelId } });
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });

    const reply = await api.request('POST', `/v1/chat/chat/sessions/${session.body.id}/messages`, { key, body: { content: 'hello' } });

    expect(reply.status, reply.text).toBe(200);
    expect(replyDeltas(reply.text)).toHaveLength(3);
    expect(llm.requests.at(-1)?.headers.authorization).toBe('Bearer sk-from-secrets-manager');
  });

  it("answers Stripe's webhook 404 while its secret has no value, and verifies events with the value once it is put", async () => {
    const { orgId } = await api.newOrg();
    const payload = JSON.stringify({
      id: `evt_${crypto.randomUUID().replaceAll('-', '')}`,
      object: 'event',
      type: 'invoice.payment_failed',
      created: Math.floor(Date.now() / 1000),
      data: { object: { id: 'in_1', object: 'invoice', parent: { type: 'subscription_details', subscription_details: { subscription: 'sub_1', metadata: { orgId } } } } },
    });
    const post = () =>
      api.request('POST', '/v1/billing/stripe/webhook', {
        rawBody: payload,
        headers: { 'content-type': 'application/json', 'stripe-signature': new Stripe('sk_test_unused').webhooks.generateTestHeaderString({ payload, secret: webhookSecret }) },
      });

    const beforeValue = await post();
    secretsManager.putSecretValue(webhookSecretArn, webhookSecret);
    const afterValue = await post();

    expect(beforeValue.status, beforeValue.text).toBe(404);
    expect(afterValue.status, afterValue.text).toBe(200);
    expect(afterValue.body).toEqual({ received: true, applied: true });
  });
});
