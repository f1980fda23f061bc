import { assertMayConsume, type AdmissionDeps } from '../billing/admission.ts';
import {
  AgentInactiveError,
  MessagesHistoryError,
  NotFoundError,
  SessionCreationError,
  SessionExpiredError,
  SessionNotFoundError,
} from '../platform/errors.ts';
import { modelOfOrganization, type OrganizationModelDeps } from '../models/provider-keys.ts';
import type { Page } from '../platform/schemas/common.ts';
import type { CreateSessionInput, EndedReason, ListSessionsQuery, Message, Session } from './session-schemas.ts';
import type { AgentStore } from '../agents/ports.ts';
import type { SessionStore, StoredSession } from './ports.ts';
import type { MetricsRecorder, SealResponse } from '../platform/ports.ts';
import { newId, type Clock } from '../platform/clock.ts';
import { v7 as uuidv7 } from 'uuid';
import { sessionEvents } from './session-events.ts';
import { conversationMetrics } from './conversation-metrics.ts';
import { nextCursorAfter, readPageCursor } from '../platform/page-cursor.ts';
import { agentOfSession, bindingKey, histories, lastKnownTools } from './turn-state.ts';
import { boundVersion, publishedAgent } from '../agents/agent-versions.ts';

export interface SessionDeps extends OrganizationModelDeps {
  sessions: SessionStore;
  agents: AgentStore;
  clock: Clock;
  config: { SESSION_IDLE_TIMEOUT_SECONDS: number };
  metrics: MetricsRecorder;
}

export async function createSession(
  deps: SessionDeps & AdmissionDeps,
  orgId: string,
  input: CreateSessionInput,
  sealResponse?: SealResponse,
): Promise<Session> {
  // The quota check reads beside the agent's read, not after it.
  const [agent] = await Promise.all([publishedAgent(deps, orgId, input.agentId), assertMayConsume(deps, orgId, 'chat_messages')]);
  if (!agent) throw new NotFoundError(`Agent ${input.agentId} not found.`);
  if (!agent.isActive) throw new AgentInactiveError(`Agent ${agent.id} is inactive; activate it to open sessions.`);
  if (!(await modelOfOrganization(deps, orgId, agent.modelId))) {
    throw new SessionCreationError(`The agent's model ${agent.modelId} is not available in this deployment.`);
  }
  const now = deps.clock.now();
  const nowIso = now.toISOString();
  const session: StoredSession = {
    id: newId(),
    orgId,
    agentId: agent.id,
    ...boundVersion(agent),
    type: 'CHAT',
    direction: 'INBOUND',
    platform: input.platform,
    state: 'OPEN',
    metadata: { ...input.metadata, sessionVariables: input.sessionVariables },
    createdAt: nowIso,
    updatedAt: nowIso,
    lastActivityAt: nowIso,
    messageCount: 0,
    nextSeq: 1,
  };
  const created = publicSession(session);
  await deps.sessions.create(session, expiryEpochSeconds(deps, now.getTime()), [sessionEvents.sessionCreated(session)], sealResponse?.(created));
  // What the first turn would read is known now; a turn in this process then needs one read round trip.
  const sessionKey = `${orgId}/${session.id}`;
  const binding = { agentId: agent.id, version: boundVersion(agent).agentVersion };
  agentOfSession.set(sessionKey, binding);
  lastKnownTools.set(bindingKey(binding), agent.tools.map((tool) => tool.toolId));
  histories.set(sessionKey, { nextSeq: session.nextSeq, revision: 0, messages: [] });
  return created;
}

/** The session, after making an idle OPEN session EXPIRED (exactly, on every access). */
export async function getSession(deps: SessionDeps, orgId: string, sessionId: string): Promise<StoredSession> {
  const session = await deps.sessions.get(orgId, sessionId);
  if (!session) throw new SessionNotFoundError(`Session ${sessionId} not found.`);
  return expireIfIdle(deps, session);
}

/** A page of sessions: the spec's page/limit/total, and `nextCursor` while more follow. */
export interface SessionPage {
  data: Session[];
  pagination: { page: number; limit: number; total: number; totalPages: number; nextCursor?: string };
}

/** `<createdAt>#<id>`: the position a sessions cursor names. */
const sessionPosition = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z#[0-9a-f-]{36}$/;

/**
 * One page read from where the previous one ended (keyset), and the total from counters: neither reads the
 * collection (docs/data-model.md#lists-that-scale). A page number without a cursor reads the pages before it.
 */
export async function listSessions(deps: SessionDeps, orgId: string, query: ListSessionsQuery): Promise<SessionPage> {
  const nowMs = deps.clock.now().getTime();
  const filter = {
    agentId: query.agentId,
    state: query.state,
    platform: query.platform,
    createdAfter: query.createdAfter,
    idle: { lastActivityBefore: new Date(nowMs - deps.config.SESSION_IDLE_TIMEOUT_SECONDS * 1000).toISOString(), nowMs },
  };
  const listing = JSON.stringify([query.sort.direction, query.agentId, query.state, query.platform, query.createdAfter]);
  const resumed = query.cursor === undefined ? undefined : readPageCursor(query.cursor, listing, 'sort and filters', (after) => sessionPosition.test(after));
  const page = resumed?.page ?? query.page;
  const [found, total] = await Promise.all([
    deps.sessions.list(orgId, filter, {
      order: query.sort.direction,
      after: resumed?.after,
      skip: resumed ? 0 : (page - 1) * query.limit,
      limit: query.limit,
    }),
    deps.sessions.count(orgId, filter),
  ]);
  // Idle sessions are shown as EXPIRED here without a write; the next access to each makes it durable.
  const data = found.sessions.map((session) => publicSession(isIdle(deps, session, nowMs) ? { ...session, state: 'EXPIRED' as const } : session));
  const last = found.hasMore ? data.at(-1) : undefined;
  return {
    data,
    pagination: {
      page,
      limit: query.limit,
      total,
      totalPages: Math.ceil(total / query.limit),
      ...nextCursorAfter(last && `${last.createdAt}#${last.id}`, page, listing),
    },
  };
}

/** OPEN → CLOSED by the user; closing an ended session changes nothing and returns it. */
export async function closeSession(deps: SessionDeps, orgId: string, sessionId: string): Promise<Session> {
  const session = await getSession(deps, orgId, sessionId);
  if (session.state !== 'OPEN') return publicSession(session);
  const ended = await endSession(deps, session, 'CLOSED', 'USER_CLOSED', deps.clock.now().toISOString());
  return publicSession(ended ?? (await getSession(deps, orgId, sessionId)));
}

export async function listMessages(
  deps: SessionDeps,
  orgId: string,
  sessionId: string,
  query: { page: number; limit: number },
): Promise<Page<Message>> {
  const session = await getSession(deps, orgId, sessionId);
  // Messages are numbered 1, 2, … without gaps, and the session counts them in the same transaction that writes
  // them: a page is one range read, whatever its number and however long the history.
  const total = session.messageCount;
  const fromSeq = (query.page - 1) * query.limit + 1;
  const toSeq = Math.min(query.page * query.limit, total);
  let messages: Message[] = [];
  try {
    if (fromSeq <= toSeq) messages = await deps.sessions.messageRange(orgId, sessionId, fromSeq, toSeq);
  } catch (error) {
    throw new MessagesHistoryError('The message history could not be read; retry.', { cause: error });
  }
  return { data: messages, pagination: { page: query.page, limit: query.limit, total, totalPages: Math.ceil(total / query.limit) } };
}

/** Ends an OPEN session once, with its events; undefined when someone else ended it first. */
export async function endSession(
  deps: Pick<SessionDeps, 'sessions' | 'clock' | 'metrics'>,
  session: StoredSession,
  state: 'CLOSED' | 'EXPIRED',
  reason: EndedReason,
  endedAt: string,
  options: { unlessActiveSince?: string } = {},
): Promise<StoredSession | undefined> {
  const ended: StoredSession = { ...session, state, endedAt, endedReason: reason, updatedAt: deps.clock.now().toISOString() };
  delete ended.activeUntil;
  // The analysis job is written with the end; its result goes out as `session.ended` (shared/analysis/analysis.ts).
  const job = { jobId: uuidv7(), orgId: session.orgId, sessionId: session.id, purpose: 'initial' as const, deadlineFrom: ended.updatedAt };
  if (!(await deps.sessions.end(session, ended, sessionEvents.sessionLeftOpen(ended), job, options))) return undefined;
  // Whatever ends a call (the carrier, the backstop, expiry, the API), it ends here once: the minutes usage counts.
  if (ended.type === 'VOICE') deps.metrics.add(conversationMetrics.callMinutes, callSeconds(session.createdAt, endedAt) / 60);
  return ended;
}

/** A call's seconds as usage meters them (shared/billing/usage.ts): from the session's start to its end, rounded up. */
function callSeconds(createdAt: string, endedAt: string): number {
  return Math.max(0, Math.ceil((Date.parse(endedAt) - Date.parse(createdAt)) / 1000));
}

/** Idle: OPEN, no activity within the window, and no running turn holding it (see `holdForTurn`). */
export function isIdle(deps: Pick<SessionDeps, 'config'>, session: Session & { activeUntil?: number | undefined }, nowMs: number): boolean {
  if (session.state !== 'OPEN') return false;
  if (session.activeUntil !== undefined && session.activeUntil > nowMs) return false;
  return nowMs - Date.parse(session.lastActivityAt) > deps.config.SESSION_IDLE_TIMEOUT_SECONDS * 1000;
}

export function expiryEpochSeconds(deps: Pick<SessionDeps, 'config'>, fromMs: number): number {
  return Math.ceil(fromMs / 1000) + deps.config.SESSION_IDLE_TIMEOUT_SECONDS;
}

/**
 * Called when a session's expiry item lapsed: expires it if it is indeed idle. One still OPEN was active since (turns
 * do not move the item), so the item is set again: a window after its last activity, or, while a turn holds the
 * session, a window from now (the turn's hold may last minutes; it usually ends in seconds). A missing session is
 * ignored.
 */
export async function expireAbandonedSession(deps: SessionDeps, orgId: string, sessionId: string): Promise<void> {
  const session = await deps.sessions.get(orgId, sessionId);
  if (!session) return;
  const current = await expireIfIdle(deps, session);
  if (current.state !== 'OPEN') return;
  const nowMs = deps.clock.now().getTime();
  const held = (current.activeUntil ?? 0) > nowMs;
  await deps.sessions.armExpiry(orgId, sessionId, expiryEpochSeconds(deps, held ? nowMs : Date.parse(current.lastActivityAt)));
}

/** Throws SESSION_EXPIRED for an idle or expired session (after recording the expiry), for operations that need OPEN. */
export function assertNotExpired(session: StoredSession): void {
  if (session.state === 'EXPIRED') throw new SessionExpiredError(`Session ${session.id} expired after inactivity; open a new session.`);
}

export async function expireIfIdle(deps: SessionDeps, session: StoredSession): Promise<StoredSession> {
  const nowMs = deps.clock.now().getTime();
  if (!isIdle(deps, session, nowMs)) return session;
  const endedAt = new Date(Date.parse(session.lastActivityAt) + deps.config.SESSION_IDLE_TIMEOUT_SECONDS * 1000).toISOString();
  const expired = await endSession(deps, session, 'EXPIRED', 'EXPIRED', endedAt, { unlessActiveSince: session.lastActivityAt });
  return expired ?? ((await deps.sessions.get(session.orgId, session.id)) as StoredSession);
}

/** The session as the API shows it, without the store's turn bookkeeping. */
export function publicSession(session: StoredSession | Session): Session {
  const { nextSeq: _nextSeq, activeUntil: _activeUntil, endedEventId: _endedEventId, analysisJobId: _analysisJobId, historyRevision: _historyRevision, ...visible } = session as StoredSession;
  return visible;
}
