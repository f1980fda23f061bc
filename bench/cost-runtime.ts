/**
 * The cost of a chat turn, a webhook delivery and a call minute, counted from the requests they make: the whole
 * local runtime as `npm start` runs it (API, table stream consumers, event router, queues and their functions,
 * Twilio simulator and WebSocket API) in a child process on the database the parent names, with
 * COST_ACCOUNTING_FILE set, so that every DynamoDB, SQS and EventBridge request and every invocation is written
 * down (shared/platform/cost-accounting.ts); and the SDK floor's turn (sdk-floor-server.ts) counted alike. The model
 * is a stub that answers at once, so the functions' durations are the platform's own. Reports its figures and exits.
 */
import { fork } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { cpus, loadavg } from 'node:os';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { eventRules, queueConsumers, tableStreamConsumers, usageRollupQueue, webhookDeliveryQueue } from '../functions/consumers.ts';
import { routeGroups } from '../functions/route-groups.ts';
import { memoryMbOf } from '../functions/lambda-functions.ts';
import { useLocalDatabase } from '../infra/local/environment.ts';
import { startEventRouter } from '../infra/local/event-router.ts';
import { startQueuePollers } from '../infra/local/queue-poller.ts';
import { startLocalQueues } from '../infra/local/queues.ts';
import { createLocalServer } from '../infra/local/server.ts';
import { startStreamPoller } from '../infra/local/stream-poller.ts';
import { startLocalVoice } from '../infra/local/voice.ts';
import { costAccountingVariable, type CostRecord } from '../shared/platform/cost-accounting.ts';
import { runtime } from '../shared/runtime.ts';
import { startOpenAIStub } from '../test/support/openai-stub.ts';
import { benchOrganization } from './bench-api.ts';
import { atLeastZero, costPer, dollarsOf, isBilledWork, readCostRecords, scaleUsage, usageDifference, usageOf, type CostFigure } from './cost-model.ts';

export interface CostBenchResult {
  /** Streamed turns in open sessions of `turnsPerSession` turns: everything a turn sets off, roll-ups aside. */
  perTurn: CostFigure;
  /** Opening and closing a session (its events, the analysis, `session.ended`), per session. */
  perSession: CostFigure;
  /** A turn in a session of `turnsPerSession` turns, its session's opening and closing included. */
  perTurnInSession: CostFigure;
  /** What delivering one event to one subscribed endpoint adds (the delivery function and its queue). */
  perWebhookDelivery: CostFigure;
  /** A one-minute call of `callExchanges` exchanges, from the start request until its session has ended. */
  perCallMinute: CostFigure;
  /** One usage roll-up (at most one per organization per USAGE_ROLLUP_SECONDS with activity); not in the figures above. */
  perUsageRollup: CostFigure;
  /** The SDK floor's turn (its three DynamoDB calls, one invocation, the same front door). */
  floorPerTurn: CostFigure;
  turns: number;
  turnsPerSession: number;
  webhookDeliveries: number;
  usageRollups: number;
  callSeconds: number;
  callExchanges: number;
  /** The machine's one-minute load average when the measuring began and ended, and its cores: durations include waiting for a core. */
  loadAverage: { start: number; end: number; cores: number };
}

const sessions = 2;
const turnsPerSession = 10;
const warmupTurns = 5;
const callSeconds = 60;
const callExchanges = 10;
const floorRequests = 200;
/** Quiet this long with every queue empty: whatever the last request set off has run. */
const quietMs = 750;

const loadAtStart = loadavg()[0] as number;
const accountingFile = process.env[costAccountingVariable] as string;
/** Where `takeRecords` has read the file to. */
let offset = 0;
const database = { endpoint: process.env.BENCH_DYNAMODB_ENDPOINT as string, tableName: process.env.TABLE_NAME as string };
useLocalDatabase(database);
// Streamed turns get 20 tokens; the analysis, which asks for a JSON object without streaming, a valid summary.
const stub = await startOpenAIStub({ tokens: 20, record: false, keepAliveTimeoutMs: 600_000, answer: (body) => (body.stream ? undefined : { content: JSON.stringify({ summary: 'The user greeted the agent.' }) }) });
const deliveries = await startWebhookReceiver();
// Before the handlers read their configuration: the stub model, and loopback egress to it and to the receiver.
process.env.OPENAI_COMPATIBLE_BASE_URL = stub.baseUrl;
process.env.OPENAI_COMPATIBLE_MODELS = 'stub-model';
process.env.LOOPBACK_EGRESS_PORTS = `${new URL(stub.baseUrl).port},${deliveries.port}`;
// The work is the same, sooner: the analysis deadline's message (90% of it after a session ends) and the call's
// backstop schedule (ring + time limit + grace after the start) come due within seconds, not minutes.
process.env.ANALYSIS_DEADLINE_SECONDS = '10';
process.env.CALL_RING_TIMEOUT_SECONDS = '5';
process.env.CALL_BACKSTOP_GRACE_SECONDS = '0';
const queues = await startLocalQueues({ consumers: queueConsumers, rules: eventRules, streamConsumers: tableStreamConsumers });
const { server, preload } = createLocalServer(routeGroups);
await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const voice = await startLocalVoice(baseUrl, process.env, { queues });
if (!voice.simulator) throw new Error('TWILIO_API_BASE_URL was preset: the cost bench calls through the Twilio simulator.');
const twilio = voice.simulator;
await preload();
const router = startEventRouter({ queues, rules: eventRules });
const poller = startStreamPoller({ endpoint: database.endpoint, tableName: database.tableName, consumers: tableStreamConsumers, idleDelayMs: 25 });
await poller.ready;
const pollers = startQueuePollers({ queues, consumers: queueConsumers });
const sqs = new SQSClient(queues.clientConfig);

const { key, call } = await benchOrganization(runtime(), baseUrl);
const models = await call<{ data: { id: string }[] }>('GET', '/v1/chat/models?provider=openai-compatible');
const modelId = models.data[0]?.id as string;
const agent = await call<{ id: string }>('POST', '/v2/chat/agents', { fullName: 'Bench', description: 'Bench', role: 'Answer briefly.', modelId });

const progress = (line: string) => process.env.BENCH_COST_PROGRESS && console.error(`[cost] ${new Date().toISOString()} ${line}`);
progress('ready');
// Warm-up: every function loads its modules and opens its connections (cold starts are not what is counted).
const warmup = await openSession();
for (let turn = 0; turn < warmupTurns; turn += 1) await streamTurn(warmup, 'hello there');
await closeSession(warmup);
takeRecords();

progress('warmed up');
// 1. Chat turns, no webhook endpoint.
const turnRecords: CostRecord[] = [];
const sessionRecords: CostRecord[] = [];
for (let index = 0; index < sessions; index += 1) {
  const sessionId = await openSession();
  await settle();
  sessionRecords.push(...takeRecords());
  for (let turn = 0; turn < turnsPerSession; turn += 1) await streamTurn(sessionId, 'hello there');
  await settle();
  turnRecords.push(...takeRecords());
  await closeSession(sessionId);
  sessionRecords.push(...takeRecords());
}
const turns = sessions * turnsPerSession;

progress('turns counted');
// 2. The same turns with an endpoint subscribed to message.added: two deliveries a turn.
await call('POST', '/v1/chat/webhooks', { url: `http://127.0.0.1:${deliveries.port}/hooks`, events: ['message.added'] });
const deliveryTurnRecords: CostRecord[] = [];
const deliveredBefore = deliveries.count();
for (let index = 0; index < sessions; index += 1) {
  const sessionId = await openSession();
  await settle();
  takeRecords();
  const expected = deliveries.count() + 2 * turnsPerSession;
  for (let turn = 0; turn < turnsPerSession; turn += 1) await streamTurn(sessionId, 'hello there');
  await settle(() => deliveries.count() >= expected);
  deliveryTurnRecords.push(...takeRecords());
  await closeSession(sessionId);
  takeRecords();
}
const webhookDeliveries = deliveries.count() - deliveredBefore;

progress('deliveries counted');
// 3. A one-minute call: the callee says a line every callSeconds / callExchanges seconds, then hangs up.
const callRecords = await measureCall();

progress('call counted');
// 4. The SDK floor's turn, counted alike in a process of its own.
const floorRecords = await measureFloor();

const rollupRecords = [...turnRecords, ...sessionRecords, ...deliveryTurnRecords, ...callRecords].filter(isRollup);
const usageRollups = rollupRecords.filter((record) => record.kind === 'invocation').length;
const withoutRollups = (records: CostRecord[]) => records.filter((record) => !isRollup(record));
/** Each invocation at its function's memory; the SDK floor's turn at that of the turn's function. */
const memoryOf = (name: string) => memoryMbOf(name === 'sdk-floor' ? 'chat-messages' : name);
const perTurn = costPer(withoutRollups(turnRecords), turns, memoryOf);
const perSession = costPer(withoutRollups(sessionRecords), sessions, memoryOf);
const deliveryWork = (records: CostRecord[]) => usageOf(records.filter((record) => isBilledWork(record) && isDelivery(record)), memoryOf);
const deliveryUsage = scaleUsage(atLeastZero(usageDifference(deliveryWork(deliveryTurnRecords), deliveryWork(turnRecords))), 1 / Math.max(1, webhookDeliveries));
const result: CostBenchResult = {
  perTurn,
  perSession,
  perTurnInSession: costPer(withoutRollups([...turnRecords, ...sessionRecords]), turns, memoryOf),
  perWebhookDelivery: { ...deliveryUsage, dollars: dollarsOf(deliveryUsage) },
  perCallMinute: costPer(withoutRollups(callRecords), callSeconds / 60, memoryOf),
  perUsageRollup: costPer(rollupRecords, Math.max(1, usageRollups), memoryOf),
  floorPerTurn: costPer(floorRecords, floorRequests, memoryOf),
  turns,
  turnsPerSession,
  webhookDeliveries,
  usageRollups,
  callSeconds,
  callExchanges,
  loadAverage: { start: loadAtStart, end: loadavg()[0] as number, cores: cpus().length },
};
// Everything stopped before the figures go: the parent then stops the database.
await poller.stop();
await pollers.stop();
await router.stop();
await voice.stop();
await queues.stop();
await stub.close();
deliveries.close();
server.closeAllConnections();
server.close();
process.send?.(result, () => process.exit(0));

/** The usage roll-up's work: its function, and Lambda's polls of its queue. */
function isRollup(record: CostRecord): boolean {
  return record.function === 'usage-rollup' || (record.kind === 'sqs' && record.queue === usageRollupQueue.name);
}

/** The delivery function's work and Lambda's polls of its queue. */
function isDelivery(record: CostRecord): boolean {
  return record.function === 'webhook-delivery' || (record.kind === 'sqs' && record.caller === 'event-source-mapping' && record.queue === webhookDeliveryQueue.name);
}

/** The records written since the last call. */
function takeRecords(): CostRecord[] {
  const { records, end } = readCostRecords(accountingFile, offset);
  offset = end;
  return records;
}

/**
 * Waits until what the last requests set off has run: every queue empty (the roll-ups' delayed messages aside: they
 * are due up to a minute later), no schedule pending, nothing written down for `quietMs`, and `done` holds.
 */
async function settle(done: () => boolean = () => true, file = accountingFile): Promise<void> {
  const deadline = Date.now() + 120_000;
  let size = -1;
  let quietSince = Date.now();
  for (;;) {
    if (Date.now() > deadline) throw new Error('the runtime did not settle within 120 s');
    const current = readFileSync(file).length;
    if (current !== size) {
      size = current;
      quietSince = Date.now();
    }
    const schedulesDue = voice.scheduler?.pending().length ?? 0;
    if (done() && schedulesDue === 0 && Date.now() - quietSince >= quietMs && (await queuesIdle())) return;
    await new Promise((resolveWait) => setTimeout(resolveWait, 100));
  }
}

async function queuesIdle(): Promise<boolean> {
  const counts = await Promise.all(
    Object.entries(queues.urls)
      .filter(([name]) => !name.endsWith('-dlq') && !name.endsWith('-dlq.fifo'))
      .map(async ([name, url]) => {
        const { Attributes: attributes = {} } = await sqs.send(
          new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'] }),
        );
        const delayed = name === usageRollupQueue.name ? 0 : Number(attributes.ApproximateNumberOfMessagesDelayed ?? 0);
        return Number(attributes.ApproximateNumberOfMessages ?? 0) + Number(attributes.ApproximateNumberOfMessagesNotVisible ?? 0) + delayed;
      }),
  );
  return counts.every((count) => count === 0);
}

async function openSession(): Promise<string> {
  return (await call<{ id: string }>('POST', '/v1/chat/chat/sessions', { agentId: agent.id })).id;
}

/** Closes the session and waits until its analysis is attached (then `session.ended` has been written) and all has run. */
async function closeSession(sessionId: string): Promise<void> {
  await call('PATCH', `/v1/chat/chat/sessions/${sessionId}/close`);
  await settle();
  const deadline = Date.now() + 60_000;
  while (!(await call<{ analysis?: unknown }>('GET', `/api/v1/chat/sessions/${sessionId}`)).analysis) {
    if (Date.now() > deadline) throw new Error(`session ${sessionId} was not analysed within 60 s`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 100));
  }
  await settle();
}

async function streamTurn(sessionId: string, content: string): Promise<void> {
  const response = await fetch(`${baseUrl}/v1/chat/chat/sessions/${sessionId}/messages`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ content }),
  });
  const body = await response.text();
  if (response.status !== 200 || !body.endsWith('data: [DONE]\n\n') || body.includes('"error"')) throw new Error(`turn answered ${response.status}: ${body.slice(-200)}`);
}

/**
 * A call of `callSeconds` from the start request until its session has ended and everything it set off has run:
 * the callee says a line every `callSeconds / callExchanges` seconds (once the previous reply has ended) and hangs up.
 */
async function measureCall(): Promise<CostRecord[]> {
  const account = { accountSid: `AC${'0'.repeat(32)}`, authToken: 'f'.repeat(32) };
  await call('PUT', '/v1/chat/telephony/twilio', account);
  // A number bought in the Twilio console: importing it routes it here.
  twilio.addIncomingNumber({ ...account, phoneNumber: '+15557000001' });
  const voiceAgent = await call<{ id: string }>('POST', '/v2/chat/agents', {
    fullName: 'Bench voice',
    description: 'Bench',
    role: 'Answer briefly.',
    modelId,
    voiceEnabled: true,
    voicePipelineMode: 'pipeline',
  });
  const number = await call<{ id: string }>('POST', '/api/v1/phone-numbers', { phone_number: '+15557000001' });
  await settle();
  takeRecords();
  const callee = '+15550150';
  const pace = (callSeconds * 1000) / callExchanges;
  const ended = new Promise<void>((done) => {
    let say: (line: string | null) => void = () => undefined;
    let connectedAt = 0;
    let spoken = 0;
    const speakNext = () => {
      const due = connectedAt + spoken * pace;
      setTimeout(() => {
        if (spoken === callExchanges) return say(null);
        spoken += 1;
        say(`Line ${spoken} of the caller, please note it.`);
      }, Math.max(0, due - Date.now()));
    };
    twilio.attachCallee(callee, {
      onConnected: (speak) => {
        say = speak;
        connectedAt = Date.now();
        speakNext();
      },
      onToken: (_token, last) => {
        if (last) speakNext();
      },
      onEnd: () => done(),
    });
  });
  // The time limit leaves the call room to end as the callee hangs up; its backstop then fires soon after.
  const started = await call<{ sessionId: string }>('POST', `/api/v1/phone-numbers/${number.id}/calls/start`, { to_phone_number: callee, agent_id: voiceAgent.id, ttl: callSeconds + 15 });
  await ended;
  await settle();
  const deadline = Date.now() + 60_000;
  while (!(await call<{ analysis?: unknown }>('GET', `/api/v1/chat/sessions/${started.sessionId}`)).analysis) {
    if (Date.now() > deadline) throw new Error('the call\'s session was not analysed within 60 s');
    await new Promise((resolveWait) => setTimeout(resolveWait, 100));
  }
  await settle();
  return takeRecords();
}

/** The SDK floor server with the same accounting: `floorRequests` turns after a warm-up, one at a time. */
async function measureFloor(): Promise<CostRecord[]> {
  const floorFile = `${accountingFile}.floor`;
  writeFileSync(floorFile, '');
  const child = fork(resolve(import.meta.dirname, 'sdk-floor-server.ts'), {
    env: { ...process.env, DYNAMODB_ENDPOINT: database.endpoint, TABLE_NAME: database.tableName, [costAccountingVariable]: floorFile },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    const port = await new Promise<number>((done) => child.once('message', (message: { port: number }) => done(message.port)));
    const turn = async () => void (await (await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: '{}' })).arrayBuffer());
    for (let index = 0; index < 20; index += 1) await turn();
    // The warm-up's last transaction is written down once it has been read back: before the measured turns start.
    await settle(() => true, floorFile);
    const measuredFrom = readFileSync(floorFile, 'utf8').length;
    for (let index = 0; index < floorRequests; index += 1) await turn();
    await settle(() => true, floorFile);
    return readCostRecords(floorFile, measuredFrom).records;
  } finally {
    child.kill('SIGTERM');
  }
}

/** Where webhook deliveries go: answers 204 to every one, and counts them. */
async function startWebhookReceiver(): Promise<{ port: number; count(): number; close(): void }> {
  let received = 0;
  const receiver = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      received += 1;
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((listening) => receiver.listen(0, '127.0.0.1', listening));
  return { port: (receiver.address() as AddressInfo).port, count: () => received, close: () => receiver.close() };
}
