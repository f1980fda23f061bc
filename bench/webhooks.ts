import { fork, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { percentiles, type Percentiles } from './turns.ts';

export interface WebhookBenchResult {
  /** A burst of `events` published at once, from publication to the last receipt, at the local runtime's concurrency. */
  throughput: { events: number; durationMs: number; deliveriesPerSecond: number; duplicates: number };
  /** From a session's `createdAt` (the state change) to its `session.created` reaching the receiver. */
  eventToReceiptMs: Percentiles & { events: number };
}

/** BENCH_WEBHOOK_EVENTS shortens a run while working on delivery; the figures reported use the default. */
const burstEvents = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 1_000);
const warmupEvents = 300;
const latencyEvents = 200;
const latencyIntervalMs = 25;

export interface Receipt {
  sessionId: string;
  createdAt: string;
  /** Set in the events of an ended session. */
  endedAt?: string;
  webhookId: string;
  at: number;
}

/**
 * Webhook delivery on the local runtime (a child process running the API, relay, router, SQS emulator and delivery
 * function as `npm start` does) to a receiver in this process that answers 204 at once. Latency: sessions opened one
 * at a time, each event timed from the session's `createdAt` to its arrival. Throughput: after a warm-up burst, a
 * burst of events is published to the local bus at once (as the relay publishes), timed until the last arrives.
 */
export async function measureWebhooks(dynamodbEndpoint: string, tableName: string, log: (line: string) => void): Promise<WebhookBenchResult> {
  const receiver = await startReceiver();
  const runtime = await startRuntime({ BENCH_DYNAMODB_ENDPOINT: dynamodbEndpoint, TABLE_NAME: tableName, POWERTOOLS_LOG_LEVEL: 'WARN' });
  try {
    const { call } = runtime;
    const agent = await call('POST', '/v2/chat/agents', { fullName: 'Bench', description: 'Bench', role: 'Bench' });
    const subscribe = (path: string, events: string[]) => call('POST', '/v1/chat/webhooks', { url: `${receiver.url}${path}`, events });
    const openSession = () => call('POST', '/v1/chat/chat/sessions', { agentId: agent.id });

    await subscribe('/latency', ['session.created']);
    log(`webhooks: ${latencyEvents} sessions ${latencyIntervalMs} ms apart, timing each session.created to the receiver`);
    for (let index = 0; index < latencyEvents; index += 1) {
      await openSession();
      await new Promise((done) => setTimeout(done, latencyIntervalMs));
    }
    const timed = await receiptsOf(receiver, '/latency', latencyEvents, 30_000);
    const latencies = timed.map((receipt) => receipt.at - Date.parse(receipt.createdAt));

    await subscribe('/burst', ['session.updated']);
    log(`webhooks: warming up with ${warmupEvents} events, then a burst of ${burstEvents}`);
    await runtime.publish(warmupEvents);
    await receiptsOf(receiver, '/burst', warmupEvents, 60_000);
    const published = Date.now();
    await runtime.publish(burstEvents);
    const burst = (await receiptsOf(receiver, '/burst', warmupEvents + burstEvents, 120_000)).filter((receipt) => receipt.at >= published);
    const durationMs = Math.max(...burst.map((receipt) => receipt.at)) - published;
    return {
      throughput: {
        events: burst.length,
        durationMs,
        deliveriesPerSecond: (burst.length / durationMs) * 1000,
        duplicates: receiver.receipts.filter((receipt) => receipt.path === '/burst').length - warmupEvents - burst.length,
      },
      eventToReceiptMs: { events: latencies.length, ...percentiles(latencies) },
    };
  } finally {
    runtime.child.kill('SIGTERM');
    receiver.server.closeAllConnections();
    receiver.server.close();
  }
}

/** The first receipt of each event at `path`, once `count` distinct events have arrived (or the time is up). */
export async function receiptsOf(receiver: Awaited<ReturnType<typeof startReceiver>>, path: string, count: number, timeoutMs: number): Promise<Receipt[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const unique = new Map<string, Receipt>();
    for (const receipt of receiver.receipts) if (receipt.path === path && !unique.has(receipt.webhookId)) unique.set(receipt.webhookId, receipt);
    if (unique.size >= count) return [...unique.values()];
    if (Date.now() > deadline) throw new Error(`only ${unique.size} of ${count} events reached ${path}`);
    await new Promise((done) => setTimeout(done, 20));
  }
}

export async function startReceiver(): Promise<{ server: Server; url: string; receipts: (Receipt & { path: string })[] }> {
  const receipts: (Receipt & { path: string })[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const at = Date.now();
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string; createdAt: string; endedAt?: string };
      const webhookId = String(request.headers['webhook-id']);
      receipts.push({ path: request.url ?? '/', sessionId: body.id, createdAt: body.createdAt, ...(body.endedAt ? { endedAt: body.endedAt } : {}), webhookId, at });
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, receipts };
}

export async function startRuntime(env: Record<string, string>) {
  const child: ChildProcess = fork(resolve(import.meta.dirname, 'webhook-runtime.ts'), {
    // The receivers listen on random loopback ports; the runtime's own ports stay denied.
    env: { ...process.env, LOOPBACK_EGRESS_PORTS: '1024-65535', ...env },
    execArgv: ['--disable-warning=ExperimentalWarning'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ready = await new Promise<{ port: number; key: string }>((done, fail) => {
    child.once('message', (message: { port: number; key: string }) => done(message));
    child.once('exit', (code) => fail(new Error(`webhook runtime exited with ${code}`)));
  });
  const publish = (count: number) =>
    new Promise<void>((done) => {
      child.once('message', () => done());
      child.send({ type: 'publish', count });
    });
  const baseUrl = `http://127.0.0.1:${ready.port}`;
  /** A JSON request with the runtime's key; throws on a non-2xx answer. */
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(baseUrl + path, {
      method,
      headers: { 'x-api-key': ready.key, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as { id: string };
  };
  return { child, baseUrl, key: ready.key, publish, call };
}
