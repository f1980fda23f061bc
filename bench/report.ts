import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { lambdaFunctions } from '../functions/lambda-functions.ts';
import { bundleChecks, bundleReport, type BundleResult } from './bundles.ts';
import type { CpuShare } from './cpu.ts';
import type { LocalRuntimeResult } from './http-load.ts';
import type { InitTimeResult } from './init-time.ts';
import type { TurnBenchResult } from './turns.ts';
import type { WebhookBenchResult } from './webhooks.ts';
import type { AnalysisBenchResult } from './analysis.ts';
import type { MessagePagesResult } from './message-pages.ts';
import type { SessionPagesResult } from './session-pages.ts';
import type { DeveloperPagesResult } from './developer-pages.ts';
import type { VoiceBenchResult } from './voice.ts';
import type { UsageBenchResult } from './usage.ts';
import { knowledgeReport, type KnowledgeBenchResult } from './knowledge.ts';
import { contactsImportReport, type ContactsImportBenchResult } from './contacts-import.ts';
import { whatsappReport, type WhatsappBenchResult } from './whatsapp.ts';
import { knowledgeIngestionReport } from './knowledge-ingestion.ts';
import type { KnowledgeIngestionBenchResult } from './knowledge-ingestion-runtime.ts';
import { campaignsReport, type CampaignsBenchResult } from './campaigns.ts';
import { observabilityReport, type ObservabilityResults } from './observability.ts';
import { startupReport, type StartupResults } from './startup.ts';
import { costReport, type CostBenchResult } from './cost.ts';
import { wholeTurnReport, type WholeTurnResult } from './whole-turn.ts';
import type { VoiceMediaResult } from './voice-media.ts';
import type { ReplaysResult } from './replays.ts';

export const targets = {
  p50Ms: 10,
  errors: 0,
};

/** Usage, quotas, rate limits and analytics (issue 11). */
export const usageTargets = {
  writesPerRequest: 0.05,
  checksP50Ms: 0.5,
  analyticsP50Ms: 50,
};

/** The conversation engine's targets (issue 3). */
export const turnTargets = {
  overheadP50Ms: 4,
  overheadP99Ms: 12,
  nonStreamedTurnsPerSecond: 250,
  cpuMsPerTurn: 4,
  roundTripsBeforeFirstDelta: 2,
  rssMb: 250,
};

/** Webhook delivery's targets (issue 4). */
export const webhookTargets = {
  deliveriesPerSecond: 300,
  eventToReceiptP50Ms: 50,
};

/** Post-session analysis's targets (issue 8). */
export const analysisTargets = {
  endToEndedP50Ms: 150,
  endToEndedP99Ms: 1_000,
  cpuMsPerAnalysis: 10,
  /** The transcript's budget plus the instructions around it. */
  promptInstructionsTokens: 1_000,
};

/** Reading a long history (issue 15): any page of a 10,000-message session, independent of its length. */
export const historyTargets = {
  pageP50Ms: 30,
};

/** Issue 10: the description is built once per process and served from memory; the playground stays light. */
export const developerPageTargets = {
  openApiP50Ms: 2,
  playgroundJsGzipBytes: 200_000,
};

/** Calls (issue 9): every 100 ms of a phone conversation is audible. */
export const voiceTargets = {
  turnOverheadP50Ms: 15,
  turnOverheadP99Ms: 40,
};

/** Other processes' CPU above which the report warns that its timings are not trustworthy. */
const busyMachineCores = 0.25;

export interface Check {
  figure: string;
  value: number;
  unit: string;
  target: number;
  /** How value must compare with target; `<` unless said otherwise. */
  comparison?: '<' | '<=' | '>=';
  pass: boolean;
}

export interface BenchResults {
  generatedAt: string;
  environment: { node: string; platform: string; arch: string; cpus: number; cpuModel: string; loadAverageAtStart: number[] };
  bundles: BundleResult[];
  initTime: InitTimeResult[];
  /** Where the CPU went while the init times were taken (Linux only). */
  initTimeCpu?: CpuShare;
  localRuntime: LocalRuntimeResult;
  turns: TurnBenchResult;
  webhooks: WebhookBenchResult;
  analysis: AnalysisBenchResult;
  messagePages: MessagePagesResult;
  sessionPages: SessionPagesResult;
  developerPages: DeveloperPagesResult;
  voice: VoiceBenchResult;
  usage: UsageBenchResult;
  knowledge: KnowledgeBenchResult;
  contactsImport: ContactsImportBenchResult;
  whatsapp: WhatsappBenchResult;
  knowledgeIngestion: KnowledgeIngestionBenchResult;
  campaigns: CampaignsBenchResult;
  observability: ObservabilityResults;
  /** `npm start` until /health answers, beside DynamoDB Local's own start. */
  startup: StartupResults;
  /** Units, counts and dollars per chat turn, webhook delivery and call minute (docs/deploy.md#cost). */
  cost: CostBenchResult;
  /** A turn on `npm start`'s whole runtime: requests, units, CPU until idle, latency, memory (docs/performance.md). */
  wholeTurn: WholeTurnResult;
  voiceMedia: VoiceMediaResult;
  replays: ReplaysResult;
  checks: Check[];
  pass: boolean;
  durationMs: number;
}

/** The conversation turns' figures against their targets (section 4; `npm run bench -- turns` alone). */
export function turnsChecks(turns: TurnBenchResult): Check[] {
  const below = (figure: string, value: number, unit: string, target: number): Check => ({ figure, value, unit, target, pass: value < target });
  const atMost = (figure: string, value: number, unit: string, target: number): Check => ({ figure, value, unit, target, comparison: '<=', pass: value <= target });
  return [
    below('turn overhead p50 (streamed)', round(turns.streamedOverheadMs.p50), 'ms', turnTargets.overheadP50Ms),
    below('turn overhead p99 (streamed)', round(turns.streamedOverheadMs.p99), 'ms', turnTargets.overheadP99Ms),
    below('turn overhead p50 (bound to an agent version)', round(turns.boundOverheadMs.p50), 'ms', turnTargets.overheadP50Ms),
    below('turn overhead p99 (bound to an agent version)', round(turns.boundOverheadMs.p99), 'ms', turnTargets.overheadP99Ms),
    below('turn overhead p50 (one tool call)', round(turns.toolTurnOverheadMs.p50), 'ms', turnTargets.overheadP50Ms),
    below('turn overhead p99 (one tool call)', round(turns.toolTurnOverheadMs.p99), 'ms', turnTargets.overheadP99Ms),
    {
      figure: `non-streamed turns/s at c=${turns.nonStreamed.concurrency}`,
      value: round(turns.nonStreamed.turnsPerSecond),
      unit: '/s',
      target: turnTargets.nonStreamedTurnsPerSecond,
      comparison: '>=',
      pass: turns.nonStreamed.turnsPerSecond >= turnTargets.nonStreamedTurnsPerSecond && turns.nonStreamed.errors === 0,
    },
    below('API CPU per turn', round(turns.apiCpuMsPerTurn), 'ms', turnTargets.cpuMsPerTurn),
    atMost('DynamoDB round trips before first delta', turns.dynamodb.roundTripsBeforeFirstDelta, '', turnTargets.roundTripsBeforeFirstDelta),
    below('API RSS after load', round(turns.apiRssMb), 'MB', turnTargets.rssMb),
  ];
}

/** Section 4's lines: the overheads of a turn, plain, bound to a version and with a tool call, and the load beside. */
export function turnsReport(turns: TurnBenchResult): string[] {
  const lines: string[] = [];
  lines.push('4. Conversation turns against a stub OpenAI-compatible model streaming 20 tokens with no delay (API alone in a child process; DynamoDB Local in memory)');
  lines.push(
    table(
      ['figure', 'p50', 'p99', 'max', 'turns'],
      [
        ['overhead ms, streamed turn (first delta minus the stub’s own first token)', ...fixed(turns.streamedOverheadMs), String(turns.streamedOverheadMs.turns)],
        ['overhead ms, the same in sessions bound to an agent version (MANUAL)', ...fixed(turns.boundOverheadMs), String(turns.boundOverheadMs.turns)],
        ['overhead ms, turn with one tool call (minus model and tool time)', ...fixed(turns.toolTurnOverheadMs), String(turns.toolTurnOverheadMs.turns)],
      ],
    ),
  );
  const load = turns.nonStreamed;
  lines.push(
    `   non-streamed: ${load.turnsPerSecond.toFixed(1)} turns/s at c=${load.concurrency} over ${load.durationMs / 1000} s (p50 ${load.p50Ms.toFixed(1)} ms, p99 ${load.p99Ms.toFixed(1)} ms, ${load.errors} errors)`,
    `   API process: ${turns.apiCpuMsPerTurn.toFixed(2)} ms CPU per turn, ${turns.apiRssMb.toFixed(0)} MB RSS after the load`,
    `   DynamoDB per streamed turn: ${turns.dynamodb.callsPerTurn.toFixed(1)} calls (${Object.entries(turns.dynamodb.operations).map(([name, count]) => `${name} ${count.toFixed(1)}`).join(', ')}), ` +
      `${turns.dynamodb.callsBeforeFirstDelta.toFixed(1)} before the first delta in ${turns.dynamodb.roundTripsBeforeFirstDelta} sequential round trips`,
  );
  if (turns.sdkFloor) {
    const floor = turns.sdkFloor;
    lines.push(
      `   SDK floor (a server making only those three calls with the AWS SDK): ${floor.requestsPerSecond.toFixed(1)} requests/s at c=${floor.concurrency}, ` +
        `${floor.cpuMsPerRequest.toFixed(2)} ms CPU per request, p50 ${floor.p50Ms.toFixed(1)} ms; the two reads before a first delta alone, one client: p50 ${floor.readsAloneP50Ms.toFixed(2)} ms`,
    );
  }
  return lines;
}

export function evaluate(
  bundles: readonly BundleResult[],
  initTime: readonly InitTimeResult[],
  localRuntime: LocalRuntimeResult,
  measuredConcurrency: number,
  turns: TurnBenchResult,
  webhooks: WebhookBenchResult,
  analysis: AnalysisBenchResult,
  messagePages: MessagePagesResult,
  sessionPages: SessionPagesResult,
  developerPages: DeveloperPagesResult,
  voice: VoiceBenchResult,
  usage: UsageBenchResult,
): Check[] {
  const below = (figure: string, value: number, unit: string, target: number): Check => ({ figure, value, unit, target, pass: value < target });
  const checks: Check[] = bundleChecks(bundles, initTime, lambdaFunctions);
  for (const run of localRuntime.runs) {
    const label = `${localRuntime.route} c=${run.concurrency}`;
    if (run.concurrency === measuredConcurrency) checks.push(below(`${label} p50`, round(run.result.latencyMs.p50), 'ms', targets.p50Ms));
    checks.push({ figure: `${label} errors`, value: run.result.errors, unit: '', target: targets.errors, pass: run.result.errors <= targets.errors });
  }
  const atMost = (figure: string, value: number, unit: string, target: number): Check => ({ figure, value, unit, target, comparison: '<=', pass: value <= target });
  checks.push(...turnsChecks(turns));
  checks.push({
    figure: `webhook deliveries/s (burst of ${webhooks.throughput.events})`,
    value: round(webhooks.throughput.deliveriesPerSecond),
    unit: '/s',
    target: webhookTargets.deliveriesPerSecond,
    comparison: '>=',
    pass: webhooks.throughput.deliveriesPerSecond >= webhookTargets.deliveriesPerSecond,
  });
  checks.push(below('webhook event-to-receipt p50', round(webhooks.eventToReceiptMs.p50), 'ms', webhookTargets.eventToReceiptP50Ms));
  checks.push(atMost('session end to session.ended p50', analysis.endToEndedMs.p50, 'ms', analysisTargets.endToEndedP50Ms));
  checks.push(atMost('session end to session.ended p99', analysis.endToEndedMs.p99, 'ms', analysisTargets.endToEndedP99Ms));
  checks.push(atMost('analysis CPU per analysis, model excluded', round(analysis.cpu.cpuMsPerAnalysis), 'ms', analysisTargets.cpuMsPerAnalysis));
  const { transcript } = analysis.cpu;
  checks.push(atMost(`analysis prompt of a ${transcript.messages}-message session`, transcript.promptTokens, 'tokens', transcript.budgetTokens + analysisTargets.promptInstructionsTokens));
  const history = `${messagePages.messages}-message history`;
  checks.push(atMost(`${history}: page 1 p50`, round(messagePages.pageOneMs.p50), 'ms', historyTargets.pageP50Ms));
  checks.push(atMost(`${history}: page ${messagePages.deepPage} p50`, round(messagePages.deepPageMs.p50), 'ms', historyTargets.pageP50Ms));
  const sessions = `${sessionPages.sessions} sessions`;
  checks.push(atMost(`${sessions}: page 1 p50`, round(sessionPages.pageOneMs.p50), 'ms', historyTargets.pageP50Ms));
  checks.push(atMost(`${sessions}: page ${sessionPages.deepPage} p50 (nextCursor)`, round(sessionPages.deepPageMs.p50), 'ms', historyTargets.pageP50Ms));
  checks.push(atMost('GET /openapi.json p50', round(developerPages.openApiMs.p50), 'ms', developerPageTargets.openApiP50Ms));
  checks.push(atMost('playground first-load JavaScript (gzip)', developerPages.playgroundJsGzipBytes, 'B', developerPageTargets.playgroundJsGzipBytes));
  checks.push(atMost('voice turn overhead p50 (prompt → first token, model excluded)', round(voice.turnOverheadMs.p50), 'ms', voiceTargets.turnOverheadP50Ms));
  checks.push(atMost('voice turn overhead p99', round(voice.turnOverheadMs.p99), 'ms', voiceTargets.turnOverheadP99Ms));
  const { concurrent } = voice;
  const wrong = concurrent.lostEnded + concurrent.duplicatedEnded + concurrent.misordered;
  checks.push({ figure: `${concurrent.calls} concurrent calls: lost or duplicated session.ended, misordered transcripts`, value: wrong, unit: '', target: 0, pass: wrong === 0 });
  checks.push(atMost('rate limiting: table writes per request at steady state', round(usage.rateLimit.writesPerRequest), '', usageTargets.writesPerRequest));
  checks.push(atMost('quota + rate checks of a turn: p50', round(usage.checksUs.p50 / 1000), 'ms', usageTargets.checksP50Ms));
  checks.push(atMost(`analytics overview over ${usage.analytics.sessions} sessions of aggregates: p50`, round(usage.analytics.overviewMs.p50), 'ms', usageTargets.analyticsP50Ms));
  return checks;
}

export function writeJson(file: string, results: object): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
}

export function formatReport(results: BenchResults): string {
  const lines: string[] = [];
  const { environment: env } = results;
  lines.push(
    `Bench ${results.generatedAt} — Node ${env.node}, ${env.platform}/${env.arch}, ${env.cpus} × ${env.cpuModel}, ` +
      `load average at start ${env.loadAverageAtStart.map((load) => load.toFixed(2)).join(' ')}`,
    '',
  );

  lines.push(...bundleReport(results.bundles, results.initTime, lambdaFunctions));
  if (results.initTimeCpu) lines.push(`   CPU meanwhile: ${cpuLine(results.initTimeCpu, 'bench process', 'import processes')}`);

  lines.push('', `3. Local runtime: ${results.localRuntime.route} (in-memory DynamoDB Local, load from a worker thread) — target p50 < ${targets.p50Ms} ms, 0 errors`);
  lines.push(
    table(
      ['concurrency', 'measured s', 'requests', 'req/s', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'errors'],
      results.localRuntime.runs.map(({ concurrency, result }) => [
        String(concurrency),
        (result.elapsedMs / 1000).toFixed(1),
        String(result.requests),
        result.requestsPerSecond.toFixed(0),
        result.latencyMs.p50.toFixed(2),
        result.latencyMs.p90.toFixed(2),
        result.latencyMs.p99.toFixed(2),
        result.latencyMs.max.toFixed(2),
        String(result.errors),
      ]),
    ),
  );
  for (const { concurrency, cpu, result } of results.localRuntime.runs) {
    if (!cpu) continue;
    const perRequest = (cores: number) => ((cores * 1000) / result.requestsPerSecond).toFixed(2);
    lines.push(
      `   c=${concurrency} CPU: ${cpuLine(cpu, 'server + load worker', 'DynamoDB Local')}; server event loop busy ` +
        `${(cpu.serverEventLoopUtilization * 100).toFixed(0)}%; CPU ms per request: ${perRequest(cpu.thisProcessCores)} here + ` +
        `${perRequest(cpu.childProcessCores)} DynamoDB Local`,
    );
  }
  for (const { concurrency, result } of results.localRuntime.runs) {
    for (const sample of result.errorSamples) lines.push(`   c=${concurrency} error: ${sample}`);
  }

  lines.push('', ...turnsReport(results.turns));

  const { throughput, eventToReceiptMs } = results.webhooks;
  lines.push('', '5. Webhook delivery on the local runtime (API, relay, router, SQS emulator and delivery function in a child process; receiver answering 204)');
  lines.push(
    `   throughput: ${throughput.events} events published at once, all received in ${throughput.durationMs} ms: ${throughput.deliveriesPerSecond.toFixed(0)} deliveries/s (${throughput.duplicates} duplicates)`,
    `   event to receipt (session createdAt → receiver), ${eventToReceiptMs.events} sessions: p50 ${eventToReceiptMs.p50} ms, p99 ${eventToReceiptMs.p99} ms, max ${eventToReceiptMs.max} ms`,
  );

  const { endToEndedMs, cpu } = results.analysis;
  lines.push('', '6. Post-session analysis on the local runtime (the same child process with the analysis dispatcher and function; built-in model)');
  lines.push(
    `   session end to session.ended (endedAt → receiver), ${endToEndedMs.sessions} sessions: p50 ${endToEndedMs.p50} ms, p99 ${endToEndedMs.p99} ms, max ${endToEndedMs.max} ms`,
    `   CPU per analysis of a 20-message session (${cpu.analyses} each, alone in a child process): model excluded ${cpu.cpuMsPerAnalysis.toFixed(2)} ms, ` +
      `with the built-in model ${cpu.cpuMsPerBuiltinAnalysis.toFixed(2)} ms; floor (one GetItem, nothing found) ${cpu.floorCpuMsPerInvocation.toFixed(2)} ms`,
    `   transcript budget: a ${cpu.transcript.messages}-message session gives a ${cpu.transcript.promptTokens}-token prompt (budget ${cpu.transcript.budgetTokens} for the transcript; ${cpu.transcript.omitted} messages left out)`,
  );

  const pages = results.messagePages;
  const ms = (figures: { p50: number; p99: number }) => `p50 ${figures.p50.toFixed(1)} ms, p99 ${figures.p99.toFixed(1)} ms`;
  lines.push('', `7. A ${pages.messages}-message history, ${pages.limit} messages a page, ${pages.requests} GETs each, one at a time (API in a child process)`);
  lines.push(
    `   page 1: ${ms(pages.pageOneMs)}; page ${pages.deepPage}: ${ms(pages.deepPageMs)}; floor (GET of the session: authentication and one GetItem): ${ms(pages.floorMs)}`,
    `   DynamoDB read units of one page's range Query: ${pages.readUnitsPerPage}; for context, reading the whole history once (what every page cost before): ${pages.wholeHistoryReadMs.toFixed(0)} ms`,
  );

  const list = results.sessionPages;
  lines.push('', `8. An organization with ${list.sessions} sessions (${list.openSessions} open), ${list.limit} a page, ${list.requests} GETs each, one at a time (API in a child process)`);
  lines.push(
    `   page 1: ${ms(list.pageOneMs)}; page ${list.deepPage} with the nextCursor of page ${list.deepPage - 1}: ${ms(list.deepPageMs)}; floor (GET of one session): ${ms(list.floorMs)}`,
    `   page ${list.deepPage} by number, no cursor (the pages before it are read and passed over): ${ms(list.deepPageByNumberMs)}; state=OPEN page 1: ${ms(list.openPageOneMs)}`,
    `   DynamoDB read units of one page (its Query and the counters' Query): ${list.readUnitsPerPage}; seeding took ${list.seedSeconds.toFixed(0)} s`,
  );

  const pagesBench = results.developerPages;
  lines.push('', `9. Developer pages on the local runtime (API in a child process), ${pagesBench.requests} GETs each, one at a time`);
  lines.push(
    `   GET /openapi.json (${kb(pagesBench.openApiBytes)}): first request of the process ${pagesBench.firstOpenApiMs.toFixed(1)} ms (builds it), then ${ms(pagesBench.openApiMs)}; floor (GET /health): ${ms(pagesBench.floorMs)}`,
    `   JavaScript of a first load, gzipped: /playground ${kb(pagesBench.playgroundJsGzipBytes)}; /docs (Scalar's bundle, for context) ${kb(pagesBench.docsJsGzipBytes)}`,
  );

  const { voice } = results;
  lines.push('', '10. Calls on the local runtime (API, WebSocket API, Twilio simulator and functions in one child process; built-in model)');
  lines.push(
    `   voice turn overhead (prompt sent → first text token at the callee, minus the model's first token), ${voice.turnOverheadMs.turns} turns: ` +
      `p50 ${voice.turnOverheadMs.p50.toFixed(1)} ms, p99 ${voice.turnOverheadMs.p99.toFixed(1)} ms; ` +
      `floor (the same WebSocket and management-API path, a handler that only answers): p50 ${voice.floorMs.p50.toFixed(1)} ms, p99 ${voice.floorMs.p99.toFixed(1)} ms`,
    `   ${voice.concurrent.calls} concurrent calls of ${voice.concurrent.turnsPerCall} turns in ${(voice.concurrent.durationMs / 1000).toFixed(1)} s: ` +
      `${voice.concurrent.sessionsEnded} session.ended once, ${voice.concurrent.lostEnded} lost, ${voice.concurrent.duplicatedEnded} duplicated, ${voice.concurrent.misordered} transcripts misordered; ` +
      `CPU per voice turn ${voice.concurrent.cpuMsPerTurn.toFixed(1)} ms (the whole process: platform, gateway and simulator)`,
  );

  const { rateLimit, checksUs, checksFloorUs, analytics } = results.usage;
  const us = (figures: { p50: number; p99: number }) => `p50 ${figures.p50.toFixed(1)} µs, p99 ${figures.p99.toFixed(1)} µs`;
  lines.push('', '11. Usage, quotas, rate limits and analytics (child process, DynamoDB Local)');
  lines.push(
    `   rate limiter, one process offering ${rateLimit.requestsPerSecond}/s for ${rateLimit.requests} requests under a limit of ${rateLimit.limit.requestsPerSecond}/s (burst ${rateLimit.limit.burst}): ` +
      `${rateLimit.admitted} admitted, ${rateLimit.writesPerRequest.toFixed(3)} table writes per request after the first second (floor: 0, no limiter)`,
    `   a turn's quota and rate checks, caches warm, ${checksUs.calls} calls: ${us(checksUs)}; floor (an empty async call, timed the same way): ${us(checksFloorUs)}`,
    `   analytics overview, 30 days of ${analytics.items} aggregate items standing for ${analytics.sessions} sessions, ${analytics.overviewMs.queries} queries: ` +
      `${ms(analytics.overviewMs)}; floor (the Query of the same items alone): ${ms(analytics.queryMs)}`,
  );

  lines.push(...knowledgeReport(results.knowledge), ...knowledgeIngestionReport(results.knowledgeIngestion));
  lines.push(...contactsImportReport(results.contactsImport));
  lines.push(...whatsappReport(results.whatsapp));
  lines.push(...campaignsReport(results.campaigns));
  lines.push(...observabilityReport(results.observability));
  lines.push(...startupReport(results.startup));
  lines.push(...costReport(results.cost));
  lines.push(...wholeTurnReport(results.wholeTurn));

  const contended = [results.initTimeCpu, ...results.localRuntime.runs.map((run) => run.cpu)].some(
    (cpu) => cpu !== undefined && cpu.otherProcessCores > busyMachineCores,
  );
  if (contended) {
    lines.push('', `   WARNING: other processes used more than ${busyMachineCores} cores during a measurement; timings are inflated. Re-run on an idle machine.`);
  }

  lines.push(...checksSummary(results.checks, results.durationMs));
  return lines.join('\n');
}

/** The checks' table and verdict, which end the report (of the whole bench or of one section). */
export function checksSummary(checks: readonly Check[], durationMs: number): string[] {
  const failed = checks.filter((check) => !check.pass);
  return [
    '',
    `Summary (${checks.length} checks, ${failed.length} failed, ${(durationMs / 1000).toFixed(1)} s)`,
    table(
      ['figure', 'value', 'target', 'result'],
      checks.map((check) => [
        check.figure,
        `${check.value}${check.unit ? ` ${check.unit}` : ''}`,
        check.target === 0 ? '= 0' : `${check.comparison ?? '<'} ${check.target}${check.unit ? ` ${check.unit}` : ''}`,
        verdict(check.pass),
      ]),
    ),
    '',
    failed.length === 0 ? 'PASS: every figure is within its target.' : `FAIL: ${failed.map((check) => check.figure).join('; ')}`,
  ];
}

const cpuLine = (cpu: CpuShare, self: string, children: string) =>
  `${self} ${cpu.thisProcessCores}, ${children} ${cpu.childProcessCores}, other processes ${cpu.otherProcessCores} (cores, of ${cpu.cores})`;
const round = (value: number) => Math.round(value * 100) / 100;
const fixed = (figures: { p50: number; p99: number; max: number }) => [figures.p50, figures.p99, figures.max].map((value) => value.toFixed(2));
const verdict = (pass: boolean) => (pass ? 'PASS' : 'FAIL');
const kb = (bytes: number, unit = true) => `${(bytes / 1000).toFixed(1)}${unit ? ' KB' : ''}`;

export function table(header: string[], rows: string[][]): string {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)));
  const numeric = header.map((_, column) => rows.length > 0 && rows.every((row) => /^-?[\d.]+$/.test(row[column] ?? '')));
  const line = (cells: string[], isHeader = false) =>
    '   ' +
    cells
      .map((cell, column) => (numeric[column] && !isHeader ? cell.padStart(widths[column] as number) : cell.padEnd(widths[column] as number)))
      .join('  ')
      .trimEnd();
  return [line(header, true), '   ' + widths.map((width) => '-'.repeat(width)).join('  '), ...rows.map((row) => line(row))].join('\n');
}
