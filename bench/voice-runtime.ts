/**
 * Calls on the local runtime, in a child process on the database the parent names: the API, the stream poller
 * (analysis jobs), the SQS emulator with the analysis and backstop functions, the WebSocket API and the Twilio
 * simulator, as `npm start` runs them. The callees are driven in this process (the simulator's interactive
 * callee), so each prompt and each token is timed where the carrier would see it. Reports its figures and exits.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import WebSocket from 'ws';
import { queueConsumers, tableStreamConsumers } from '../functions/consumers.ts';
import { routeGroups } from '../functions/route-groups.ts';
import { useLocalDatabase } from '../infra/local/environment.ts';
import { startQueuePollers } from '../infra/local/queue-poller.ts';
import { startLocalQueues } from '../infra/local/queues.ts';
import { createLocalServer } from '../infra/local/server.ts';
import { startStreamPoller } from '../infra/local/stream-poller.ts';
import { startLocalVoice } from '../infra/local/voice.ts';
import { startWebSocketGateway } from '../infra/local/websocket-gateway.ts';
import { benchOrganization } from './bench-api.ts';
import { runtime } from '../shared/runtime.ts';
import { keys } from '../shared/platform/store/keys.ts';
import { percentiles, type Percentiles } from './turns.ts';

export interface VoiceBenchResult {
  /** Prompt sent → first `text` token received, minus the model's first token (`modelFirstTokenMs`). */
  turnOverheadMs: Percentiles & { turns: number };
  /** The same round trip through the same gateway with a handler that only sends one token back. */
  floorMs: Percentiles & { turns: number };
  concurrent: { calls: number; turnsPerCall: number; sessionsEnded: number; lostEnded: number; duplicatedEnded: number; misordered: number; cpuMsPerTurn: number; durationMs: number };
}

const database = { endpoint: process.env.BENCH_DYNAMODB_ENDPOINT as string, tableName: process.env.TABLE_NAME as string };
useLocalDatabase(database);
const consumers = queueConsumers.filter((consumer) => consumer.name !== 'webhook-delivery');
const queues = await startLocalQueues({ consumers, rules: [], streamConsumers: tableStreamConsumers });
const { server, preload } = createLocalServer(routeGroups);
await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
const baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
const voice = await startLocalVoice(baseUrl, process.env, { queues });
const simulator =
  voice.simulator ??
  (() => {
    throw new Error('The bench measures calls against the Twilio simulator: unset TWILIO_API_BASE_URL.');
  })();
await preload();
const poller = startStreamPoller({ endpoint: database.endpoint, tableName: database.tableName, consumers: tableStreamConsumers.filter((consumer) => consumer.name === 'analysis-dispatch'), idleDelayMs: 25 });
const pollers = startQueuePollers({ queues, consumers });
await poller.ready;

const deps = runtime();
const { orgId, call } = await benchOrganization(deps, baseUrl);
await call('PUT', '/v1/chat/telephony/twilio', { accountSid: `AC${'0'.repeat(32)}`, authToken: 'f'.repeat(32) });
const agent = await call('POST', '/v2/chat/agents', { fullName: 'Bench', description: 'Bench', role: 'Bench', voiceEnabled: true, voicePipelineMode: 'pipeline' });
const number = await call('POST', '/api/v1/phone-numbers/buy', { area_code: '415' });

interface Timed {
  sessionId: string;
  /** Per prompt: ms from sending it to the reply's first token. */
  firstTokenMs: number[];
}

/** One call whose callee says `lines` one after another (each after the previous reply ended), then hangs up. */
function converse(to: string, lines: string[]): Promise<Timed> {
  return new Promise((done, fail) => {
    const firstTokenMs: number[] = [];
    let sentAt = 0;
    let awaitingFirst = false;
    let index = 0;
    let say: (line: string | null) => void = () => undefined;
    let sessionId = '';
    const next = () => {
      if (index === lines.length) return say(null);
      sentAt = performance.now();
      awaitingFirst = true;
      say(lines[index++] as string);
    };
    simulator.attachCallee(to, {
      onConnected: (speak) => {
        say = speak;
        next();
      },
      onToken: (_token, last) => {
        if (awaitingFirst) {
          firstTokenMs.push(performance.now() - sentAt);
          awaitingFirst = false;
        }
        if (last) next();
      },
      onEnd: () => done({ sessionId, firstTokenMs }),
    });
    call('POST', `/api/v1/phone-numbers/${number.id}/calls/start`, { to_phone_number: to, agent_id: agent.id, ttl: 1800 })
      .then((started) => {
        sessionId = started.sessionId as string;
      })
      .catch(fail);
  });
}

/** The model's own first-token time of each reply, in order. */
async function modelFirstTokens(sessionId: string): Promise<{ firstTokenMs: number[]; messages: { role: string; content: string }[] }> {
  const page = await call('GET', `/api/v1/chat/sessions/${sessionId}/messages?limit=100`);
  const messages = page.data as { role: string; content: string; metadata: { timings?: { modelFirstTokenMs?: number } } }[];
  return { firstTokenMs: messages.filter((message) => message.role === 'ASSISTANT').map((message) => message.metadata.timings?.modelFirstTokenMs ?? 0), messages };
}

const lines = (count: number, tag: string) => Array.from({ length: count }, (_, index) => `${tag} line ${index + 1}, please note it.`);

// Warm-up: the functions' first invocations load their modules and open their connections.
await converse('+15550100', lines(3, 'warm-up'));

// 1. Turn overhead: 10 calls of 20 turns, one after another.
const overheads: number[] = [];
for (let index = 0; index < 10; index += 1) {
  const timed = await converse('+15550101', lines(20, `call ${index}`));
  const model = await modelFirstTokens(timed.sessionId);
  timed.firstTokenMs.forEach((ms, turn) => overheads.push(ms - (model.firstTokenMs[turn] ?? 0)));
}

// The floor: the same client → gateway → handler → management API → client path, with a handler that does nothing.
process.env.BENCH_ECHO_MANAGEMENT_ENDPOINT = '';
const echo = await startWebSocketGateway({ name: 'voice-echo', entry: 'bench/voice-echo-handler.ts', routeKeys: ['$connect', '$disconnect', '$default'] });
process.env.BENCH_ECHO_MANAGEMENT_ENDPOINT = echo.managementEndpoint;
const floor: number[] = await new Promise((done) => {
  const socket = new WebSocket(echo.url);
  const samples: number[] = [];
  let sentAt = 0;
  const send = () => {
    sentAt = performance.now();
    socket.send(JSON.stringify({ type: 'prompt', voicePrompt: 'x', last: true }));
  };
  socket.on('open', send);
  socket.on('message', () => {
    samples.push(performance.now() - sentAt);
    if (samples.length === 220) {
      socket.close();
      done(samples.slice(20));
    } else send();
  });
});
await echo.stop();

// 2. 50 concurrent calls of 10 turns each: every session ends once, every transcript in order.
const calls = 50;
const turnsPerCall = 10;
const cpuBefore = process.cpuUsage();
const startedAt = performance.now();
const timedCalls = await Promise.all(Array.from({ length: calls }, (_, index) => converse(`+155501${String(index).padStart(2, '0')}`, lines(turnsPerCall, `caller ${index}`))));
const cpu = process.cpuUsage(cpuBefore);
const durationMs = performance.now() - startedAt;
// session.ended follows the analysis: wait until every session has it, then a moment for duplicates to show.
const endedCounts = async () =>
  Promise.all(
    timedCalls.map(async ({ sessionId }) => {
      const outbox = await deps.documentClient.send(
        new QueryCommand({
          TableName: database.tableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :outbox)',
          ExpressionAttributeValues: { ':pk': keys.sessionPartition(orgId, sessionId), ':outbox': 'OUTBOX#' },
        }),
      );
      return (outbox.Items ?? []).filter((item) => item.type === 'session.ended').length;
    }),
  );
const deadline = Date.now() + 60_000;
let counts = await endedCounts();
while (counts.some((count) => count === 0) && Date.now() < deadline) {
  await new Promise((resolve) => setTimeout(resolve, 250));
  counts = await endedCounts();
}
await new Promise((resolve) => setTimeout(resolve, 1000));
counts = await endedCounts();
let misordered = 0;
for (const [index, timed] of timedCalls.entries()) {
  const { messages } = await modelFirstTokens(timed.sessionId);
  const said = messages.filter((message) => message.role === 'USER').map((message) => message.content);
  const roles = messages.map((message) => message.role).join(',');
  const expectedRoles = Array.from({ length: turnsPerCall }, () => 'USER,ASSISTANT').join(',');
  if (JSON.stringify(said) !== JSON.stringify(lines(turnsPerCall, `caller ${index}`)) || roles !== expectedRoles) misordered += 1;
}

const result: VoiceBenchResult = {
  turnOverheadMs: { turns: overheads.length, ...percentiles(overheads) },
  floorMs: { turns: floor.length, ...percentiles(floor) },
  concurrent: {
    calls,
    turnsPerCall,
    sessionsEnded: counts.filter((count) => count === 1).length,
    lostEnded: counts.filter((count) => count === 0).length,
    duplicatedEnded: counts.filter((count) => count > 1).length,
    misordered,
    cpuMsPerTurn: (cpu.user + cpu.system) / 1000 / (calls * turnsPerCall),
    durationMs,
  },
};
process.send?.(result);
await poller.stop();
await pollers.stop();
await voice.stop();
await queues.stop();
server.closeAllConnections();
server.close();
process.exit(0);
