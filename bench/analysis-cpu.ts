/**
 * The analysis function's own cost, in a child process with nothing else running (no pollers, no API server), on
 * the database the parent names: CPU per analysis with the model left out (an analyzer that answers a fixed
 * result at once), the same with the built-in model, and the floor (an invocation that reads one item and stops).
 * Then the transcript budget on a stored 500-message session: the prompt a provider model would get. Reports the
 * figures to the parent and exits.
 */
import { useLocalDatabase } from '../infra/local/environment.ts';
import { analysisRuntime } from '../shared/analysis/analysis-runtime.ts';
import { createAgent } from '../shared/agents/agents.ts';
import { handleAnalysisMessage, type AnalysisDeps } from '../shared/analysis/analysis.ts';
import { newId } from '../shared/platform/clock.ts';
import { closeSession, createSession } from '../shared/conversations/sessions.ts';
import { estimateTokens, transcriptTokenBudget } from '../shared/conversations/transcript.ts';
import { analysisPrompt } from '../shared/analysis/structured-analysis.ts';
import { builtinAnalysis } from '../shared/analysis/builtin-analysis.ts';
import type { AnalysisOutput } from '../shared/analysis/ports.ts';
import type { AnalysisJob } from '../shared/conversations/ports.ts';
import type { StoredSession } from '../shared/conversations/ports.ts';
import type { Message } from '../shared/conversations/session-schemas.ts';

export interface AnalysisCpuResult {
  /** CPU ms per analysis of a 20-message session, the model left out. */
  cpuMsPerAnalysis: number;
  /** CPU ms per analysis of the same session with the built-in model's rules. */
  cpuMsPerBuiltinAnalysis: number;
  /** CPU ms per invocation that reads the session item and finds none: the SDK call and the handler's frame. */
  floorCpuMsPerInvocation: number;
  analyses: number;
  /** The 500-message session: its prompt's estimated tokens, the budget, the messages left out. */
  transcript: { messages: number; promptTokens: number; budgetTokens: number; omitted: number };
}

const analyses = Number(process.env.BENCH_ANALYSES ?? 200);
useLocalDatabase({ endpoint: process.env.BENCH_DYNAMODB_ENDPOINT as string, tableName: process.env.TABLE_NAME as string });
const runtime = analysisRuntime();
const orgId = newId();
await runtime.orgs.ensure({ id: orgId, name: 'bench', createdAt: new Date().toISOString() });
const agent = await createAgent(runtime, orgId, {
  fullName: 'Bench',
  description: 'Bench',
  role: 'Bench',
  voiceEnabled: false,
  tools: [],
  analysis: {
    intentRecognition: { enabled: true, intents: [{ name: 'billing', description: 'Invoices and payments' }, { name: 'shipping', description: 'Parcels and delivery dates' }] },
    resolution: { enabled: true, checklist: ['Order number', 'Refund policy'] },
    sentiment: { enabled: true },
    dataExtraction: { fields: [{ name: 'order_id', type: 'string', required: false }, { name: 'delivery_date', type: 'date', required: false }] },
  },
  publishMode: 'AUTO',
}, { type: 'API_KEY', keyId: 'bench' });

/** An ended session with `count` messages, user and assistant in turn, written as turns write them. */
async function endedSession(count: number): Promise<StoredSession> {
  const opened = await createSession(runtime, orgId, { agentId: agent.id, metadata: {}, platform: 'SDK', sessionVariables: {} });
  let session = (await runtime.sessions.get(orgId, opened.id)) as StoredSession;
  // A transaction takes 100 items: the session and expiry items, and at most 98 messages.
  for (let start = 0; start < count; start += 90) {
    const messages: Message[] = Array.from({ length: Math.min(90, count - start) }, (_, offset) => {
      const index = start + offset;
      return {
        id: `msg_${newId().replaceAll('-', '')}`,
        sessionId: session.id,
        role: index % 2 === 0 ? 'USER' : 'ASSISTANT',
        content: index % 2 === 0 ? `My order id is A-${index} and the parcel due 2026-12-01 came broken; what is your refund policy?` : `Sorry about order A-${index}. Our refund policy: a full refund within 30 days.`,
        metadata: {},
        createdAt: new Date().toISOString(),
      };
    });
    await runtime.sessions.commitTurn(session, messages, { nowIso: new Date().toISOString() });
    session = (await runtime.sessions.get(orgId, session.id)) as StoredSession;
  }
  await closeSession(runtime, orgId, session.id);
  return (await runtime.sessions.get(orgId, session.id)) as StoredSession;
}

const rerun = (session: StoredSession): AnalysisJob => ({ jobId: newId(), orgId, sessionId: session.id, purpose: 'rerun', deadlineFrom: new Date().toISOString() });
const options = () => ({ lastAttempt: false, mustFinishBy: Date.now() + 60_000 });

/** CPU ms (user + system) per call of `run`, after a warm-up. */
async function cpuPerCall(run: () => Promise<unknown>, count: number): Promise<number> {
  for (let index = 0; index < 50; index += 1) await run();
  const before = process.cpuUsage();
  for (let index = 0; index < count; index += 1) await run();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / count;
}

const session = await endedSession(20);
const fixedOutput: AnalysisOutput = builtinAnalysis({ transcript: { lines: [], omitted: 0, omittedAfter: 0 }, config: {} });
const withoutModel: AnalysisDeps = { ...runtime, analyzerFor: () => async () => fixedOutput };
const cpuMsPerAnalysis = await cpuPerCall(() => handleAnalysisMessage(withoutModel, { kind: 'analysis.run', job: rerun(session), notBefore: 0 }, options()), analyses);
const cpuMsPerBuiltinAnalysis = await cpuPerCall(() => handleAnalysisMessage(runtime, { kind: 'analysis.run', job: rerun(session), notBefore: 0 }, options()), analyses);
const missing = { ...session, id: newId() };
const floorCpuMsPerInvocation = await cpuPerCall(() => handleAnalysisMessage(runtime, { kind: 'analysis.run', job: rerun(missing), notBefore: 0 }, options()), analyses);

const long = await endedSession(500);
let prompt = '';
let omitted = 0;
const recording: AnalysisDeps = {
  ...runtime,
  analyzerFor: () => async (input) => {
    prompt = analysisPrompt(input);
    omitted = input.transcript.omitted;
    return fixedOutput;
  },
};
await handleAnalysisMessage(recording, { kind: 'analysis.run', job: rerun(long), notBefore: 0 }, options());

const result: AnalysisCpuResult = {
  cpuMsPerAnalysis,
  cpuMsPerBuiltinAnalysis,
  floorCpuMsPerInvocation,
  analyses,
  transcript: { messages: (await runtime.sessions.messages(orgId, long.id)).length, promptTokens: estimateTokens(prompt), budgetTokens: transcriptTokenBudget, omitted },
};
process.send?.(result);
process.exit(0);
