import type { LanguageModelV4, LanguageModelV4FunctionTool, LanguageModelV4Message, LanguageModelV4Prompt } from '@ai-sdk/provider';
import type { Ajv, ValidateFunction } from 'ajv';
import { InvalidSessionError, SessionBusyError, SessionNotFoundError } from '../platform/errors.ts';
import type { Agent } from '../agents/agent-schemas.ts';
import type { Model } from '../models/model-schemas.ts';
import type { Citation, Message, SendMessageInput, ToolCallRecord } from './session-schemas.ts';
import type { ExecutableTool, Tool } from '../agents/tool-schemas.ts';
import { endConversationTool } from '../models/prompt-conventions.ts';
import type { ToolStore } from '../agents/ports.ts';
import type { StoredSession, TurnContext } from './ports.ts';
import type { IdempotencyCompletion } from '../platform/ports.ts';
import type { ToolExecution } from '../agents/api-tool-executor.ts';
import { fillPlaceholders } from '../agents/placeholders.ts';
import { knowledgeContext } from '../knowledge/turn-context.ts';
import { logger } from '../platform/logger.ts';
import { assertMayConsume, type AdmissionDeps } from '../billing/admission.ts';
import type { RetrievedChunk } from '../knowledge/knowledge-schemas.ts';
import { assertNotExpired, endSession, expireIfIdle, type SessionDeps } from './sessions.ts';
import { atPublishedVersion, toolsAsOf } from '../agents/agent-versions.ts';
import { agentOfSession, bindingKey, histories, lastKnownTools, queueTurn } from './turn-state.ts';
import { conversationMetrics } from './conversation-metrics.ts';
import { activeBinding, routedMetadata, routingTools, runRoutingTool, type RoutingChange } from './routing-tools.ts';

/** Why a turn failed after it began, as the error envelope's `error` object. */
export type TurnFailure = { code: string; message: string; status: number };

/** Where the streamed side of a turn goes; a non-streamed send passes a sink that ignores deltas. */
export interface TurnSink {
  delta(messageId: string, text: string): void;
  /** A failure after streaming began, as the error envelope's `error` object. */
  failed(error: TurnFailure): void;
  /**
   * Said before and after a tool's `preExecutionMessage`: the text between is an utterance of its own (WhatsApp
   * sends it as a message of its own; a stream needs nothing).
   */
  boundary?(): void;
  /** The knowledge chunks a completed reply drew on, after its last delta (a stream sends them before `[DONE]`). */
  citations?(messageId: string, citations: Citation[]): void;
}

export interface ToolCallContext {
  toolCallId: string;
  sessionId: string;
  agentId: string;
  sessionVariables: Record<string, unknown>;
  signal: AbortSignal;
}

export interface TurnDeps extends SessionDeps, AdmissionDeps {
  tools: ToolStore;
  /**
   * The model of an agent's `modelId` for its organization (the deployment's, or one of the organization's own with
   * its key), and its AI SDK model; the default LLM when the organization can no longer use that model.
   */
  turnModel(orgId: string, modelId: string): Promise<{ model: Model; languageModel: LanguageModelV4 }>;
  executeTool(tool: ExecutableTool, args: Record<string, unknown>, context: ToolCallContext): Promise<ToolExecution>;
  config: SessionDeps['config'] & AdmissionDeps['config'] & { MAX_TOOL_ROUNDS: number; TURN_TIMEOUT_SECONDS: number };
  /** The chunks of the knowledge store for `query`; undefined when the store no longer exists. */
  retrieveKnowledge?(orgId: string, storeId: string, query: string): Promise<RetrievedChunk[] | undefined>;
}

/** What the agent's knowledge store gave the turn (docs/knowledge.md#in-the-conversation). */
export interface TurnRetrieval {
  chunks: RetrievedChunk[];
  durationMs: number;
}

export interface PreparedTurn {
  session: StoredSession;
  agent: Agent;
  tools: ExecutableTool[];
  history: Message[];
  userMessage: Message;
  assistantMessageId: string;
  startedAt: number;
  /** Started as soon as the agent and history are known, alongside the turn's remaining preparation. */
  retrieval: Promise<TurnRetrieval | undefined>;
  /**
   * The agent's knowledge store is a tool the model calls (`search_knowledge`) rather than context retrieved
   * before the model runs: a model outside the process has answered before any context could be given to it.
   */
  knowledgeAsTool: boolean;
  /** Lets the session's next turn in this process begin; called once the turn is written. */
  release(): void;
}

export interface TurnResult {
  messages: Message[];
  /** Set when the turn failed after it began; its messages are persisted all the same. */
  failure?: TurnFailure | undefined;
  /** The model called `end_conversation`. */
  agentEnded: boolean;
  /** What the turn's `transfer_call` or `handoff` decided, written with its messages (the call acts on a transfer). */
  routed: RoutingChange;
  /** The number (`seq`) the session gave the turn's last message, its reply. */
  replySeq: number;
}

export interface TurnOptions {
  /**
   * Close the session when the model calls `end_conversation` (chat). A call leaves that to its carrier: the agent
   * hangs up, and the carrier's report of the end closes the session (docs/voice.md).
   */
  closeWhenAgentEnds: boolean;
  /**
   * Ends the turn early (a streamed reply whose credential was refused): the model and tool calls are aborted, and
   * the signal's reason, the error envelope's `error` object, is the turn's failure. What was said so far is
   * persisted like any failed turn.
   */
  stop?: AbortSignal | undefined;
  /**
   * An idempotent send (`Idempotency-Key`): the response a retry gets, sealed from the turn's messages, written in
   * the transaction that writes them. Asked only of a turn that succeeded: a failed one leaves the key to a retry.
   */
  sealReply?: ((messages: readonly Message[]) => IdempotencyCompletion) | undefined;
  /**
   * Images the user's message carries (a WhatsApp customer's photo), passed with its text to a model that accepts
   * images (`acceptsImages`); another model gets the text alone, which says what was sent. Only this turn's
   * prompt carries them: later turns see the message's text.
   */
  userImages?: readonly { mediaType: string; data: Uint8Array }[] | undefined;
  /**
   * The model that makes the reply instead of the agent's `modelId`: a speech-to-speech session (docs/voice.md#speech-to-speech),
   * whose text and tool calls the engine takes as a model's, running the tools itself.
   */
  model?: { model: Model; languageModel: LanguageModelV4 } | undefined;
  /** More metadata of the reply, asked once its model is done (which path of a hybrid call answered, and why). */
  replyMetadata?: (() => Record<string, unknown>) | undefined;
}

/** The tool a model reaches the agent's knowledge store by when it is a tool (`PreparedTurn.knowledgeAsTool`). */
export const knowledgeToolName = 'search_knowledge';

/** With at most 20 rounds, a turn writes at most 2 + 20 × 4 messages: within one 100-item transaction. */
const maxToolCallsPerRound = 4;

export const newMessageId = (): string => `msg_${crypto.randomUUID().replaceAll('-', '')}`;

/**
 * Everything that can refuse a turn, before anything streams: the session must be OPEN (an idle one expires here);
 * the agent and its tools are read afresh. In the common case that is one round trip (the session, agent and
 * tools in one batch, alongside the credential check) and no write: the turn's messages are written together
 * when it ends. Turns of one session wait for each other in this process.
 */
export async function prepareTurn(
  deps: TurnDeps,
  orgId: string,
  sessionId: string,
  input: SendMessageInput,
  verified: Promise<void> = Promise.resolve(),
  options: { knowledgeAsTool?: boolean } = {},
): Promise<PreparedTurn> {
  const startedAt = performance.now();
  const sessionKey = `${orgId}/${sessionId}`;
  const queued = await queueTurn(sessionKey, Date.now() + deps.config.TURN_TIMEOUT_SECONDS * 1000);
  if (!queued.acquired) {
    await verified;
    throw new SessionBusyError(`Session ${sessionId} stayed busy with another message; retry.`);
  }
  try {
    // The subscription and quota check reads beside the turn's own reads (or not at all, while its cache holds).
    const [context] = await Promise.all([readTurnContext(deps, orgId, sessionId), verified, assertMayConsume(deps, orgId, 'chat_messages')]);
    const session = context.session ? await expireIfIdle(deps, context.session) : undefined;
    if (!session) throw new SessionNotFoundError(`Session ${sessionId} not found.`);
    assertNotExpired(session);
    if (session.state !== 'OPEN') throw new InvalidSessionError(`Session ${sessionId} is ${session.state}; open a new session.`);
    if (!context.agent) throw new InvalidSessionError(`The agent of session ${sessionId} no longer exists.`);
    const cached = histories.get(sessionKey);
    const fresh = cached?.nextSeq === session.nextSeq && cached.revision === (session.historyRevision ?? 0);
    const history = fresh ? cached.messages : await deps.sessions.messages(orgId, sessionId);
    const knowledgeAsTool = options.knowledgeAsTool ?? false;
    const retrieval = knowledgeAsTool ? Promise.resolve(undefined) : retrieveForTurn(deps, session, context.agent, history, input.content);
    const now = deps.clock.now();
    // A turn counts as activity: if the window could run out before the turn does, record activity now.
    const windowLeftMs = Date.parse(session.lastActivityAt) + deps.config.SESSION_IDLE_TIMEOUT_SECONDS * 1000 - now.getTime();
    if (windowLeftMs < deps.config.TURN_TIMEOUT_SECONDS * 1000) {
      const activeUntil = now.getTime() + deps.config.TURN_TIMEOUT_SECONDS * 1000;
      if (!(await deps.sessions.holdForTurn(session, { nowIso: now.toISOString(), activeUntil }))) {
        throw new InvalidSessionError(`Session ${sessionId} was closed meanwhile; open a new session.`);
      }
    }
    const userMessage: Message = { id: newMessageId(), sessionId, role: 'USER', content: input.content, metadata: input.metadata, createdAt: now.toISOString() };
    return { session, agent: context.agent, tools: context.tools, history, userMessage, assistantMessageId: newMessageId(), startedAt, retrieval, knowledgeAsTool, release: queued.release };
  } catch (error) {
    queued.release();
    throw error;
  }
}

/**
 * A turn of a session that is not live (a replay, docs/agent-versions.md#replay): the caller gives the session, the
 * agent and tools to answer with and the history so far, and runs it with `runTurn` and deps whose session store
 * keeps the messages in memory. Nothing is read, held or queued here.
 */
export function detachedTurn(deps: TurnDeps, session: StoredSession, agent: Agent, tools: ExecutableTool[], history: Message[], content: string): PreparedTurn {
  const userMessage: Message = { id: newMessageId(), sessionId: session.id, role: 'USER', content, metadata: {}, createdAt: deps.clock.now().toISOString() };
  const retrieval = retrieveForTurn(deps, session, agent, history, content);
  return { session, agent, tools, history, userMessage, assistantMessageId: newMessageId(), startedAt: performance.now(), retrieval, knowledgeAsTool: false, release: () => undefined };
}

/**
 * The session, its agent at the version the session is bound to, and the agent's tools: one batch when this process
 * has seen the session before. The tools run with the bound version's definitions and their current secrets; a tool
 * deleted since is left out.
 */
async function readTurnContext(deps: TurnDeps, orgId: string, sessionId: string): Promise<TurnContext> {
  const sessionKey = `${orgId}/${sessionId}`;
  let binding = agentOfSession.get(sessionKey);
  if (!binding) {
    const session = await deps.sessions.get(orgId, sessionId);
    if (!session) return { session: undefined, agent: undefined, tools: [] };
    binding = activeBinding(session);
    agentOfSession.set(sessionKey, binding);
  }
  let guessed = lastKnownTools.get(bindingKey(binding)) ?? [];
  let context = await deps.sessions.readTurnContext(orgId, sessionId, binding, guessed);
  // A handoff in another process changed the agent that answers: read that one.
  const answering = context.session && activeBinding(context.session);
  if (answering && bindingKey(answering) !== bindingKey(binding)) {
    binding = answering;
    agentOfSession.set(sessionKey, binding);
    guessed = lastKnownTools.get(bindingKey(binding)) ?? [];
    context = await deps.sessions.readTurnContext(orgId, sessionId, binding, guessed);
  }
  if (binding.version === undefined) context = await followPublished(deps, context);
  if (!context.agent) return context;
  const attached = context.agent.tools.map((tool) => tool.toolId);
  lastKnownTools.set(bindingKey(binding), attached);
  const fetched = await deps.tools.executableTools(orgId, attached.filter((toolId) => !guessed.includes(toolId)));
  return { ...context, tools: toolsAsOf(attached, [...context.tools, ...fetched], context.version) };
}

/**
 * A session bound to no version (an `AUTO` agent's, or one opened before versions existed) answers with the agent's
 * published version as it is now: the agent's own item, unless an older version was published over the draft, which
 * then costs one more read.
 */
async function followPublished(deps: TurnDeps, context: TurnContext): Promise<TurnContext> {
  return context.agent ? { ...context, ...(await atPublishedVersion(deps, context.agent)) } : context;
}

/**
 * Writes the turn's messages after the last ones of the session, in order, in one transaction; when another
 * process appended meanwhile, the session is read again and the messages go after those. A session that ended
 * meanwhile takes none of them.
 */
async function commitTurn(deps: TurnDeps, turn: PreparedTurn, messages: Message[], now: Date, routed: RoutingChange, completion?: IdempotencyCompletion): Promise<number> {
  const sessionKey = `${turn.session.orgId}/${turn.session.id}`;
  const at = { nowIso: now.toISOString() };
  let session: StoredSession | undefined = turn.session;
  for (let attempt = 0; session; attempt += 1) {
    const metadata = routed.handoff || routed.transfer ? routedMetadata(session.metadata, routed) : undefined;
    if ((await deps.sessions.commitTurn(session, messages, at, completion, metadata)) === 'committed') {
      if (routed.handoff) agentOfSession.set(sessionKey, { agentId: routed.handoff.toAgentId, version: routed.handoff.toAgentVersion });
      // After a conflict the history has others' messages too: the next turn reads it whole.
      if (attempt === 0) {
        histories.set(sessionKey, { nextSeq: session.nextSeq + messages.length, revision: session.historyRevision ?? 0, messages: [...turn.history, ...messages] });
      }
      else histories.delete(sessionKey);
      return session.nextSeq + messages.length - 1;
    }
    session = await deps.sessions.get(turn.session.orgId, turn.session.id);
    if (session && session.state !== 'OPEN') {
      throw new InvalidSessionError(`Session ${session.id} was ${session.state.toLowerCase()} during the reply; this message and its reply were not saved.`);
    }
  }
  throw new SessionNotFoundError(`Session ${turn.session.id} disappeared during the turn.`);
}

interface PendingCall {
  toolCallId: string;
  toolName: string;
  input: string;
}

/**
 * Runs the model and tool loop of a prepared turn, streaming text into `sink`, then writes the turn's messages
 * (USER, TOOL, ASSISTANT with where the turn's time went) in one transaction. Never throws for a provider
 * failure: the turn is recorded as failed and the sink told.
 */
export async function runTurn(deps: TurnDeps, turn: PreparedTurn, sink: TurnSink, options: TurnOptions = { closeWhenAgentEnds: true }): Promise<TurnResult> {
  try {
    return await runPreparedTurn(deps, turn, sink, options);
  } finally {
    turn.release();
  }
}

async function runPreparedTurn(deps: TurnDeps, turn: PreparedTurn, sink: TurnSink, options: TurnOptions): Promise<TurnResult> {
  const { session, agent } = turn;
  const { model, languageModel } = options.model ?? (await deps.turnModel(session.orgId, agent.modelId));
  const timeout = AbortSignal.timeout(deps.config.TURN_TIMEOUT_SECONDS * 1000);
  const signal = options.stop ? AbortSignal.any([timeout, options.stop]) : timeout;
  const toolsByName = new Map(turn.tools.map((tool) => [tool.name, tool]));
  const offeredRouting = routingTools(agent, session);
  const offeredTools = turnTools(deps, agent, turn.tools, offeredRouting, turn.knowledgeAsTool);
  const routed: RoutingChange = {};
  const retrieval = await turn.retrieval;
  // What the knowledge tool found, cited on the reply as retrieved context is.
  const found: RetrievedChunk[] = [];
  const prompt: LanguageModelV4Prompt = [
    { role: 'system', content: systemPrompt(agent, session.metadata.sessionVariables) },
    ...(retrieval?.chunks.length ? [{ role: 'system' as const, content: knowledgeContext(retrieval.chunks) }] : []),
    ...historyPrompt(turn.history),
    {
      role: 'user',
      content: [
        ...(model.acceptsImages ? (options.userImages ?? []) : []).map((image) => ({ type: 'file' as const, mediaType: image.mediaType, data: { type: 'data' as const, data: image.data } })),
        { type: 'text', text: turn.userMessage.content },
      ],
    },
  ];
  const toolMessages: Message[] = [];
  let content = '';
  let modelMs = 0;
  let firstTokenMs: number | undefined;
  // Tokens of every model call of the turn, as the provider reports them: the usage meter counts them by model.
  const tokens = { inputTokens: 0, outputTokens: 0 };
  const toolTimings: { name: string; durationMs: number }[] = [];
  let failure: TurnFailure | undefined;
  let agentEnded = false;
  // Errors while the provider streams are the model's (502); any other is ours (500).
  let inModelCall = false;
  const say = (text: string) => {
    content += text;
    sink.delta(turn.assistantMessageId, text);
  };
  // A pre-execution message and the text after a tool round are separate utterances: start a new paragraph.
  const sayParagraph = (text: string) => say(content && !/\s$/.test(content) ? `\n\n${text}` : text);
  const sayApart = (text: string) => {
    sink.boundary?.();
    sayParagraph(text);
    sink.boundary?.();
  };
  // A model outside the process speaks for itself: a tool's pre-execution message would be written, never heard.
  const preExecution = options.model ? () => undefined : sayApart;

  try {
    for (let round = 0; round <= deps.config.MAX_TOOL_ROUNDS && !agentEnded; round += 1) {
      // A routed conversation is another's from here: the model gets one round, without tools, to tell the user.
      const closing = routed.handoff !== undefined || routed.transfer !== undefined;
      const calls: PendingCall[] = [];
      let stepText = '';
      const modelStart = performance.now();
      inModelCall = true;
      // A provider that ignores the abort signal still gets no further call, and its text no further delta.
      options.stop?.throwIfAborted();
      const { stream } = await languageModel.doStream({
        prompt,
        // After the last allowed round the model must answer in text.
        ...(round < deps.config.MAX_TOOL_ROUNDS && !closing ? { tools: offeredTools, toolChoice: { type: 'auto' } } : {}),
        abortSignal: signal,
      });
      for await (const part of stream) {
        options.stop?.throwIfAborted();
        if (part.type === 'text-delta') {
          firstTokenMs ??= performance.now() - modelStart;
          if (stepText) say(part.delta);
          else sayParagraph(part.delta);
          stepText += part.delta;
        } else if (part.type === 'tool-call') {
          calls.push(part);
        } else if (part.type === 'finish') {
          tokens.inputTokens += part.usage.inputTokens.total ?? 0;
          tokens.outputTokens += part.usage.outputTokens.total ?? 0;
        } else if (part.type === 'error') {
          throw part.error instanceof Error ? part.error : new Error(String(part.error));
        }
      }
      inModelCall = false;
      modelMs += performance.now() - modelStart;
      // No tools were offered in the last round; calls the model makes anyway are not run.
      if (calls.length === 0 || round === deps.config.MAX_TOOL_ROUNDS || closing) break;
      prompt.push({
        role: 'assistant',
        content: [
          ...(stepText ? [{ type: 'text' as const, text: stepText }] : []),
          ...calls.map((call) => ({ type: 'tool-call' as const, toolCallId: call.toolCallId, toolName: call.toolName, input: parseArguments(call.input) ?? {} })),
        ],
      });
      const results: LanguageModelV4Message = { role: 'tool', content: [] };
      for (const [index, call] of calls.entries()) {
        if (index >= maxToolCallsPerRound) {
          // Keeps every turn within one transaction of DynamoDB's 100 items; the model is told, nothing runs.
          results.content.push({ type: 'tool-result', toolCallId: call.toolCallId, toolName: call.toolName, output: { type: 'error-text', value: `Not run: at most ${maxToolCallsPerRound} tool calls per step.` } });
          continue;
        }
        if (call.toolName === endConversationTool) {
          agentEnded = true;
          results.content.push({ type: 'tool-result', toolCallId: call.toolCallId, toolName: call.toolName, output: { type: 'text', value: 'The conversation is over.' } });
          continue;
        }
        const record = offeredRouting.some((tool) => tool.name === call.toolName)
          ? await callRoutingTool(deps, call, turn, routed)
          : call.toolName === knowledgeToolName && turn.knowledgeAsTool
            ? await callKnowledgeTool(deps, call, turn, found)
            : await callTool(deps, toolsByName.get(call.toolName), call, session, agent.id, signal, preExecution);
        toolTimings.push({ name: call.toolName, durationMs: record.durationMs });
        const message: Message = {
          id: newMessageId(),
          sessionId: session.id,
          role: 'TOOL',
          content: '',
          toolCall: record,
          metadata: {},
          createdAt: deps.clock.now().toISOString(),
        };
        toolMessages.push(message);
        results.content.push({
          type: 'tool-result',
          toolCallId: call.toolCallId,
          toolName: call.toolName,
          output: record.status === 'SUCCESS' ? { type: 'text', value: record.result } : { type: 'error-text', value: record.result },
        });
      }
      prompt.push(results);
    }
  } catch (error) {
    if (options.stop?.aborted) {
      failure = options.stop.reason as TurnFailure;
      logger.info('turn stopped', { sessionId: session.id, code: failure.code });
    } else {
      failure = inModelCall
        ? { code: 'MODEL_ERROR', message: 'The model provider failed during the reply; retry.', status: 502 }
        : { code: 'GENERIC_ERROR', message: 'The reply failed; retry.', status: 500 };
      logger.error('turn failed', { sessionId: session.id, code: failure.code, error: error as Error });
    }
    sink.failed(failure);
  }

  const cited = retrieval?.chunks ?? (found.length > 0 ? found : undefined);
  const citations = cited?.map(({ documentId, documentName, chunkId, score, page }) => ({ documentId, documentName, chunkId, score, ...(page === undefined ? {} : { page }) }));
  if (citations && !failure) sink.citations?.(turn.assistantMessageId, citations);
  const totalMs = performance.now() - turn.startedAt;
  const toolsMs = toolTimings.reduce((sum, timing) => sum + timing.durationMs, 0);
  const platformMs = Math.max(0, totalMs - modelMs - toolsMs);
  recordTurnMetrics(deps, { failed: failure !== undefined, platformMs, tokens, toolMessages });
  const now = deps.clock.now();
  const assistant: Message = {
    id: turn.assistantMessageId,
    sessionId: session.id,
    role: 'ASSISTANT',
    content,
    metadata: {
      model: { id: model.id, provider: model.provider, name: model.name },
      usage: tokens,
      timings: {
        // A reply of tool calls alone has no first token: its first model call's time stands for it.
        modelFirstTokenMs: round2(firstTokenMs ?? modelMs),
        modelTotalMs: round2(modelMs),
        tools: toolTimings.map((timing) => ({ name: timing.name, durationMs: round2(timing.durationMs) })),
        ...(retrieval ? { retrieval: round2(retrieval.durationMs) } : {}),
        platformMs: round2(platformMs),
        totalMs: round2(totalMs),
      },
      ...(citations ? { citations } : {}),
      ...options.replyMetadata?.(),
      ...(failure ? { status: 'FAILED', error: { code: failure.code, message: failure.message } } : { status: 'COMPLETED' }),
    },
    createdAt: now.toISOString(),
  };
  const messages = [turn.userMessage, ...toolMessages, assistant];
  const replySeq = await commitTurn(deps, turn, messages, now, routed, failure ? undefined : options.sealReply?.(messages));
  if (agentEnded && options.closeWhenAgentEnds) {
    const active = { ...session, lastActivityAt: now.toISOString(), messageCount: session.messageCount + messages.length };
    await endSession(deps, active, 'CLOSED', 'AGENT_ENDED', now.toISOString());
  }
  return { messages: [...toolMessages, assistant], failure, agentEnded, routed, replySeq };
}

/** What a turn adds to the operational metrics (docs/deploy.md#dashboards-and-alarms): the same figures as its reply's metadata. */
function recordTurnMetrics(
  deps: TurnDeps,
  turn: { failed: boolean; platformMs: number; tokens: { inputTokens: number; outputTokens: number }; toolMessages: readonly Message[] },
): void {
  const { metrics } = deps;
  metrics.add(conversationMetrics.turns, 1);
  if (turn.failed) metrics.add(conversationMetrics.turnsFailed, 1);
  metrics.add(conversationMetrics.turnOverhead, turn.platformMs);
  metrics.add(conversationMetrics.inputTokens, turn.tokens.inputTokens);
  metrics.add(conversationMetrics.outputTokens, turn.tokens.outputTokens);
  if (turn.toolMessages.length > 0) {
    metrics.add(conversationMetrics.toolCalls, turn.toolMessages.length);
    metrics.add(conversationMetrics.toolCallsFailed, turn.toolMessages.filter((message) => message.toolCall?.status === 'ERROR').length);
  }
}

/** A follow-up is short: under this many words. */
const followUpWords = 6;
/** Opening words that carry on from the message before ("and for Canada?", "what about returns?"). */
const continuations = new Set(['and', 'or', 'but', 'also', 'then', 'so', 'plus']);
/** Words that point back at the message before ("how much is it?", "is that free?"). */
const backReferences = new Set(['it', 'its', 'that', 'this', 'these', 'those', 'they', 'them', 'their', 'there', 'one', 'ones', 'same', 'else']);
const questionWords = new Set(['a', 'an', 'the', 'is', 'are', 'was', 'were', 'be', 'do', 'does', 'did', 'can', 'could', 'will', 'would', 'should', 'i', 'you', 'we', 'my', 'your', 'our', 'me', 'us', 'to', 'of', 'in', 'on', 'at', 'for', 'with', 'what', 'when', 'where', 'who', 'why', 'how', 'which', 'much', 'many', 'please']);

/**
 * Whether a message leans on the previous user message, and is retrieved with it: a short one (under six words)
 * that opens by carrying on, points back, or names fewer than two things of its own. A short question with its
 * own subject ("When is support open?") stands alone: merged, the previous question's words would pull
 * retrieval back to the previous answer.
 */
function leansOnPrevious(content: string): boolean {
  if (content.split(/\s+/).filter(Boolean).length >= followUpWords) return false;
  const words = content.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  if (continuations.has(words[0] ?? '') || ((words[0] === 'what' || words[0] === 'how') && words[1] === 'about')) return true;
  return words.some((word) => backReferences.has(word)) || words.filter((word) => !questionWords.has(word)).length < 2;
}

/**
 * Retrieval for an agent with a knowledge store. Never fails the turn: a store deleted meanwhile, or a retrieval
 * error, makes the turn answer without knowledge, with a warning in the log.
 */
async function retrieveForTurn(deps: TurnDeps, session: StoredSession, agent: Agent, history: Message[], content: string): Promise<TurnRetrieval | undefined> {
  if (!agent.knowledgeStoreId || !deps.retrieveKnowledge) return undefined;
  const started = performance.now();
  const previous = history.findLast((message) => message.role === 'USER')?.content;
  const query = previous && leansOnPrevious(content) ? `${previous}\n${content}` : content;
  try {
    const chunks = await deps.retrieveKnowledge(session.orgId, agent.knowledgeStoreId, query);
    if (!chunks) logger.warn('the agent\'s knowledge store no longer exists; answering without it', { sessionId: session.id, knowledgeStoreId: agent.knowledgeStoreId });
    return { chunks: chunks ?? [], durationMs: performance.now() - started };
  } catch (error) {
    logger.warn('knowledge retrieval failed; answering without it', { sessionId: session.id, knowledgeStoreId: agent.knowledgeStoreId, error: error as Error });
    return { chunks: [], durationMs: performance.now() - started };
  }
}

const validators = new Map<string, ValidateFunction>();
const maxCachedValidators = 500;
let validatorCompiler: Promise<Ajv> | undefined;
// Loaded on a turn's first tool call: a function that runs no tool call loads no ajv.
const compiler = () => (validatorCompiler ??= import('ajv').then(({ Ajv }) => new Ajv({ strict: false, allErrors: true, addUsedSchema: false })));

/** Compiled argument validators, shared by content so a PATCHed schema simply gets a new entry. */
async function validatorFor(schema: Record<string, unknown>): Promise<ValidateFunction> {
  const key = JSON.stringify(schema);
  let validate = validators.get(key);
  if (!validate) {
    const ajv = await compiler();
    if (validators.size >= maxCachedValidators) validators.delete(validators.keys().next().value as string);
    validate = ajv.compile(schema);
    validators.set(key, validate);
  }
  return validate;
}

/** Validates and runs one tool call; invalid arguments go back to the model as an error result, never a 500. */
async function callTool(
  deps: TurnDeps,
  tool: ExecutableTool | undefined,
  call: PendingCall,
  session: StoredSession,
  agentId: string,
  signal: AbortSignal,
  say: (text: string) => void,
): Promise<ToolCallRecord> {
  const args = parseArguments(call.input);
  const refuse = (result: string): ToolCallRecord => ({ id: call.toolCallId, name: call.toolName, arguments: args ?? {}, result, status: 'ERROR', durationMs: 0 });
  if (!tool) return refuse(`No tool named ${call.toolName} is available.`);
  if (!args) return refuse('The arguments are not a JSON object.');
  const validate = await validatorFor(tool.ajvPropertiesSchema);
  if (!validate(args)) {
    const problems = (validate.errors ?? []).map((error) => `${error.instancePath || '(root)'} ${error.message ?? 'is invalid'}`);
    return refuse(`Invalid arguments: ${problems.join('; ')}`);
  }
  if (tool.preExecutionMessage) say(tool.preExecutionMessage);
  const execution = await deps.executeTool(tool, args, {
    toolCallId: call.toolCallId,
    sessionId: session.id,
    agentId,
    sessionVariables: session.metadata.sessionVariables,
    signal,
  });
  return { id: call.toolCallId, name: tool.name, arguments: args, result: execution.result, status: execution.status, durationMs: round2(execution.durationMs) ?? 0 };
}

/**
 * The knowledge tool's call: the agent's store searched for the model's `query` (the user's message when it gives
 * none), the excerpts returned as retrieved context reads; the chunks are cited on the reply.
 */
async function callKnowledgeTool(deps: TurnDeps, call: PendingCall, turn: PreparedTurn, found: RetrievedChunk[]): Promise<ToolCallRecord> {
  const started = performance.now();
  const args = parseArguments(call.input) ?? {};
  const query = typeof args.query === 'string' && args.query.trim() ? args.query : turn.userMessage.content;
  const retrieval = await retrieveForTurn(deps, turn.session, turn.agent, turn.history, query);
  const chunks = retrieval?.chunks ?? [];
  found.push(...chunks);
  const result = chunks.length > 0 ? knowledgeContext(chunks) : 'The knowledge base has nothing on this.';
  return { id: call.toolCallId, name: call.toolName, arguments: args, result, status: 'SUCCESS', durationMs: round2(performance.now() - started) ?? 0 };
}

/** A built-in routing tool's call, recorded like any tool call (the transcript, and so the analysis, shows it). */
async function callRoutingTool(deps: TurnDeps, call: PendingCall, turn: PreparedTurn, routed: RoutingChange): Promise<ToolCallRecord> {
  const started = performance.now();
  const args = parseArguments(call.input) ?? {};
  const outcome = await runRoutingTool(deps, call.toolName, args, { session: turn.session, agent: turn.agent, now: deps.clock.now().toISOString() }, routed);
  return { id: call.toolCallId, name: call.toolName, arguments: args, result: outcome.result, status: outcome.status, durationMs: round2(performance.now() - started) ?? 0 };
}

function parseArguments(input: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(input || '{}');
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Role first, then the system prompt, then special instructions (lowest priority); `{{key}}` from session variables. */
export function systemPrompt(agent: Agent, sessionVariables: Record<string, unknown>): string {
  const parts = [agent.role, agent.systemPrompt, agent.specialInstructions && `Lower-priority instructions: ${agent.specialInstructions}`];
  if (agent.language) parts.push(`Answer in the language ${agent.language} unless the user asks otherwise.`);
  return fillPlaceholders(parts.filter(Boolean).join('\n\n'), sessionVariables, (value) => value);
}

/**
 * Every tool a turn offers its model: the agent's, `end_conversation`, the knowledge tool when the knowledge store is
 * one, and the routing tools its configuration allows.
 */
function turnTools(deps: TurnDeps, agent: Agent, tools: Tool[], routing: LanguageModelV4FunctionTool[], knowledgeAsTool: boolean): LanguageModelV4FunctionTool[] {
  const knowledge: LanguageModelV4FunctionTool[] =
    knowledgeAsTool && agent.knowledgeStoreId && deps.retrieveKnowledge
      ? [
          {
            type: 'function',
            name: knowledgeToolName,
            description: "Look up the facts that answer the user's question in the knowledge base (the business's own documents), and answer from what it returns.",
            inputSchema: { type: 'object', properties: { query: { type: 'string', description: 'What to look up' } } },
          },
        ]
      : [];
  return [...functionTools(agent, tools), ...knowledge, ...routing];
}

/**
 * What a model outside the process is opened with for a session (a speech-to-speech session, which holds the
 * conversation itself): the agent's prompt with the session's variables filled in, and the tools of its turns,
 * the knowledge store as a tool.
 */
export async function outsideModelSetup(deps: TurnDeps, orgId: string, sessionId: string): Promise<{ instructions: string; tools: LanguageModelV4FunctionTool[] }> {
  const { session, agent, tools } = await readTurnContext(deps, orgId, sessionId);
  if (!session) throw new SessionNotFoundError(`Session ${sessionId} not found.`);
  if (!agent) throw new InvalidSessionError(`The agent of session ${sessionId} no longer exists.`);
  return { instructions: systemPrompt(agent, session.metadata.sessionVariables), tools: turnTools(deps, agent, tools, routingTools(agent, session), true) };
}

function functionTools(agent: Agent, tools: Tool[]): LanguageModelV4FunctionTool[] {
  const overrides = new Map(agent.tools.map((attached) => [attached.toolId, attached.toolDescription]));
  return [
    ...tools.map((tool) => ({
      type: 'function' as const,
      name: tool.name,
      description: overrides.get(tool.id) ?? tool.description,
      inputSchema: tool.ajvPropertiesSchema,
    })),
    {
      type: 'function',
      name: endConversationTool,
      description: 'End the conversation when the user is done, says goodbye, or nothing more can be done.',
      inputSchema: { type: 'object', properties: { reason: { type: 'string' } } },
    },
  ];
}

/** Earlier turns as the model sees them: each TOOL message is its call and its result. */
function historyPrompt(history: Message[]): LanguageModelV4Message[] {
  const prompt: LanguageModelV4Message[] = [];
  for (const message of history) {
    if (message.role === 'USER') prompt.push({ role: 'user', content: [{ type: 'text', text: message.content }] });
    else if (message.role === 'ASSISTANT' && message.content) prompt.push({ role: 'assistant', content: [{ type: 'text', text: message.content }] });
    else if (message.role === 'TOOL' && message.toolCall) {
      const call = message.toolCall;
      prompt.push(
        { role: 'assistant', content: [{ type: 'tool-call', toolCallId: call.id, toolName: call.name, input: call.arguments }] },
        {
          role: 'tool',
          content: [{ type: 'tool-result', toolCallId: call.id, toolName: call.name, output: call.status === 'SUCCESS' ? { type: 'text', value: call.result } : { type: 'error-text', value: call.result } }],
        },
      );
    }
  }
  return prompt;
}

function round2(value: number | undefined): number | undefined {
  return value === undefined ? undefined : Math.round(value * 100) / 100;
}
