import type { Agent } from '../agents/agent-schemas.ts';
import type { AgentStore, ToolStore } from '../agents/ports.ts';
import type { ExecutableTool } from '../agents/tool-schemas.ts';
import { agentAtVersion, toolsAsOf } from '../agents/agent-versions.ts';
import { patchedAgent } from '../agents/agents.ts';
import { assertMayConsume, type AdmissionDeps } from '../billing/admission.ts';
import { chatMessagesPerReplayedTurn } from '../billing/usage.ts';
import type { ToolExecution } from '../agents/api-tool-executor.ts';
import { envelopeEvent } from '../events/events.ts';
import type { Clock } from '../platform/clock.ts';
import { NotFoundError, ToolsNotFoundError, ValidationError } from '../platform/errors.ts';
import type { ScheduledQueue } from '../platform/ports.ts';
import { logger } from '../platform/logger.ts';
import { compareBy, paginate, type Page } from '../platform/schemas/common.ts';
import type { AnalysisResult } from './analysis-result-schemas.ts';
import type { EndedReason, Message } from './session-schemas.ts';
import type { SessionStore, StoredSession } from './ports.ts';
import { routedMetadata } from './routing-tools.ts';
import { detachedTurn, runTurn, type ToolCallContext, type TurnDeps } from './turn.ts';
import { agentOfSession, histories } from './turn-state.ts';
import type { DynamoReplayStore, StoredReplay } from './replay-store.ts';
import type {
  AnalysisChange,
  CandidateChanges,
  CreateReplayInput,
  ListReplaysQuery,
  Replay,
  ReplayAnalysis,
  ReplayedToolCall,
  ReplayedTurn,
  ReplaySummary,
  ReplayUsage,
  SessionReplay,
  TurnSide,
} from './replay-schemas.ts';

export interface ReplayQueueMessage {
  kind: 'replay.run';
  orgId: string;
  agentId: string;
  replayId: string;
  notBefore: number;
}

export interface ReplayRequestDeps extends AdmissionDeps {
  agents: AgentStore;
  tools: ToolStore;
  sessions: SessionStore;
  clock: Clock;
  replays: DynamoReplayStore;
  replayQueue: ScheduledQueue<ReplayQueueMessage>;
  config: AdmissionDeps['config'] & { REPLAY_MAX_SESSIONS: number; REPLAY_MAX_TURNS: number };
}

/** The replay as the API answers it, without its results. */
const shown = ({ orgId: _orgId, resultParts: _resultParts, stoppedIn: _stoppedIn, ...replay }: Replay & Partial<Pick<StoredReplay, 'resultParts' | 'stoppedIn'>>): ReplaySummary => replay;

/**
 * Checks the request (the agent, the sessions, the candidate, the limits), stores the replay QUEUED and queues it.
 * A session of another organization or agent is not found, as an agent of another organization is.
 */
export async function startReplay(deps: ReplayRequestDeps, orgId: string, agentId: string, input: CreateReplayInput) {
  const agent = await deps.agents.get(orgId, agentId);
  if (!agent) throw new NotFoundError(`Agent ${agentId} not found.`);
  const max = deps.config.REPLAY_MAX_SESSIONS;
  if ((input.sessionIds?.length ?? input.lastClosed ?? 0) > max) throw new ValidationError(`A replay takes at most ${max} sessions (REPLAY_MAX_SESSIONS).`);
  if ('version' in input.candidate && !(await deps.agents.getVersion(orgId, agentId, input.candidate.version))) {
    throw new NotFoundError(`Agent ${agentId} has no version ${input.candidate.version}.`);
  }
  if ('changes' in input.candidate && input.candidate.changes.tools) {
    const toolIds = input.candidate.changes.tools.map((tool) => tool.toolId);
    const found = await deps.tools.executableTools(orgId, toolIds);
    const missing = toolIds.filter((toolId) => !found.some((tool) => tool.id === toolId));
    if (missing.length > 0) throw new ToolsNotFoundError(`Tools not found: ${missing.join(', ')}.`);
  }
  const sessions = await sessionsToReplay(deps, orgId, agentId, input);
  const turnsTotal = (await Promise.all(sessions.map(async (session) => userTurns(await deps.sessions.messages(orgId, session.id)).length))).reduce((sum, turns) => sum + turns, 0);
  if (turnsTotal > deps.config.REPLAY_MAX_TURNS) {
    throw new ValidationError(`These sessions have ${turnsTotal} user turns; a replay takes at most ${deps.config.REPLAY_MAX_TURNS} (REPLAY_MAX_TURNS).`);
  }
  await assertMayConsume(deps, orgId, 'chat_messages', chatMessagesPerReplayedTurn * turnsTotal);
  const now = deps.clock.now().toISOString();
  const replay: Replay = {
    id: crypto.randomUUID(),
    orgId,
    agentId,
    status: 'QUEUED',
    candidate: input.candidate,
    liveTools: input.liveTools,
    sessionIds: sessions.map((session) => session.id),
    progress: { sessionsDone: 0, sessionsTotal: sessions.length, turnsTotal },
    turnsChanged: 0,
    createdAt: now,
    updatedAt: now,
  };
  await deps.replays.create(replay);
  await deps.replayQueue.schedule([{ kind: 'replay.run', orgId, agentId, replayId: replay.id, notBefore: 0 }]);
  return shown(replay);
}

async function sessionsToReplay(deps: ReplayRequestDeps, orgId: string, agentId: string, input: CreateReplayInput): Promise<StoredSession[]> {
  if (input.sessionIds) {
    const sessions = await Promise.all([...new Set(input.sessionIds)].map((sessionId) => deps.sessions.get(orgId, sessionId)));
    const missing = input.sessionIds.filter((sessionId) => !sessions.some((session) => session?.id === sessionId && session.agentId === agentId));
    if (missing.length > 0) throw new NotFoundError(`Sessions of agent ${agentId} not found: ${missing.join(', ')}.`);
    return sessions.filter((session) => session !== undefined);
  }
  const now = deps.clock.now();
  const { sessions } = await deps.sessions.list(
    orgId,
    { agentId, state: 'CLOSED', idle: { lastActivityBefore: now.toISOString(), nowMs: now.getTime() } },
    { order: 'desc', skip: 0, limit: input.lastClosed ?? 0 },
  );
  return sessions;
}

const finished = (replay: Replay) => replay.status === 'COMPLETED' || replay.status === 'FAILED';

/** The replay with the results of the sessions done so far: every one once it has finished. */
export async function getReplay(deps: Pick<ReplayRequestDeps, 'agents' | 'replays'>, orgId: string, agentId: string, replayId: string) {
  const [agent, replay] = await Promise.all([deps.agents.get(orgId, agentId), deps.replays.get(orgId, agentId, replayId)]);
  if (!agent || !replay) throw new NotFoundError(`Replay ${replayId} not found.`);
  const shownResults = replay.resultParts.length > 0 || finished(replay);
  return { ...shown(replay), ...(shownResults ? { results: await deps.replays.results(replay) } : {}) };
}

/** The agent's replays, newest first, a page at a time, without their results. */
export async function listReplays(deps: Pick<ReplayRequestDeps, 'agents' | 'replays'>, orgId: string, agentId: string, query: ListReplaysQuery): Promise<Page<ReplaySummary>> {
  const [agent, stored] = await Promise.all([deps.agents.get(orgId, agentId), deps.replays.list(orgId, agentId)]);
  if (!agent) throw new NotFoundError(`Agent ${agentId} not found.`);
  const replays = stored.map(shown).sort(compareBy<ReplaySummary>('createdAt', 'desc'));
  return paginate(replays, query.page, query.limit);
}

export interface ReplayWorkerDeps extends TurnDeps {
  replays: DynamoReplayStore;
  /** Where a replay that runs out of its invocation's time goes on from (its own queue). */
  replayQueue: ScheduledQueue<ReplayQueueMessage>;
  /** The analysis a session's transcript would get from this agent (the analysis context's, wired by the replay function). */
  analyseTranscript(agent: Agent, messages: readonly Message[], endedReason: EndedReason | undefined): Promise<AnalysisResult>;
}

/** A session's messages cut at each user message: the user's text, the turn's tool calls and its reply. */
interface RecordedTurn {
  user: string;
  side: TurnSide;
}

function userTurns(messages: readonly Message[]): RecordedTurn[] {
  const turns: RecordedTurn[] = [];
  for (const message of messages) {
    if (message.role === 'USER') turns.push({ user: message.content, side: { reply: '', toolCalls: [] } });
    const turn = turns.at(-1);
    if (!turn) continue;
    if (message.role === 'TOOL' && message.toolCall) turn.side.toolCalls.push(toolCallOf(message.toolCall));
    if (message.role === 'ASSISTANT') turn.side.reply += message.content;
  }
  return turns;
}

const toolCallOf = (call: NonNullable<Message['toolCall']>): ReplayedToolCall => ({ name: call.name, arguments: call.arguments, result: call.result, status: call.status });

/** Key order does not make two calls different. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.entries(value).sort(([a], [b]) => a.localeCompare(b)).map(([key, inner]) => `${JSON.stringify(key)}:${canonical(inner)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const recordingKey = (name: string, args: Record<string, unknown>) => `${name} ${canonical(args)}`;

/** Only a GET API tool is safe to call again: a POST, PUT, PATCH, DELETE or a function tool may change something. */
export const safeToRepeat = (tool: ExecutableTool): boolean => tool.type === 'API_TOOL' && tool.apiTool?.method === 'GET';

/**
 * The recorded-result double: a call whose tool name and arguments match one of the original session's is answered
 * with that call's recorded result (the first not yet used); another is answered with an error saying it was not replayed, or run live when
 * the replay asked for it and the tool is safe to repeat.
 */
export function recordedToolDouble(deps: Pick<TurnDeps, 'executeTool'>, recorded: readonly ReplayedToolCall[], liveTools: boolean) {
  // The same call made twice may have answered differently: the replay's calls take the recordings in order, the last one again once used up.
  const recordings = new Map<string, ReplayedToolCall[]>();
  for (const call of recorded) recordings.set(recordingKey(call.name, call.arguments), [...(recordings.get(recordingKey(call.name, call.arguments)) ?? []), call]);
  return async (tool: ExecutableTool, args: Record<string, unknown>, context: ToolCallContext): Promise<ToolExecution> => {
    const matching = recordings.get(recordingKey(tool.name, args)) ?? [];
    const recording = matching.length > 1 ? matching.shift() : matching[0];
    if (recording) return { status: recording.status, result: recording.result, durationMs: 0 };
    if (liveTools && safeToRepeat(tool)) return deps.executeTool(tool, args, context);
    const why = liveTools ? 'it may change something, so it is never called live in a replay' : 'the replay did not ask for live tools';
    return { status: 'ERROR', result: `Not replayed: the original conversation has no call of ${tool.name} with these arguments, and ${why}.`, durationMs: 0 };
  };
}

/** Turns write nowhere: the session store of a replay reads as the real one (its class's methods, hence the prototype) but answers a commit without writing. */
function inMemorySessions(sessions: SessionStore): SessionStore {
  const replaying: Partial<SessionStore> = { commitTurn: async () => 'committed', holdForTurn: async () => true };
  return Object.assign(Object.create(sessions) as SessionStore, replaying);
}

/** An agent as a replay runs it: its configuration and its tools, and the version they are, if any. */
interface AnsweringAgent {
  agent: Agent;
  tools: ExecutableTool[];
  version?: number | undefined;
}

/**
 * The agent at a version (its published one when none is asked) with that version's tool definitions and the
 * tools' current secrets, and `changes` over it: the candidate, or the target of a handoff.
 */
async function agentAt(deps: ReplayWorkerDeps, orgId: string, agentId: string, wanted: number | undefined, changes?: CandidateChanges): Promise<AnsweringAgent> {
  const agent = await deps.agents.get(orgId, agentId);
  if (!agent) throw new Error(`the agent ${agentId} no longer exists`);
  const number = wanted ?? agent.publishedVersion;
  const version = number === undefined ? undefined : await deps.agents.getVersion(orgId, agentId, number);
  if (wanted !== undefined && !version) throw new Error(`version ${wanted} of agent ${agentId} no longer exists`);
  const base = version ? agentAtVersion(agent, version) : agent;
  const configured = changes ? patchedAgent(base, changes) : base;
  const attached = configured.tools.map((tool) => tool.toolId);
  const current = await deps.tools.executableTools(orgId, attached);
  // Tools given inline run as they are now; a version's, as it defined them.
  const tools = toolsAsOf(attached, current, changes?.tools === undefined ? version : undefined);
  return { agent: configured, tools, version: version?.number };
}

/** The candidate: a version's definitions (with current secrets), or changes over the published version. */
export const candidateOf = (deps: ReplayWorkerDeps, replay: Replay) =>
  agentAt(deps, replay.orgId, replay.agentId, replay.candidate.version, replay.candidate.changes as CandidateChanges | undefined);

const sameSide = (a: TurnSide, b: TurnSide) => a.reply === b.reply && canonical(a.toolCalls) === canonical(b.toolCalls);

/**
 * Each session's user turns, in order, through the candidate with the turn engine; nothing is written to the session.
 * A handoff the replay makes passes the turns after it to its target, as in a live session (docs/agent-versions.md#replay).
 */
export async function replaySession(deps: ReplayWorkerDeps, replay: Replay, candidate: AnsweringAgent, sessionId: string, stop?: AbortSignal): Promise<SessionReplay> {
  const [original, messages] = await Promise.all([deps.sessions.get(replay.orgId, sessionId), deps.sessions.messages(replay.orgId, sessionId)]);
  if (!original) return { sessionId, status: 'FAILED', turnsChanged: 0, turns: [], error: 'The session no longer exists.' };
  const recordedTurns = userTurns(messages);
  const turnDeps: TurnDeps = {
    ...deps,
    sessions: inMemorySessions(deps.sessions),
    executeTool: recordedToolDouble(deps, recordedTurns.flatMap((turn) => turn.side.toolCalls), replay.liveTools),
  };
  // Its own id: the process's caches of live sessions never see a replay's turns.
  let session: StoredSession = { ...original, id: `replay-${replay.id}-${sessionId}`, state: 'OPEN' };
  let answering = candidate;
  const history: Message[] = [];
  const turns: ReplayedTurn[] = [];
  const usages: ReplayUsage[] = [];
  try {
    for (const [index, recorded] of recordedTurns.entries()) {
      stop?.throwIfAborted();
      const prepared = detachedTurn(turnDeps, session, answering.agent, answering.tools, [...history], recorded.user);
      const result = await runTurn(turnDeps, prepared, { delta: () => undefined, failed: () => undefined }, { closeWhenAgentEnds: false, stop });
      history.push(prepared.userMessage, ...result.messages);
      usages.push(turnUsage(result.messages));
      const replayed: TurnSide = {
        reply: result.messages.filter((message) => message.role === 'ASSISTANT').map((message) => message.content).join(''),
        toolCalls: result.messages.flatMap((message) => (message.toolCall ? [toolCallOf(message.toolCall)] : [])),
        ...(answering === candidate ? {} : { agentId: answering.agent.id, agentVersion: answering.version }),
      };
      turns.push({ turn: index + 1, user: recorded.user, diff: sameSide(recorded.side, replayed) ? 'SAME' : 'CHANGED', original: recorded.side, replay: replayed });
      const handoff = result.routed.handoff;
      if (handoff) {
        session = { ...session, metadata: routedMetadata(session.metadata, result.routed) };
        // Handed back to the replayed agent, the conversation returns to the candidate, which stands for it.
        answering = handoff.toAgentId === replay.agentId ? candidate : await agentAt(deps, replay.orgId, handoff.toAgentId, handoff.toAgentVersion);
      }
    }
  } finally {
    histories.delete(`${session.orgId}/${session.id}`);
    agentOfSession.delete(`${session.orgId}/${session.id}`);
  }
  const analysis = candidate.agent.analysis ? await analysesOf(deps, candidate.agent, original, history) : undefined;
  return {
    sessionId,
    status: 'COMPLETED',
    turnsChanged: turns.filter((turn) => turn.diff === 'CHANGED').length,
    turns,
    ...(analysis ? { analysis } : {}),
    usage: summed(usages),
  };
}

/** The original session's stored analysis beside the replayed transcript's, with the judgements that differ. */
async function analysesOf(deps: ReplayWorkerDeps, agent: Agent, original: StoredSession, transcript: readonly Message[]): Promise<ReplayAnalysis> {
  const replay = await deps.analyseTranscript(agent, transcript, original.endedReason);
  const stored = original.analysis ?? null;
  return { original: stored, replay, changes: stored?.status === 'COMPLETED' && replay.status === 'COMPLETED' ? analysisChanges(stored, replay) : [] };
}

type Verdict = AnalysisChange['original'];

/** The verdicts a reviewer compares: the conversation's intent, resolution and sentiment, and each extracted value. */
function verdicts(analysis: AnalysisResult): Map<string, Verdict> {
  const found = new Map<string, Verdict>();
  if (analysis.intent) found.set('intent', analysis.intent.conversation.intent);
  if (analysis.resolution) found.set('resolution', analysis.resolution.classification);
  if (analysis.sentiment) found.set('sentiment', analysis.sentiment.conversation.sentiment);
  for (const [field, value] of Object.entries(analysis.extractedData ?? {})) found.set(`extractedData.${field}`, value);
  return found;
}

/** Each verdict either analysis has and the other has not, or has with another value (a verdict one lacks is null there). */
export function analysisChanges(original: AnalysisResult, replay: AnalysisResult): AnalysisChange[] {
  const before = verdicts(original);
  const after = verdicts(replay);
  const fields = [...new Set([...before.keys(), ...after.keys()])];
  return fields.flatMap((field) => {
    const change = { field, original: before.get(field) ?? null, replay: after.get(field) ?? null };
    return change.original === change.replay ? [] : [change];
  });
}

/** A replayed turn's use: one turn, and the model tokens its reply reports (what a live reply's message would count). */
function turnUsage(messages: readonly Message[]): ReplayUsage {
  const tokens = messages.flatMap((message) => {
    const { model, usage } = message.metadata as { model?: { id?: string }; usage?: { inputTokens?: number; outputTokens?: number } };
    return message.role === 'ASSISTANT' && model?.id && usage ? [{ modelId: model.id, inputTokens: usage.inputTokens ?? 0, outputTokens: usage.outputTokens ?? 0 }] : [];
  });
  return { turns: 1, tokens };
}

/** Uses added up: the turns, and the tokens model by model. */
function summed(usages: readonly ReplayUsage[]): ReplayUsage {
  const tokens = new Map<string, ReplayUsage['tokens'][number]>();
  for (const { modelId, inputTokens, outputTokens } of usages.flatMap((usage) => usage.tokens)) {
    const counted = tokens.get(modelId);
    tokens.set(modelId, { modelId, inputTokens: (counted?.inputTokens ?? 0) + inputTokens, outputTokens: (counted?.outputTokens ?? 0) + outputTokens });
  }
  return { turns: usages.reduce((sum, usage) => sum + usage.turns, 0), tokens: [...tokens.values()] };
}

/** How long an invocation of the replay function has for its sessions: until `mustFinishBy` (epoch ms). */
export interface ReplayRun {
  mustFinishBy: number;
  /** The queue hands this message over again: the invocation it went to before stopped without ending it. */
  redelivered?: boolean;
}

/**
 * The session's replay, or 'out of time' when `mustFinishBy` comes first: the replay is then stopped (its model and
 * tool calls aborted, no further turn) and its result dropped.
 */
async function replaySessionBefore(deps: ReplayWorkerDeps, replay: Replay, candidate: AnsweringAgent, sessionId: string, mustFinishBy: number) {
  const stop = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  // setTimeout fires at once for a delay past its 32-bit bound (an unbounded run's Infinity).
  const delayMs = Math.min(2 ** 31 - 1, Math.max(0, mustFinishBy - Date.now()));
  const outOfTime = new Promise<'out of time'>((resolve) => (timer = setTimeout(() => resolve('out of time'), delayMs)));
  const work = replaySession(deps, replay, candidate, sessionId, stop.signal);
  try {
    return await Promise.race([work, outOfTime]);
  } finally {
    clearTimeout(timer);
    stop.abort();
    // A replay stopped for lack of time ends in an abort nobody waits for.
    work.catch(() => undefined);
  }
}

/**
 * The queue's work: runs a replay to its end, recording each session's result as it is done, and finishes it with
 * `replay.completed`. A redelivery of a replay cut short goes on after the last session recorded; one of a finished
 * replay does nothing. Before its invocation's time runs out it queues the replay again and returns, so a replay of
 * any length ends: a session cut off is run again from a new invocation, and one that does not fit in a whole
 * invocation is recorded FAILED (docs/agent-versions.md#replay).
 */
export async function runReplay(deps: ReplayWorkerDeps, message: ReplayQueueMessage, run: ReplayRun): Promise<void> {
  const replay = await deps.replays.get(message.orgId, message.agentId, message.replayId);
  if (!replay || finished(replay)) return;
  if (run.redelivered && replay.status === 'RUNNING') return afterStoppedInvocation(deps, replay, message);
  if (!(await deps.replays.markRunning(replay, deps.clock.now().toISOString()))) return;
  const firstOfRun = replay.progress.sessionsDone;
  let sessionsDone = firstOfRun;
  let turnsChanged = replay.turnsChanged;
  // The event counts every session's use once: those an earlier delivery recorded are read back.
  const usages: ReplayUsage[] = [];
  let error: string | undefined;
  let outOfTime = false;
  try {
    if (sessionsDone > 0) usages.push(...(await deps.replays.results(replay)).flatMap((result) => (result.usage ? [result.usage] : [])));
    const candidate = await candidateOf(deps, replay);
    for (const sessionId of replay.sessionIds.slice(sessionsDone)) {
      // A run always gets through its first session, so each one moves the replay on.
      const mayStop = sessionsDone > firstOfRun;
      const outcome = mayStop && Date.now() >= run.mustFinishBy ? 'out of time' : await replaySessionBefore(deps, replay, candidate, sessionId, run.mustFinishBy);
      if (outcome === 'out of time' && mayStop) {
        outOfTime = true;
        break;
      }
      const result: SessionReplay = outcome === 'out of time' ? { sessionId, status: 'FAILED', turnsChanged: 0, turns: [], error: tooLongForOneRun } : outcome;
      // Another delivery recorded this session, or finished the replay: what is left is its work.
      if (!(await deps.replays.recordSession(replay, sessionsDone, result, deps.clock.now().toISOString()))) return;
      sessionsDone += 1;
      turnsChanged += result.turnsChanged;
      if (result.usage) usages.push(result.usage);
    }
  } catch (failure) {
    logger.warn('replay failed', { replayId: replay.id, error: failure as Error });
    error = `The replay failed: ${(failure as Error).message}.`;
  }
  // Outside the catch: a failed send fails the message, whose redelivery goes on from here, not the replay.
  if (outOfTime) return deps.replayQueue.schedule([{ ...message, notBefore: 0 }]);
  const at = deps.clock.now().toISOString();
  const status = error === undefined ? 'COMPLETED' : 'FAILED';
  const event = envelopeEvent(replay.orgId, 'replay.completed', at, { replayId: replay.id, agentId: replay.agentId, status, sessions: sessionsDone, turnsChanged, usage: summed(usages) });
  await deps.replays.finish(replay, { status, error, updatedAt: at }, event);
}

const tooLongForOneRun = 'The session did not finish within one invocation of the replay function; its turns were not recorded.';

const stoppedTwice = 'The replay function stopped twice while replaying this session (out of memory or a crash); its turns were not recorded.';

/**
 * A message handed over again: the invocation it went to stopped (out of memory, a crash) during the session after
 * the last one recorded. That session is tried once more, and a session during which two invocations stopped is
 * recorded FAILED. Either way the replay goes on in a fresh message, whose receives the queue counts anew, so that
 * no number of stops in different sessions sends the replay to the dead-letter queue.
 */
async function afterStoppedInvocation(deps: ReplayWorkerDeps, replay: StoredReplay, message: ReplayQueueMessage): Promise<void> {
  const index = replay.progress.sessionsDone;
  const sessionId = replay.sessionIds[index];
  const at = deps.clock.now().toISOString();
  if (sessionId !== undefined) {
    const failed: SessionReplay = { sessionId, status: 'FAILED', turnsChanged: 0, turns: [], error: stoppedTwice };
    const noted = replay.stoppedIn === index ? await deps.replays.recordSession(replay, index, failed, at) : await deps.replays.markStoppedIn(replay, index, at);
    if (!noted) return;
  }
  await deps.replayQueue.schedule([{ ...message, notBefore: 0 }]);
}
