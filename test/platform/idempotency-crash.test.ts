/**
 * An idempotent create whose process dies after the database committed the resource, before the client got its
 * answer: the client retries with the same Idempotency-Key (to a new process) and gets the same resource back,
 * never a second one. The API runs in a child process whose DynamoDB traffic passes through a proxy here, which
 * kills the process the moment the write that creates the resource has committed.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { IdempotencyInProgressError } from '../../shared/platform/errors.ts';
import { DynamoAgentStore } from '../../shared/agents/agent-store.ts';
import { createDocumentClient } from '../../shared/platform/store/dynamo.ts';
import { DynamoIdempotencyStore } from '../../shared/platform/store/idempotency-store.ts';
import { startApi, type TestApi } from '../support/api.ts';
import { crashProxy } from '../support/crash-proxy.ts';
import { killGroup, startApiProcess, waitForExit } from '../support/local-process.ts';
import { closeServer, listenOnLoopback } from '../support/loopback-server.ts';
import { testTableName } from '../support/database.ts';

let api: TestApi;
let key: string;
let proxyUrl: string;
/** Set while a test wants a process killed once a write holding `marker` (the new resource's) has committed. */
let killAfterCommit: { marker: string; kill: () => void } | undefined;

const database = new URL(inject('dynamodbEndpoint'));
const proxy = crashProxy(database, (operation, body) => {
  if ((operation !== 'TransactWriteItems' && operation !== 'PutItem') || !killAfterCommit || !body.includes(killAfterCommit.marker)) return undefined;
  const { kill } = killAfterCommit;
  // Committed: the process dies before it can hear so, let alone answer its client.
  return () => {
    kill();
    killAfterCommit = undefined;
    return true;
  };
});

beforeAll(async () => {
  api = await startApi();
  ({ key } = await api.newOrg());
  proxyUrl = `http://127.0.0.1:${await listenOnLoopback(proxy)}`;
});
afterAll(async () => {
  await api.close();
  await closeServer(proxy);
});

const startChild = () => startApiProcess(proxyUrl, testTableName(), inject('secretsKeyFile'));

function post(baseUrl: string, path: string, idempotencyKey: string, body: unknown): Promise<Response> {
  return fetch(baseUrl + path, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
    body: JSON.stringify(body),
  });
}

/** Sends the create to a process that dies once it is committed, then retries it against a fresh process. */
async function createThroughCrash(path: string, body: unknown, marker: string): Promise<Response> {
  const idempotencyKey = crypto.randomUUID();
  const doomed = await startChild();
  killAfterCommit = { marker, kill: () => killGroup(doomed.child, 'SIGKILL') };
  await expect(post(doomed.baseUrl, path, idempotencyKey, body)).rejects.toThrow();
  expect(await waitForExit(doomed.child, 10_000)).toEqual({ code: null, signal: 'SIGKILL' });

  const restarted = await startChild();
  try {
    // Read whole before the process is killed: the headers may come before the body does.
    const retry = await post(restarted.baseUrl, path, idempotencyKey, body);
    return new Response(await retry.arrayBuffer(), { status: retry.status, headers: retry.headers });
  } finally {
    killGroup(restarted.child, 'SIGKILL');
    await waitForExit(restarted.child, 10_000);
  }
}

describe('a process killed between committing a create and answering it', () => {
  it('answers the retry with the agent it created, and there is one agent', async () => {
    // Prepare
    const name = `crash-${crypto.randomUUID()}`;

    // Act
    const retry = await createThroughCrash('/v2/chat/agents', { fullName: name, description: 'd', role: 'r' }, name);

    // Assess
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    const replayed = (await retry.json()) as { id: string; fullName: string };
    expect(replayed.fullName).toBe(name);
    const listed = await api.request('GET', '/v1/chat/agents?limit=100', { key });
    expect(listed.body.data.filter((agent: { fullName: string }) => agent.fullName === name).map((agent: { id: string }) => agent.id)).toEqual([replayed.id]);
  });

  it('answers the retry with the session it opened, and the agent has one session', async () => {
    // Prepare
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'S', description: 'd', role: 'r' } });

    // Act
    const retry = await createThroughCrash('/v1/chat/chat/sessions', { agentId: agent.body.id }, agent.body.id);

    // Assess
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    const replayed = (await retry.json()) as { id: string };
    const listed = await api.request('GET', `/v1/chat/chat/sessions?agentId=${agent.body.id}`, { key });
    expect(listed.body.data.map((session: { id: string }) => session.id)).toEqual([replayed.id]);
  });

  it('answers the retry of a message send with the reply it stored, and the session holds the message once', async () => {
    // Prepare
    const agent = await api.request('POST', '/v2/chat/agents', { key, body: { fullName: 'M', description: 'd', role: 'r' } });
    const session = await api.request('POST', '/v1/chat/chat/sessions', { key, body: { agentId: agent.body.id } });
    const content = `crash-${crypto.randomUUID()}`;

    // Act
    const retry = await createThroughCrash(`/v1/chat/chat/sessions/${session.body.id}/messages`, { content, stream: false }, content);

    // Assess
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    const replayed = (await retry.json()) as { userMessage: { id: string; content: string }; assistantMessage: { id: string } };
    expect(replayed.userMessage.content).toBe(content);
    const history = await api.request('GET', `/api/v1/chat/sessions/${session.body.id}/messages`, { key });
    expect(history.body.data.map((message: { id: string }) => message.id)).toEqual([replayed.userMessage.id, replayed.assistantMessage.id]);
  });
});

describe('a request that outlived its claim on the Idempotency-Key', () => {
  it('creates nothing once another request has taken the key over, and says the key is in progress', async () => {
    // Prepare
    const client = createDocumentClient({ AWS_REGION: 'us-east-1', DYNAMODB_ENDPOINT: inject('dynamodbEndpoint') });
    let nowMs = Date.now();
    const idempotency = new DynamoIdempotencyStore(client, testTableName(), 86_400, () => nowMs);
    const agents = new DynamoAgentStore(client, testTableName());
    const orgId = crypto.randomUUID();
    const slow = await idempotency.claim(orgId, 'key-1', 'request');
    nowMs += 61_000;
    const takeover = await idempotency.claim(orgId, 'key-1', 'request');
    expect([slow.outcome, takeover.outcome]).toEqual(['claimed', 'claimed']);
    const agent = { id: crypto.randomUUID(), orgId, fullName: 'late', tools: [] } as never;
    const response = { status: 201, body: '{}', headers: {} };

    // Act
    const late = agents.create(agent, { events: [] }, idempotency.seal(orgId, 'key-1', slow.outcome === 'claimed' ? slow.claimId : '', response));

    // Assess
    await expect(late).rejects.toBeInstanceOf(IdempotencyInProgressError);
    expect(await agents.get(orgId, (agent as { id: string }).id)).toBeUndefined();
  });
});
