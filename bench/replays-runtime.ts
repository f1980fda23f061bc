/**
 * Child process of the replay benchmark: the API on the database the parent names, an agent with one GET tool and
 * its conversations had through the chat API (timed: the live figure), then, turn about, a replay of them run as the
 * replay function runs it (`startReplay`'s checks and record, then `runReplay` with the handler's deps) and the floor,
 * the replay's own turn loop over the same sessions and candidate held in memory. Reports its figures and exits.
 */
import { replayWorkerRuntime } from '../functions/replay/handler.ts';
import { conversationRuntime } from '../shared/conversations/conversation-runtime.ts';
import type { SessionStore, StoredSession } from '../shared/conversations/ports.ts';
import type { Replay } from '../shared/conversations/replay-schemas.ts';
import { candidateOf, replaySession, runReplay, startReplay, type ReplayQueueMessage, type ReplayWorkerDeps } from '../shared/conversations/replays.ts';
import type { Message } from '../shared/conversations/session-schemas.ts';
import { startBenchApi } from './bench-api.ts';
import type { ReplaysResult, Throughput } from './replays.ts';
import { startToolServer } from './turns.ts';

const sessionCount = 10;
const rounds = Number(process.env.BENCH_REPLAY_ROUNDS ?? 30);
/** Ten turns, three of them asking for the tool: a replay answers those from the recordings. */
const conversation = [
  'Hello there',
  'Please run lookup_order with {"id":"A1"}',
  'Thanks a lot',
  'What are your opening hours',
  'Then run lookup_order with {"id":"B2"}',
  'How are you today',
  'Can I change my address',
  'Again run lookup_order with {"id":"A1"}',
  'Good to know',
  'That is everything',
];

const { orgId, call, close } = await startBenchApi();
const toolServer = await startToolServer();
const tool = await call('POST', '/v1/chat/tools', {
  name: 'lookup_order',
  description: 'Looks an order up',
  type: 'API_TOOL',
  ajvPropertiesSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
  apiTool: { url: `${toolServer.url}/{{id}}`, method: 'GET', headers: {} },
});
const agent = await call('POST', '/v2/chat/agents', { fullName: 'Orders', description: 'Orders', role: 'You help with orders.', publishMode: 'MANUAL', tools: [{ toolId: tool.id }] });

const live = await measured(async () => {
  const sessionIds: string[] = [];
  for (let index = 0; index < sessionCount; index += 1) {
    const session = await call('POST', '/v1/chat/chat/sessions', { agentId: agent.id });
    for (const content of conversation) await call('POST', `/v1/chat/chat/sessions/${session.id}/messages`, { content, stream: false });
    sessionIds.push(session.id);
  }
  return { turns: sessionCount * conversation.length, sessionIds };
});
// The candidate is the draft: a changed prompt with no rule the built-in model follows, so every turn must come back the same.
const draft = await call('PATCH', `/v2/chat/agents/${agent.id}`, { systemPrompt: 'You help with orders, briefly.' });
const candidate = { version: draft.draftVersion as number };

const worker = replayWorkerRuntime();
const queued: ReplayQueueMessage[] = [];
const requestDeps = { ...worker, config: conversationRuntime().config, replayQueue: { schedule: async (messages: ReplayQueueMessage[]) => void queued.push(...messages) } };

/** The floor's sessions and messages, read once: its session store answers from memory. */
const stored = new Map<string, { session: StoredSession; messages: Message[] }>();
for (const sessionId of live.sessionIds) {
  const session = await worker.sessions.get(orgId, sessionId);
  if (!session) throw new Error(`session ${sessionId} not found`);
  stored.set(sessionId, { session, messages: await worker.sessions.messages(orgId, sessionId) });
}
const inMemory: Partial<SessionStore> = {
  get: async (_orgId, sessionId) => stored.get(sessionId)?.session,
  messages: async (_orgId, sessionId) => stored.get(sessionId)?.messages ?? [],
};
const floorDeps: ReplayWorkerDeps = { ...worker, sessions: inMemory as SessionStore };

let turnsChanged = 0;
/** One replay of every session, from the request to the finished record. */
async function replayAll(): Promise<number> {
  await startReplay(requestDeps, orgId, agent.id, { sessionIds: live.sessionIds, candidate, liveTools: false });
  const message = queued.shift() as ReplayQueueMessage;
  await runReplay(worker, message, { mustFinishBy: Number.POSITIVE_INFINITY });
  const finished = await worker.replays.get(orgId, agent.id, message.replayId);
  if (finished?.status !== 'COMPLETED') throw new Error(`replay ${message.replayId}: ${finished?.status} ${finished?.error ?? ''}`);
  turnsChanged += finished.turnsChanged;
  return finished.progress.turnsTotal;
}

/** The same sessions through the replay's turn loop, the candidate read once beforehand. */
async function floorOfAll(candidateAgent: Awaited<ReturnType<typeof candidateOf>>): Promise<number> {
  const replay = { id: crypto.randomUUID(), orgId, agentId: agent.id, liveTools: false } as Replay;
  let turns = 0;
  for (const sessionId of live.sessionIds) {
    const replayed = await replaySession(floorDeps, replay, candidateAgent, sessionId);
    turns += replayed.turns.length;
    turnsChanged += replayed.turnsChanged;
  }
  return turns;
}

const floorCandidate = await candidateOf(worker, { orgId, agentId: agent.id, candidate } as Replay);
await replayAll();
await floorOfAll(floorCandidate);
turnsChanged = 0;
const totals = { replay: empty(), floor: empty() };
for (let round = 0; round < rounds; round += 1) {
  add(totals.replay, await measured(async () => ({ turns: await replayAll() })));
  add(totals.floor, await measured(async () => ({ turns: await floorOfAll(floorCandidate) })));
}

const result: Omit<ReplaysResult, 'loadAverageAtStart' | 'loadAverageAtEnd'> = {
  sessions: sessionCount,
  turnsPerSession: conversation.length,
  rounds,
  live: throughput(live),
  replay: throughput(totals.replay),
  floor: throughput(totals.floor),
  turnsChanged,
};
process.send?.(result);
close();
toolServer.server.close();
process.exit(0);

interface Totals {
  turns: number;
  ms: number;
  cpuMs: number;
}

async function measured<T extends { turns: number }>(work: () => Promise<T>): Promise<T & Totals> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const done = await work();
  const used = process.cpuUsage(cpu);
  return { ...done, ms: performance.now() - started, cpuMs: (used.user + used.system) / 1000 };
}

function empty(): Totals {
  return { turns: 0, ms: 0, cpuMs: 0 };
}

function add(total: Totals, run: Totals): void {
  total.turns += run.turns;
  total.ms += run.ms;
  total.cpuMs += run.cpuMs;
}

function throughput({ turns, ms, cpuMs }: Totals): Throughput {
  return { turns, seconds: ms / 1000, turnsPerSecond: turns / (ms / 1000), cpuMsPerTurn: cpuMs / turns };
}
