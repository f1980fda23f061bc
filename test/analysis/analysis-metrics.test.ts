import { describe, expect, it } from 'vitest';
import { handleAnalysisMessage, type AnalysisDeps } from '../../shared/analysis/analysis.ts';
import type { Analyzer } from '../../shared/analysis/ports.ts';
import type { AnalysisJob, StoredSession } from '../../shared/conversations/ports.ts';
import type { Model } from '../../shared/models/model-schemas.ts';

const endedAt = Date.parse('2026-11-21T12:00:00Z');
const model = { id: 'builtin', provider: 'builtin', name: 'Built-in' } as Model;

/**
 * Analysis deps over one ended session (whose `session.ended` has or has not gone out), `secondsLater` after its
 * end, counting what the metrics recorder is told.
 */
function analysisOf(options: { analyzer: Analyzer; sent?: boolean; secondsLater?: number; deadlineSeconds?: number }) {
  const counted: Record<string, number[]> = {};
  const session = {
    orgId: 'acme', id: 'ses-1', agentId: 'agt-1', type: 'CHAT', state: 'CLOSED', endedReason: 'USER_ENDED',
    updatedAt: new Date(endedAt).toISOString(), ...(options.sent ? { endedEventId: 'evt-ended' } : {}),
  } as unknown as StoredSession;
  const deps: AnalysisDeps = {
    sessions: {
      get: async () => session,
      messages: async () => [{ id: 'msg-1', sessionId: 'ses-1', role: 'USER', content: 'Where is my parcel?', metadata: {}, createdAt: session.updatedAt }],
      completeAnalysis: async () => true,
      replaceAnalysis: async () => true,
    } as unknown as AnalysisDeps['sessions'],
    agents: { get: async () => undefined } as unknown as AnalysisDeps['agents'],
    catalog: { byId: () => model, defaultLlm: model } as unknown as AnalysisDeps['catalog'],
    clock: { now: () => new Date(endedAt + (options.secondsLater ?? 3) * 1000) },
    metrics: { add: (metric, value) => void (counted[metric.name] ??= []).push(value) },
    config: { ANALYSIS_DEADLINE_SECONDS: options.deadlineSeconds ?? 120, ANALYSIS_MODEL_ID: undefined },
    analyzerFor: () => options.analyzer,
  };
  return { deps, counted };
}

const job = (purpose: AnalysisJob['purpose']): AnalysisJob => ({ jobId: 'job-1', orgId: 'acme', sessionId: 'ses-1', purpose, deadlineFrom: new Date(endedAt).toISOString() });
const run = (purpose: AnalysisJob['purpose'] = 'initial') => ({ kind: 'analysis.run' as const, job: job(purpose), notBefore: endedAt });
const options = { lastAttempt: false, mustFinishBy: Number.MAX_SAFE_INTEGER };
const answers: Analyzer = async () => ({ summary: 'The customer asked about a parcel.' });

describe('the metrics of post-session analysis', () => {
  it('count a completed analysis and the time from the end to its session.ended', async () => {
    const { deps, counted } = analysisOf({ analyzer: answers, secondsLater: 3 });
    expect(await handleAnalysisMessage(deps, run(), options)).toBe('sent-ended');
    expect(counted).toEqual({ AnalysesCompleted: [1], AnalysisEndedLatency: [3_000] });
  });

  it('count a model failure as failed, not as past the deadline', async () => {
    const { deps, counted } = analysisOf({ analyzer: async () => Promise.reject(new Error('throttled')) });
    await handleAnalysisMessage(deps, run(), options);
    expect(counted.AnalysesFailed).toEqual([1]);
    expect(counted.AnalysisDeadlineExceeded).toBeUndefined();
  });

  it('count the deadline message that finds nothing sent as failed past the deadline', async () => {
    const { deps, counted } = analysisOf({ analyzer: answers, secondsLater: 108 });
    expect(await handleAnalysisMessage(deps, { ...run(), kind: 'analysis.deadline' }, options)).toBe('sent-ended');
    expect(counted).toEqual({ AnalysesFailed: [1], AnalysisDeadlineExceeded: [1], AnalysisEndedLatency: [108_000] });
  });

  it('count nothing for a message whose work was done already, and a re-run once, without a latency', async () => {
    const done = analysisOf({ analyzer: answers, sent: true });
    expect(await handleAnalysisMessage(done.deps, run(), options)).toBe('already-done');
    expect(done.counted).toEqual({});
    const rerun = analysisOf({ analyzer: answers, sent: true });
    expect(await handleAnalysisMessage(rerun.deps, run('rerun'), options)).toBe('replaced');
    expect(rerun.counted).toEqual({ AnalysesCompleted: [1] });
  });
});
