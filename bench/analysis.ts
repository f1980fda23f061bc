import type { AnalysisCpuResult } from './analysis-cpu.ts';
import { childResult } from './child-result.ts';
import { percentiles, type Percentiles } from './turns.ts';
import { receiptsOf, startReceiver, startRuntime } from './webhooks.ts';

export interface AnalysisBenchResult {
  /** From a session's `endedAt` (the close) to its `session.ended`, with the built-in model's analysis, reaching the receiver. */
  endToEndedMs: Percentiles & { sessions: number };
  cpu: AnalysisCpuResult;
}

const sessions = Number(process.env.BENCH_ANALYSIS_SESSIONS ?? 200);
/** Sessions ended first and not timed: the functions' first invocations load their modules and open connections. */
const warmupSessions = 10;
const intervalMs = 25;

/**
 * Post-session analysis on the local runtime (the webhook benchmark's child process: API, stream poller with the
 * analysis dispatcher and the relay, SQS emulator, analysis and delivery functions): sessions of two messages
 * with the built-in model, closed one at a time, each timed from its `endedAt` to its `session.ended` at the
 * receiver. Then the analysis function's CPU and the transcript budget, in a child process of their own.
 */
export async function measureAnalysis(dynamodbEndpoint: string, tableName: string, log: (line: string) => void): Promise<AnalysisBenchResult> {
  const receiver = await startReceiver();
  const runtime = await startRuntime({ BENCH_DYNAMODB_ENDPOINT: dynamodbEndpoint, TABLE_NAME: tableName, POWERTOOLS_LOG_LEVEL: 'WARN' });
  let latencies: number[];
  try {
    const { call } = runtime;
    const agent = await call('POST', '/v2/chat/agents', {
      fullName: 'Bench',
      description: 'Bench',
      role: 'Bench',
      analysis: { sentiment: { enabled: true }, resolution: { enabled: true, checklist: ['Refund policy'] }, dataExtraction: { fields: [{ name: 'order_id', type: 'string' }] } },
    });
    const endSessions = async (count: number, path: string) => {
      await call('POST', '/v1/chat/webhooks', { url: `${receiver.url}${path}`, events: ['session.ended'] });
      for (let index = 0; index < count; index += 1) {
        const session = await call('POST', '/v1/chat/chat/sessions', { agentId: agent.id });
        for (const content of ['My order id is A-1 and it came broken.', 'What is your refund policy?']) {
          await call('POST', `/v1/chat/chat/sessions/${session.id}/messages`, { content, stream: false });
        }
        await call('PATCH', `/v1/chat/chat/sessions/${session.id}/close`);
        await new Promise((done) => setTimeout(done, intervalMs));
      }
      return receiptsOf(receiver, path, count, 60_000);
    };
    log(`analysis: ${warmupSessions} sessions to warm up, then ${sessions} closed ${intervalMs} ms apart, timing each endedAt to its session.ended at the receiver`);
    // Every warm-up session.ended has arrived before the measured endpoint exists, so none reaches it.
    await endSessions(warmupSessions, '/warm-up');
    const timed = await endSessions(sessions, '/ended');
    latencies = timed.map((receipt) => receipt.at - Date.parse(receipt.endedAt as string));
  } finally {
    runtime.child.kill('SIGTERM');
    receiver.server.closeAllConnections();
    receiver.server.close();
  }
  log('analysis: CPU per analysis and the transcript budget, in a child process with nothing else running');
  const cpu = await childResult<AnalysisCpuResult>('analysis-cpu.ts', dynamodbEndpoint, tableName);
  return { endToEndedMs: { sessions: latencies.length, ...percentiles(latencies) }, cpu };
}
