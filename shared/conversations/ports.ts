/** The ports of the conversations context: the interfaces its use cases depend on, implemented by its adapters (issue 22 split shared/ports.ts by context). */
import type { Agent } from '../agents/agent-schemas.ts';
import type { ExecutableTool } from '../agents/tool-schemas.ts';
import type { AgentVersion } from '../agents/agent-version-schemas.ts';
import type { AgentBinding } from './routing-tools.ts';
import type { AnalysisResult } from './analysis-result-schemas.ts';
import type { Message, Session, SessionState } from './session-schemas.ts';
import type { DomainEvent } from '../events/events.ts';
import type { IdempotencyCompletion } from '../platform/ports.ts';

/**
 * The follow-up work an ended session hands over: a request to analyse it, written with the end (`initial`) or by a
 * re-run (`rerun`), in the session's partition; the table stream hands it to the analysis queue (docs/analysis.md).
 * Declared here because the session store writes it in the transaction that ends the session.
 */
export interface AnalysisJob {
  jobId: string;
  orgId: string;
  sessionId: string;
  purpose: 'initial' | 'rerun';
  /** The moment the deadline counts from: when the end was recorded, or when the re-run was asked for. */
  deadlineFrom: string;
}

/** A session as stored: the record plus the turn bookkeeping that never leaves the store and the domain. */
export interface StoredSession extends Session {
  /** Sequence number the next message gets. */
  nextSeq: number;
  /** Epoch ms until which a running turn keeps the session active; set only when it could outlast the window. */
  activeUntil?: number | undefined;
  /** Set once `session.ended` is recorded (its event id): the analysis that went out with it exists. */
  endedEventId?: string | undefined;
  /** The analysis job whose result is stored, so that a redelivered re-run does not announce it twice. */
  analysisJobId?: string | undefined;
  /** How many of its messages were changed after being written (interrupted replies of a call): cached histories compare it. */
  historyRevision?: number | undefined;
}

export interface TurnContext {
  session: StoredSession | undefined;
  /** The agent as the bound version configures it (docs/agent-versions.md#binding). */
  agent: Agent | undefined;
  /** The bound version, whose tool definitions the turn runs. */
  version?: AgentVersion | undefined;
  tools: ExecutableTool[];
}

/** Which sessions a list shows; `state` is the state the API shows, so an idle OPEN session is EXPIRED. */
export interface SessionFilter {
  agentId?: string | undefined;
  state?: SessionState | undefined;
  platform?: string | undefined;
  createdAfter?: string | undefined;
  /** Which OPEN sessions are idle: last active before `lastActivityBefore` (ISO), and no turn holds them past `nowMs`. */
  idle: { lastActivityBefore: string; nowMs: number };
}

export interface SessionPageRequest {
  order: 'asc' | 'desc';
  /** Where the previous page ended (its last session's `<createdAt>#<id>`): this page starts after it. */
  after?: string | undefined;
  /** Matching sessions to pass over before the page (a page asked for by number, without a cursor). */
  skip: number;
  limit: number;
}

export interface SessionStore {
  /** The session with its expiry item and its `session.created` event, together. */
  create(session: StoredSession, expiresAt: number, events: DomainEvent[], completion?: IdempotencyCompletion): Promise<void>;
  get(orgId: string, sessionId: string): Promise<StoredSession | undefined>;
  /** One page of the sessions matching the filter, and whether more follow. */
  list(orgId: string, filter: SessionFilter, page: SessionPageRequest): Promise<{ sessions: StoredSession[]; hasMore: boolean }>;
  /** How many sessions match the filter, from counters kept with every create and end (not by reading them). */
  count(orgId: string, filter: SessionFilter): Promise<number>;
  messages(orgId: string, sessionId: string): Promise<Message[]>;
  /** The messages numbered `fromSeq` to `toSeq` (inclusive; numbers start at 1 and have no gaps), in order. */
  messageRange(orgId: string, sessionId: string, fromSeq: number, toSeq: number): Promise<Message[]>;
  /**
   * OPEN → CLOSED/EXPIRED with its events and its analysis job, exactly once; false when it was no longer OPEN or
   * active since.
   */
  end(session: StoredSession, ended: Session, events: DomainEvent[], job: AnalysisJob, options?: { unlessActiveSince?: string }): Promise<boolean>;
  /** Records a re-run's analysis job; the session must have ended. */
  requestAnalysis(job: AnalysisJob, completion?: IdempotencyCompletion): Promise<void>;
  /**
   * Stores the session's first analysis with its `session.ended` event, exactly once: false when `session.ended`
   * was already recorded (by another attempt, the deadline, or a re-run).
   */
  completeAnalysis(session: StoredSession, analysis: AnalysisResult, jobId: string, ended: DomainEvent, updatedAt: string): Promise<boolean>;
  /**
   * Replaces the analysis of a session whose `session.ended` has gone out, with its `session.updated` event; false
   * when this job's result is already stored (a redelivered job).
   */
  replaceAnalysis(session: StoredSession, analysis: AnalysisResult, jobId: string, updated: DomainEvent, updatedAt: string): Promise<boolean>;
  readTurnContext(orgId: string, sessionId: string, binding: AgentBinding, toolIds: readonly string[]): Promise<TurnContext>;
  holdForTurn(session: StoredSession, at: { nowIso: string; activeUntil: number }): Promise<boolean>;
  /** Sets the session's expiry item to lapse at `expiresAt` (epoch s): its TTL deletion tells the session-expiry consumer to look again. */
  armExpiry(orgId: string, sessionId: string, expiresAt: number): Promise<void>;
  /**
   * A reply cut short on a call: its `content` becomes what was spoken and `metadata.interruption` records the
   * rest, and the session's `historyRevision` counts the change (with it). False when message `seq` is not an
   * assistant reply.
   */
  truncateReply(orgId: string, sessionId: string, seq: number, spoken: string, interruption: Record<string, unknown>): Promise<boolean>;
  /**
   * Appends a turn's messages after `session.nextSeq`; 'conflict' when another turn appended first. `completion`
   * records the idempotent send's response in the same transaction (none without an Idempotency-Key); `metadata`,
   * when given, replaces the session's (a handoff or transfer the turn decided).
   */
  commitTurn(
    session: StoredSession,
    messages: readonly Message[],
    at: { nowIso: string },
    completion?: IdempotencyCompletion,
    metadata?: Session['metadata'],
  ): Promise<'committed' | 'conflict'>;
}
