import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { RateLimiter, type RateDecision } from '../../shared/billing/rate-limit.ts';
import { createDocumentClient } from '../../shared/platform/store/dynamo.ts';
import { DynamoRateLimitStore } from '../../shared/billing/rate-limit-store.ts';
import { closeServer, listenOnLoopback } from '../support/loopback-server.ts';
import { childEnv, spawnInGroup } from '../support/local-process.ts';
import { expectError, startApi, type TestApi } from '../support/api.ts';
import { testTableName } from '../support/database.ts';

const freePlan = { name: 'Free (test)', quotas: { chat_messages: 1000, voice_seconds: 60, knowledge_chunks: 10 }, concurrentCalls: 1, requestsPerSecond: 5, burst: 5 };
let api: TestApi;
beforeAll(async () => {
  api = await startApi({ RATE_LIMITING: 'on', PLANS: JSON.stringify({ free: freePlan }) });
});
afterAll(() => api.close());

describe('rate limits over HTTP', () => {
  it('answers 429 RATE_LIMITED with Retry-After beyond the plan’s burst, and the RateLimit headers on every response', async () => {
    // Prepare
    const { key } = await api.newOrg();

    // Act
    const responses = await Promise.all(Array.from({ length: 20 }, () => api.request('GET', '/v1/chat/agents', { key })));

    // Assess
    const admitted = responses.filter((response) => response.status === 200);
    const refused = responses.filter((response) => response.status !== 200);
    expect(admitted.length).toBeGreaterThanOrEqual(1);
    expect(admitted.length).toBeLessThanOrEqual(freePlan.burst + 1);
    expect(refused.length).toBeGreaterThan(0);
    for (const response of refused) {
      expectError(response, 429, 'RATE_LIMITED');
      expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
    for (const response of responses) {
      expect(response.headers.get('ratelimit-policy')).toBe('"org";q=5;w=1');
      expect(response.headers.get('ratelimit')).toMatch(/^"org";r=\d+;t=\d+$/);
    }
  });

  it('applies an API key’s own lower limit, given at creation, before the organization’s', async () => {
    // Prepare
    const { key } = await api.newOrg();
    const created = await api.request('POST', '/v1/chat/api-keys', { key, body: { name: 'slow', scopes: ['agents:read'], rateLimit: { requestsPerSecond: 1, burst: 1 } } });
    await new Promise((resolve) => setTimeout(resolve, 1_100));

    // Act: together, so that a busy machine cannot space them a second apart, the key's refill.
    const answers = await Promise.all([1, 2, 3].map(() => api.request('GET', '/v1/chat/agents', { key: created.body.key })));
    const sameOrgOtherKey = await api.request('GET', '/v1/chat/agents', { key });

    // Assess
    expect(created.status, created.text).toBe(201);
    expect(created.body.rateLimit).toEqual({ requestsPerSecond: 1, burst: 1 });
    const [admitted, ...others] = answers.filter((answer) => answer.status === 200);
    expect(others).toEqual([]);
    expect(admitted?.headers.get('ratelimit-policy')).toBe('"key";q=1;w=1, "org";q=5;w=1');
    const refused = answers.filter((answer) => answer !== admitted);
    expect(refused).toHaveLength(2);
    for (const answer of refused) {
      expectError(answer, 429, 'RATE_LIMITED');
      expect(answer.headers.get('ratelimit-policy')).toBe('"key";q=1;w=1');
    }
    expect(sameOrgOtherKey.status).toBe(200);
  });
});

interface WorkerResult {
  admitted: number[];
  refusals: number[];
  writes: number;
}

function runWorker(env: Record<string, string>): Promise<WorkerResult> {
  const child = spawnInGroup(['test/support/limiter-worker.ts'], childEnv({ DYNAMODB_ENDPOINT: inject('dynamodbEndpoint'), TABLE_NAME: testTableName(), ...env }));
  let output = '';
  let errors = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(output) as WorkerResult) : reject(new Error(`worker exited ${code}: ${errors}`))));
  });
}

describe('rate limiter shared by processes', () => {
  it('admits at most rate × t + burst from 4 processes offering 3× the rate (once the burst is spent, within 10 % of the rate), at least 80 % of rate × t, with a write per lease, never per request', async () => {
    // Prepare
    const rate = 40;
    const burst = 40;
    const durationMs = 5_000;
    const startAt = Date.now() + 1_500;
    const env = { LIMIT_ORG_ID: crypto.randomUUID(), LIMIT_RPS: String(rate), LIMIT_BURST: String(burst), OFFERED_RPS: String((3 * rate) / 4), START_AT: String(startAt), DURATION_MS: String(durationMs) };

    // Act
    const results = await Promise.all(Array.from({ length: 4 }, () => runWorker(env)));

    // Assess
    const admitted = results.flatMap((result) => result.admitted);
    const offered = admitted.length + results.reduce((sum, result) => sum + result.refusals.length, 0);
    const seconds = durationMs / 1000;
    expect(offered).toBeGreaterThanOrEqual(3 * rate * seconds * 0.95);
    expect(admitted.length).toBeLessThanOrEqual(rate * seconds + burst);
    expect(admitted.length).toBeGreaterThanOrEqual(rate * seconds * 0.8);
    // The burst is spent in the first two seconds (processes start leasing small); from then on the admitted rate
    // stays within 10 % of the limit (a lease lives up to a second, so single seconds may borrow from the last).
    const steady = admitted.filter((at) => at >= startAt + 2_000).length;
    expect(steady).toBeLessThanOrEqual(rate * (seconds - 2) * 1.1);
    expect(results.flatMap((result) => result.refusals).every((retryAfter) => retryAfter >= 1)).toBe(true);
    const writes = results.reduce((sum, result) => sum + result.writes, 0);
    expect(writes / offered).toBeLessThan(0.25);
  }, 60_000);
});

describe('rate limiter on a slow table', () => {
  it('refuses none of a client’s requests at a tenth of its rate while each table write takes 1 to 3 s, and RateLimit never shows more than the burst', async () => {
    // Prepare: DynamoDB Local behind a proxy that holds every answer 1 to 3 s.
    const database = new URL(inject('dynamodbEndpoint'));
    const proxy = createServer(async (clientRequest, clientResponse) => {
      const chunks: Buffer[] = [];
      for await (const chunk of clientRequest) chunks.push(chunk as Buffer);
      const upstream = httpRequest({ host: database.hostname, port: database.port, path: clientRequest.url, method: clientRequest.method, headers: clientRequest.headers });
      upstream.end(Buffer.concat(chunks));
      const [answer] = (await once(upstream, 'response')) as [IncomingMessage];
      const answerChunks: Buffer[] = [];
      for await (const chunk of answer) answerChunks.push(chunk as Buffer);
      await new Promise((resolve) => setTimeout(resolve, 1_000 + Math.random() * 2_000));
      clientResponse.writeHead(answer.statusCode ?? 500, answer.headers).end(Buffer.concat(answerChunks));
    });
    const port = await listenOnLoopback(proxy);
    const client = createDocumentClient({ AWS_REGION: 'us-east-1', DYNAMODB_ENDPOINT: `http://127.0.0.1:${port}` });
    const limiter = new RateLimiter(new DynamoRateLimitStore(client, testTableName()));
    const limit = { requestsPerSecond: 50, burst: 20 };
    const orgId = crypto.randomUUID();

    // Act: 5 requests a second for 4 s, each decided whenever the table lets it.
    const decisions: Promise<RateDecision>[] = [];
    for (let index = 0; index < 20; index += 1) {
      decisions.push(limiter.admit(orgId, 'org', limit));
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const decided = await Promise.all(decisions);
    client.destroy();
    await closeServer(proxy);

    // Assess
    expect(decided.filter((decision) => !decision.admitted)).toEqual([]);
    expect(Math.max(...decided.map((decision) => decision.remaining))).toBeLessThanOrEqual(limit.burst);
  }, 60_000);
});
