import { v7 as uuidv7 } from 'uuid';
import { agentOfSessionBinding } from '../agents/agent-versions.ts';
import type { Config } from '../platform/config.ts';
import { InvalidSessionError } from '../platform/errors.ts';
import type { ModelCatalog } from '../models/model-catalog.ts';
import type { AgentStore } from '../agents/ports.ts';
import type { AnalysisQueue, AnalysisQueueMessage, Analyzer } from './ports.ts';
import type { AnalysisJob, SessionStore, StoredSession } from '../conversations/ports.ts';
import type { MetricsRecorder, SealResponse } from '../platform/ports.ts';
import type { Agent } from '../agents/agent-schemas.ts';
import type { AnalysisConfig } from '../agents/analysis-config-schemas.ts';
import type { AnalysisResult } from '../conversations/analysis-result-schemas.ts';
import type { Model } from '../models/model-schemas.ts';
import type { EndedReason, Message } from '../conversations/session-schemas.ts';
import { nextUpdatedAt, type Clock } from '../platform/clock.ts';
import { sessionEvents } from '../conversations/session-events.ts';
import { getSession, type SessionDeps } from '../conversations/sessions.ts';
import { boundedTranscript } from '../conversations/transcript.ts';
import { analysisMetrics } from './analysis-metrics.ts';

/**
 * Post-session analysis (docs/analysis.md). Ending a session writes an analysis job with it; the job reaches the
 * analysis queue through the table stream; the analysis function runs the model and stores the result with
 * `session.ended`, once. The deadline: the run gives up at 80% of `ANALYSIS_DEADLINE_SECONDS` after the end, and
 * a deadline message due at 90% sends `session.ended` with `status: FAILED` if nothing has gone out by then.
 */
export interface AnalysisDeps {
  sessions: SessionStore;
  agents: AgentStore;
  catalog: ModelCatalog;
  clock: Clock;
  metrics: MetricsRecorder;
  config: Pick<Config, 'ANALYSIS_DEADLINE_SECONDS' | 'ANALYSIS_MODEL_ID'>;
  analyzerFor(model: Model): Analyzer;
}

const runShare = 0.8;
const backstopShare = 0.9;

/** When a job's run gives up on the model, and when its deadline message checks that `session.ended` has left. */
export function analysisTimes(job: AnalysisJob, deadlineSeconds: number): { giveUpAt: number; backstopAt: number } {
  const from = Date.parse(job.deadlineFrom);
  return { giveUpAt: from + runShare * deadlineSeconds * 1000, backstopAt: from + backstopShare * deadlineSeconds * 1000 };
}

/** The queue messages of new jobs: a run each, and for a session's first analysis its deadline message. */
export async function dispatchAnalysisJobs(
  deps: { queue: AnalysisQueue; config: Pick<Config, 'ANALYSIS_DEADLINE_SECONDS'> },
  jobs: readonly AnalysisJob[],
): Promise<void> {
  const messages = jobs.flatMap((job): AnalysisQueueMessage[] => {
    const run: AnalysisQueueMessage = { kind: 'analysis.run', job, notBefore: Date.parse(job.deadlineFrom) };
    if (job.purpose === 'rerun') return [run];
    return [run, { kind: 'analysis.deadline', job, notBefore: analysisTimes(job, deps.config.ANALYSIS_DEADLINE_SECONDS).backstopAt }];
  });
  await deps.queue.schedule(messages);
}

/** `POST …/sessions/{id}/analysis`: queues a new analysis of an ended session with the agent's current configuration. */
export async function requestAnalysisRerun(
  deps: SessionDeps,
  orgId: string,
  sessionId: string,
  sealResponse?: SealResponse,
): Promise<{ sessionId: string; jobId: string; requestedAt: string }> {
  const session = await getSession(deps, orgId, sessionId);
  if (session.state === 'OPEN') throw new InvalidSessionError(`Session ${sessionId} is still open; it can be analysed once it has ended.`);
  const requestedAt = deps.clock.now().toISOString();
  const job: AnalysisJob = { jobId: uuidv7(), orgId, sessionId, purpose: 'rerun', deadlineFrom: requestedAt };
  const requested = { sessionId, jobId: job.jobId, requestedAt };
  await deps.sessions.requestAnalysis(job, sealResponse?.(requested));
  return requested;
}

export type AnalysisOutcome = 'sent-ended' | 'replaced' | 'already-done' | 'no-session';

/**
 * Handles one analysis queue message. Never throws for a model's failure (that is a FAILED analysis); throws
 * for a store failure, so the queue hands the message over again, except on its `lastAttempt`, where it still
 * tries to send `session.ended` with a FAILED analysis so that nothing waits for a dead letter.
 */
export async function handleAnalysisMessage(
  deps: AnalysisDeps,
  message: AnalysisQueueMessage,
  options: { lastAttempt: boolean; /** Epoch ms by which the invocation must be done (its timeout, less a margin). */ mustFinishBy: number },
): Promise<AnalysisOutcome> {
  const { job } = message;
  const session = await deps.sessions.get(job.orgId, job.sessionId);
  if (!session) return 'no-session';
  const firstPending = session.endedEventId === undefined;
  if (message.kind === 'analysis.deadline') {
    if (!firstPending) return 'already-done';
    const { model, config } = await analysisContext(deps, session);
    return store(deps, session, job, failed(deps, model, config, 'ANALYSIS_DEADLINE_EXCEEDED', 'The analysis did not finish within ANALYSIS_DEADLINE_SECONDS.'));
  }
  // A first analysis is done once `session.ended` went out (by any run, the deadline or a re-run); a re-run, once its result is stored.
  if ((job.purpose === 'initial' && !firstPending) || session.analysisJobId === job.jobId) return 'already-done';
  try {
    return await store(deps, session, job, await analyse(deps, session, job, options.mustFinishBy));
  } catch (error) {
    if (!options.lastAttempt || !firstPending) throw error;
    const { model, config } = await analysisContext(deps, session);
    return store(deps, session, job, failed(deps, model, config, 'ANALYSIS_RETRIES_EXHAUSTED', 'The analysis failed on every attempt.'));
  }
}

async function store(deps: AnalysisDeps, session: StoredSession, job: AnalysisJob, analysis: AnalysisResult): Promise<AnalysisOutcome> {
  const updated = { ...session, analysis, updatedAt: nextUpdatedAt(deps.clock, session.updatedAt) };
  if (session.endedEventId === undefined) {
    const sent = await deps.sessions.completeAnalysis(session, analysis, job.jobId, sessionEvents.sessionEnded(updated), updated.updatedAt);
    if (sent) {
      recordAnalysisMetrics(deps, analysis);
      deps.metrics.add(analysisMetrics.endedLatency, Math.max(0, deps.clock.now().getTime() - Date.parse(job.deadlineFrom)));
      return 'sent-ended';
    }
    // Someone else sent `session.ended` meanwhile; a re-run's result still replaces theirs.
    if (job.purpose === 'initial') return 'already-done';
    const current = await deps.sessions.get(session.orgId, session.id);
    if (!current) return 'no-session';
    return store(deps, current, job, analysis);
  }
  const replaced = await deps.sessions.replaceAnalysis(session, analysis, job.jobId, sessionEvents.analysisReplaced(updated), updated.updatedAt);
  if (!replaced) return 'already-done';
  recordAnalysisMetrics(deps, analysis);
  return 'replaced';
}

/** A stored result counts once in the operational metrics (docs/deploy.md#dashboards-and-alarms), by its status. */
function recordAnalysisMetrics(deps: AnalysisDeps, analysis: AnalysisResult): void {
  if (analysis.status === 'COMPLETED') deps.metrics.add(analysisMetrics.completed, 1);
  else if (analysis.status === 'SKIPPED') deps.metrics.add(analysisMetrics.skipped, 1);
  else {
    deps.metrics.add(analysisMetrics.failed, 1);
    if (analysis.error?.code === 'ANALYSIS_DEADLINE_EXCEEDED') deps.metrics.add(analysisMetrics.deadlineExceeded, 1);
  }
}

/** The model that analyses for an agent: `ANALYSIS_MODEL_ID`, else the agent's model, else (gone from the catalog, or no agent) the default LLM. */
function analysisModel(deps: TranscriptAnalysisDeps, agent: Agent | undefined): Model {
  const configured = deps.config.ANALYSIS_MODEL_ID ? deps.catalog.byId(deps.config.ANALYSIS_MODEL_ID) : undefined;
  return configured ?? (agent && deps.catalog.byId(agent.modelId)) ?? deps.catalog.defaultLlm;
}

interface AnalysisContext {
  agent: Agent | undefined;
  config: AnalysisConfig;
  model: Model;
}

/**
 * The agent's configuration the session answered with (the version a MANUAL agent's session is bound to, else the
 * published one; none if the agent was deleted) and the model that analyses.
 */
async function analysisContext(deps: AnalysisDeps, session: StoredSession): Promise<AnalysisContext> {
  return contextOf(deps, await agentOfSessionBinding(deps, session.orgId, session));
}

/** The agent's analysis configuration, and the model that analyses for it. */
const contextOf = (deps: TranscriptAnalysisDeps, agent: Agent | undefined): AnalysisContext => ({ agent, config: agent?.analysis ?? {}, model: analysisModel(deps, agent) });

async function analyse(deps: AnalysisDeps, session: StoredSession, job: AnalysisJob, mustFinishBy: number): Promise<AnalysisResult> {
  const context = await analysisContext(deps, session);
  const messages = await deps.sessions.messages(session.orgId, session.id);
  const remainingMs = Math.min(analysisTimes(job, deps.config.ANALYSIS_DEADLINE_SECONDS).giveUpAt, mustFinishBy) - deps.clock.now().getTime();
  return analysed(deps, context, messages, session.endedReason, remainingMs);
}

/** What analysing a transcript needs: the analysis function's deps but the session and agent stores. */
export type TranscriptAnalysisDeps = Pick<AnalysisDeps, 'catalog' | 'clock' | 'config' | 'analyzerFor'>;

/**
 * The analysis of a transcript no session holds (a replay's), made as a session's is: the same model choice, analyzer
 * and result, from the agent's configuration; the model has 80% of `ANALYSIS_DEADLINE_SECONDS`, as a session's run has.
 */
export function analyseTranscript(deps: TranscriptAnalysisDeps, agent: Agent, messages: readonly Message[], endedReason: EndedReason | undefined): Promise<AnalysisResult> {
  return analysed(deps, contextOf(deps, agent), messages, endedReason, runShare * deps.config.ANALYSIS_DEADLINE_SECONDS * 1000);
}

/** Asks the model within `remainingMs`; its failure (or silence) is a FAILED result, never an error. */
async function analysed(
  deps: TranscriptAnalysisDeps,
  { agent, config, model }: AnalysisContext,
  messages: readonly Message[],
  endedReason: EndedReason | undefined,
  remainingMs: number,
): Promise<AnalysisResult> {
  if (!messages.some((message) => message.role === 'USER')) {
    return { ...base(deps, model, config, 'SKIPPED'), summary: 'The session has no user message: there is nothing to analyse.' };
  }
  if (remainingMs <= 0) return failed(deps, model, config, 'ANALYSIS_DEADLINE_EXCEEDED', 'The analysis could not start within ANALYSIS_DEADLINE_SECONDS.');
  const signal = AbortSignal.timeout(remainingMs);
  try {
    const output = await deps.analyzerFor(model)({ transcript: boundedTranscript(messages), config, language: agent?.language, endedReason }, signal);
    return { ...base(deps, model, config, 'COMPLETED'), ...output };
  } catch (error) {
    if (signal.aborted) return failed(deps, model, config, 'ANALYSIS_DEADLINE_EXCEEDED', 'The model did not answer within ANALYSIS_DEADLINE_SECONDS.');
    const code = (error as { code?: unknown }).code === 'INVALID_OUTPUT' ? 'INVALID_OUTPUT' : 'MODEL_ERROR';
    return failed(deps, model, config, code, (error as Error).message);
  }
}

/** Every result names its model and time and, when fields are configured, has every one of them (null until found). */
function base(deps: Pick<AnalysisDeps, 'clock'>, model: Model, config: AnalysisConfig, status: AnalysisResult['status']): AnalysisResult {
  const fields = config.dataExtraction?.fields ?? [];
  return {
    status,
    model: { id: model.id, provider: model.provider, name: model.name },
    completedAt: deps.clock.now().toISOString(),
    ...(fields.length ? { extractedData: Object.fromEntries(fields.map((field) => [field.name, null])) } : {}),
  };
}

function failed(deps: Pick<AnalysisDeps, 'clock'>, model: Model, config: AnalysisConfig, code: string, message: string): AnalysisResult {
  return { ...base(deps, model, config, 'FAILED'), error: { code, message } };
}
