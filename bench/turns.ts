import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { startOpenAIStub, type OpenAIStub, type RecordedRequest } from '../test/support/openai-stub.ts';
import { sequentialRoundTrips, startDynamoDbProxy, type ProxiedCall } from './dynamodb-proxy.ts';
import { processCpuMs } from './cpu.ts';
import type { SdkFloorResult } from './sdk-floor.ts';

export interface Percentiles {
  p50: number;
  p99: number;
  max: number;
}

export interface TurnBenchResult {
  streamedOverheadMs: Percentiles & { turns: number };
  /** The same turns in sessions bound to a version of a MANUAL agent (its version read in the turn's batch): the cost of versioning. */
  boundOverheadMs: Percentiles & { turns: number };
  toolTurnOverheadMs: Percentiles & { turns: number };
  dynamodb: { callsPerTurn: number; callsBeforeFirstDelta: number; roundTripsBeforeFirstDelta: number; operations: Record<string, number> };
  nonStreamed: Awaited<ReturnType<typeof nonStreamedLoad>>;
  apiCpuMsPerTurn: number;
  apiRssMb: number;
  /** What the three DynamoDB calls of a turn cost alone (`sdk-floor.ts`); filled in by the bench after the turns. */
  sdkFloor?: SdkFloorResult;
}

/** BENCH_TURNS and BENCH_LOAD_MS shorten a run while working on the engine; the figures reported use the defaults. */
const streamedTurns = Number(process.env.BENCH_TURNS ?? 200);
const accountedTurns = 20;
const warmupTurns = 30;
const turnsPerSession = 10;
const loadConcurrency = 16;
const loadWarmupMs = 3_000;
const loadDurationMs = Number(process.env.BENCH_LOAD_MS ?? 20_000);

/**
 * Turn benchmarks of the conversation engine against a stub OpenAI-compatible model that streams 20 tokens with
 * no delay, so that every millisecond measured is the platform's. The API runs alone in a child process (its CPU
 * and memory are read from /proc) on an in-memory DynamoDB Local; a second API process, behind a counting proxy,
 * tells how many DynamoDB calls a turn makes and how many come before its first delta.
 */
export async function measureTurns(dynamodbEndpoint: string, tableName: string, log: (line: string) => void): Promise<TurnBenchResult> {
  const stub = await startOpenAIStub({ toolCall: (body) => (lastUserText(body).includes('LOOKUP') ? { name: 'LOOKUP', arguments: { q: 'x' } } : undefined) });
  const proxy = await startDynamoDbProxy(dynamodbEndpoint);
  const toolServer = await startToolServer();
  const env = {
    TABLE_NAME: tableName,
    OPENAI_COMPATIBLE_BASE_URL: stub.baseUrl,
    OPENAI_COMPATIBLE_MODELS: 'stub-model',
    POWERTOOLS_LOG_LEVEL: 'WARN',
    LOOPBACK_EGRESS_PORTS: '1024-65535',
  };
  const api = await startApi({ ...env, DYNAMODB_ENDPOINT: dynamodbEndpoint });
  const countedApi = await startApi({ ...env, DYNAMODB_ENDPOINT: proxy.endpoint });
  try {
    const { key, agentId, toolAgentId } = await setUp(api.baseUrl, dynamodbEndpoint, tableName, toolServer.url);
    const boundAgentId = await createBoundAgent(api.baseUrl, key, agentId);
    log(`streamed turns: ${warmupTurns} warm-up, then ${streamedTurns} measured, one at a time`);
    const streamed = await sequentialTurns(api.baseUrl, key, agentId, streamedTurns, stub, () => 'hello there');
    log(`streamed turns in sessions bound to a MANUAL agent's version: ${warmupTurns} warm-up, then ${streamedTurns} measured`);
    const bound = await sequentialTurns(api.baseUrl, key, boundAgentId, streamedTurns, stub, () => 'hello there');
    log(`turns with one tool call: ${warmupTurns} warm-up, then ${streamedTurns} measured`);
    const withTool = await sequentialTurns(api.baseUrl, key, toolAgentId, streamedTurns, stub, () => 'LOOKUP please', toolServer);
    log(`DynamoDB calls of ${accountedTurns} streamed turns, through a counting proxy`);
    const counted = await sequentialTurns(countedApi.baseUrl, key, agentId, accountedTurns, stub, () => 'hello there', undefined, proxy.calls);
    log(`non-streamed turns at concurrency ${loadConcurrency}: ${loadWarmupMs / 1000} s warm-up, ${loadDurationMs / 1000} s measured`);
    stub.requests.length = 0;
    const cpuBefore = processCpuMs(api.child.pid as number);
    const load = await nonStreamedLoad(api.baseUrl, key, agentId);
    const cpuMs = processCpuMs(api.child.pid as number) - cpuBefore;
    return {
      streamedOverheadMs: { ...percentiles(streamed.overheads), turns: streamed.overheads.length },
      boundOverheadMs: { ...percentiles(bound.overheads), turns: bound.overheads.length },
      toolTurnOverheadMs: { ...percentiles(withTool.overheads), turns: withTool.overheads.length },
      dynamodb: counted.dynamodb,
      nonStreamed: load,
      apiCpuMsPerTurn: cpuMs / Math.max(1, load.allTurns),
      apiRssMb: processRssMb(api.child.pid as number),
    };
  } finally {
    api.child.kill('SIGTERM');
    countedApi.child.kill('SIGTERM');
    await Promise.all([stub.close(), proxy.close(), new Promise((done) => toolServer.server.close(done))]);
  }
}

export function lastUserText(body: { messages: { role: string; content?: unknown }[] }): string {
  const last = [...body.messages].reverse().find((message) => message.role === 'user' || message.role === 'tool');
  return last?.role === 'user' ? JSON.stringify(last.content) : '';
}

async function startApi(env: Record<string, string>): Promise<{ child: ChildProcess; baseUrl: string }> {
  const child = fork(resolve(import.meta.dirname, 'turn-api.ts'), { env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const port = await new Promise<number>((done, fail) => {
    child.once('message', (message: { port: number }) => done(message.port));
    child.once('exit', (code) => fail(new Error(`API process exited with ${code}`)));
  });
  return { child, baseUrl: `http://127.0.0.1:${port}` };
}

export async function startToolServer(): Promise<{ server: Server; url: string; handled: number[] }> {
  const handled: number[] = [];
  const server = createServer((incoming, outgoing) => {
    const start = performance.now();
    incoming.resume();
    incoming.on('end', () => {
      outgoing.setHeader('content-type', 'application/json');
      outgoing.end('{"status":"found"}');
      handled.push(performance.now() - start);
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/lookup`, handled };
}

async function setUp(baseUrl: string, endpoint: string, tableName: string, toolUrl: string) {
  // A runtime of its own: this process may already hold one bound to another database.
  const [{ createRuntime }, { parseConfig }, { issueApiKey }] = await Promise.all([
    import('../shared/runtime.ts'),
    import('../shared/platform/config.ts'),
    import('../shared/identity/api-keys.ts'),
  ]);
  const deps = createRuntime(parseConfig({ ...process.env, DYNAMODB_ENDPOINT: endpoint, TABLE_NAME: tableName }));
  const orgId = crypto.randomUUID();
  await deps.orgs.ensure({ id: orgId, name: 'bench', createdAt: new Date().toISOString() });
  const { key } = await issueApiKey(deps, orgId, { name: 'bench', scopes: ['*'] });
  return { key, ...(await createBenchAgents(baseUrl, key, toolUrl)) };
}

/** An agent on the stub model, and one with an HTTP tool (LOOKUP) at `toolUrl`, for the organization of `key`. */
export async function createBenchAgents(baseUrl: string, key: string, toolUrl: string): Promise<{ agentId: string; toolAgentId: string }> {
  const call = async (method: string, path: string, body: unknown) => {
    const response = await fetch(baseUrl + path, { method, headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as { id: string; data?: { id: string; provider: string }[] };
  };
  const models = await fetch(`${baseUrl}/v1/chat/models?provider=openai-compatible`, { headers: { 'x-api-key': key } }).then((r) => r.json() as Promise<{ data: { id: string }[] }>);
  const modelId = models.data[0]?.id;
  const agent = await call('POST', '/v2/chat/agents', { fullName: 'Bench', description: 'Bench', role: 'Answer briefly.', modelId });
  const tool = await call('POST', '/v1/chat/tools', {
    name: 'LOOKUP',
    description: 'Looks things up',
    type: 'API_TOOL',
    ajvPropertiesSchema: { type: 'object', properties: { q: { type: 'string' } } },
    apiTool: { url: toolUrl, method: 'POST' },
  });
  const toolAgent = await call('POST', '/v2/chat/agents', { fullName: 'Bench', description: 'Bench', role: 'Use tools.', modelId, tools: [{ toolId: tool.id }] });
  return { agentId: agent.id, toolAgentId: toolAgent.id };
}

/** A MANUAL agent like the bench agent, with a draft over its published version 1: its sessions are bound to version 1. */
async function createBoundAgent(baseUrl: string, key: string, agentId: string): Promise<string> {
  const headers = { 'x-api-key': key, 'content-type': 'application/json' };
  const { modelId } = (await fetch(`${baseUrl}/v2/chat/agents/${agentId}`, { headers }).then((r) => r.json())) as { modelId: string };
  const created = await fetch(`${baseUrl}/v2/chat/agents`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ fullName: 'Bench', description: 'Bench', role: 'Answer briefly.', modelId, publishMode: 'MANUAL' }),
  });
  const { id } = (await created.json()) as { id: string };
  await fetch(`${baseUrl}/v2/chat/agents/${id}`, { method: 'PATCH', headers, body: JSON.stringify({ role: 'Answer at length.' }) });
  return id;
}

export async function openSession(baseUrl: string, key: string, agentId: string): Promise<string> {
  const response = await fetch(`${baseUrl}/v1/chat/chat/sessions`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ agentId }),
  });
  return ((await response.json()) as { id: string }).id;
}

/** One streamed turn: when it was sent, when its first delta arrived, when it ended. */
export function streamTurn(baseUrl: string, key: string, sessionId: string, content: string): Promise<{ start: number; firstDelta: number; end: number }> {
  return new Promise((done, fail) => {
    const start = performance.now();
    let firstDelta = 0;
    const call = request(`${baseUrl}/v1/chat/chat/sessions/${sessionId}/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
    });
    call.on('response', (response) => {
      if (response.statusCode !== 200) fail(new Error(`turn answered ${response.statusCode}`));
      response.on('data', (chunk: Buffer) => {
        if (!firstDelta && chunk.includes('"delta"')) firstDelta = performance.now();
      });
      response.on('end', () => done({ start, firstDelta, end: performance.now() }));
    });
    call.on('error', fail);
    call.end(JSON.stringify({ content }));
  });
}

async function sequentialTurns(
  baseUrl: string,
  key: string,
  agentId: string,
  measuredTurns: number,
  stub: OpenAIStub,
  content: () => string,
  toolServer?: { handled: number[] },
  dynamodbCalls: ProxiedCall[] = [],
) {
  const overheads: number[] = [];
  const perTurn: { calls: number; before: number; trips: number }[] = [];
  const operations: Record<string, number> = {};
  let sessionId = '';
  for (let turn = 0; turn < warmupTurns + measuredTurns; turn += 1) {
    if (turn % turnsPerSession === 0) sessionId = await openSession(baseUrl, key, agentId);
    const stubFrom = stub.requests.length;
    const toolFrom = toolServer?.handled.length ?? 0;
    const callsFrom = dynamodbCalls.length;
    const timing = await streamTurn(baseUrl, key, sessionId, content());
    if (turn < warmupTurns) continue;
    const modelRequests = stub.requests.slice(stubFrom);
    overheads.push(timing.firstDelta - timing.start - modelTime(modelRequests, timing.firstDelta) - sum(toolServer?.handled.slice(toolFrom) ?? []));
    const calls = dynamodbCalls.slice(callsFrom).filter((call) => call.start >= timing.start && call.start <= timing.end);
    const before = calls.filter((call) => call.start < timing.firstDelta);
    perTurn.push({ calls: calls.length, before: before.length, trips: sequentialRoundTrips(before) });
    for (const call of calls) operations[call.operation] = (operations[call.operation] ?? 0) + 1;
  }
  const average = (pick: (turn: (typeof perTurn)[number]) => number) => sum(perTurn.map(pick)) / Math.max(1, perTurn.length);
  for (const name of Object.keys(operations)) operations[name] = (operations[name] ?? 0) / perTurn.length;
  return {
    overheads,
    dynamodb: {
      callsPerTurn: average((turn) => turn.calls),
      callsBeforeFirstDelta: average((turn) => turn.before),
      roundTripsBeforeFirstDelta: Math.max(0, ...perTurn.map((turn) => turn.trips)),
      operations,
    },
  };
}

/**
 * The model's own share before the first delta: every model call that finished before it, plus the time to first
 * chunk of the one that produced it. The stub records epoch milliseconds; this converts to the performance clock.
 */
function modelTime(requests: RecordedRequest[], firstDelta: number): number {
  const clock = (epochMs: number | undefined) => (epochMs === undefined ? undefined : epochMs - performance.timeOrigin);
  return sum(
    requests
      .map((recorded) => ({ received: clock(recorded.timings.received) as number, firstChunk: clock(recorded.timings.firstChunk), end: clock(recorded.timings.end) }))
      .filter((timings) => timings.received < firstDelta)
      .map((timings) => ((timings.end !== undefined && timings.end < firstDelta ? timings.end : timings.firstChunk) ?? timings.received) - timings.received),
  );
}

/** Non-streamed turns from `concurrency` clients at once, each in sessions of `sessionTurns` turns; measured after a warm-up. */
export async function nonStreamedLoad(
  baseUrl: string,
  key: string,
  agentId: string,
  { concurrency = loadConcurrency, warmupMs = loadWarmupMs, durationMs = loadDurationMs, sessionTurns = turnsPerSession } = {},
) {
  const sessions = await Promise.all(Array.from({ length: concurrency }, () => openSession(baseUrl, key, agentId)));
  const latencies: number[] = [];
  let errors = 0;
  let total = 0;
  const started = performance.now();
  const measureFrom = started + warmupMs;
  const stopAt = measureFrom + durationMs;
  await Promise.all(
    sessions.map(async (first) => {
      // A fresh session now and then keeps the history (and so the prompt) the size of a short conversation.
      let current = first;
      for (let turn = 1; performance.now() < stopAt; turn += 1) {
        if (turn % sessionTurns === 0) current = await openSession(baseUrl, key, agentId);
        const start = performance.now();
        const response = await fetch(`${baseUrl}/v1/chat/chat/sessions/${current}/messages`, {
          method: 'POST',
          headers: { 'x-api-key': key, 'content-type': 'application/json' },
          body: JSON.stringify({ content: 'hello there', stream: false }),
        });
        await response.arrayBuffer();
        total += 1;
        if (start >= measureFrom) {
          if (response.status === 200) latencies.push(performance.now() - start);
          else errors += 1;
        }
      }
    }),
  );
  const measured = percentiles(latencies);
  return {
    concurrency,
    durationMs,
    turns: latencies.length,
    turnsPerSecond: latencies.length / (durationMs / 1000),
    errors,
    /** Answered, but after more than 2 s (a client that gives up at 2 s would have counted them failed). */
    over2s: latencies.filter((latency) => latency > 2_000).length,
    p50Ms: measured.p50,
    p99Ms: measured.p99,
    allTurns: total,
  };
}

/** A process's resident memory; 0 for one that has ended meanwhile. */
export function processRssMb(pid: number): number {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return 0;
  }
  const line = status.split('\n').find((entry) => entry.startsWith('VmRSS:')) ?? '';
  return Number(line.replace(/\D+/g, '')) / 1024;
}

export function percentiles(values: readonly number[]): Percentiles {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  return { p50: at(0.5), p99: at(0.99), max: sorted.at(-1) ?? Number.NaN };
}

function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}
