/**
 * `npm run bench`: Lambda bundle sizes and module-init time of each function, the latency of the local runtime,
 * conversation turns, webhook delivery, post-session analysis, long message histories and session lists, the
 * developer pages, calls, usage (rate limits, quota checks, analytics), knowledge retrieval, the contacts import, call campaigns
 * the cost of a chat turn, a webhook delivery and a call minute, counted from the requests they make, and the whole
 * cost of a turn on `npm start`'s runtime against its budget (bench/whole-turn.ts, docs/performance.md).
 * Prints a report and writes the same figures to bench/results/latest.json; exits 1 when a figure misses its target.
 * `npm run bench -- whole-turn` runs only that last section (bench/results/whole-turn.json); `npm run bench -- idle`
 * only what `npm start` costs with no traffic (bench/idle.ts, bench/results/idle.json); `npm run bench -- voice-media`
 * only calls through the media worker (bench/voice-media.ts, bench/results/voice-media.json); `npm run bench -- replays`
 * only replayed turns a second (bench/replays.ts, bench/results/replays.json); `npm run bench -- turns` only the
 * conversation turns of section 4, plain and bound to an agent version (bench/turns.ts, bench/results/turns.json).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { lambdaFunctions } from '../functions/lambda-functions.ts';
import { buildBundles, sdkFloor } from './bundles.ts';
import { cpuShare, cpuSnapshot } from './cpu.ts';
import { measureLocalRuntime, type LoadRun } from './http-load.ts';
import { measureSdkFloor } from './sdk-floor.ts';
import { measureTurns } from './turns.ts';
import { measureWebhooks } from './webhooks.ts';
import { measureAnalysis } from './analysis.ts';
import { measureMessagePages } from './message-pages.ts';
import { measureSessionPages } from './session-pages.ts';
import { measureDeveloperPages } from './developer-pages.ts';
import { measureVoice } from './voice.ts';
import { measureUsage } from './usage.ts';
import { knowledgeChecks, measureKnowledge } from './knowledge.ts';
import { contactsImportChecks, measureContactsImport } from './contacts-import.ts';
import { measureWhatsapp, whatsappChecks } from './whatsapp.ts';
import { knowledgeIngestionChecks, measureKnowledgeIngestion } from './knowledge-ingestion.ts';
import { campaignChecks, measureCampaigns } from './campaigns.ts';
import { measureCost } from './cost.ts';
import { ensureSecretsKeyFile, startLocalDatabase } from '../infra/local/environment.ts';
import { measureInitTimes, type InitVariant } from './init-time.ts';
import { measureObservability, observabilityChecks } from './observability.ts';
import { measureStartup, startupChecks } from './startup.ts';
import { checksSummary, evaluate, formatReport, turnsChecks, turnsReport, writeJson, type BenchResults, type Check } from './report.ts';
import { idleChecks, idleReport, measureIdle } from './idle.ts';
import { measureWholeTurn, wholeTurnChecks, wholeTurnReport } from './whole-turn.ts';
import { measureVoiceMedia, voiceMediaChecks, voiceMediaReport } from './voice-media.ts';
import { measureReplays, replaysChecks, replaysReport } from './replays.ts';

/** Every Lambda function the stack bundles, after the floor they are compared with. */
const functions = [sdkFloor, ...lambdaFunctions];
const resultsFile = resolve(import.meta.dirname, 'results', 'latest.json');
const initRuns = 10;
const initVariants: InitVariant[] = [
  { name: 'plain', execArgv: [] },
  // What the stack sets in NODE_OPTIONS: Node then reads the linked source map while loading the bundle.
  { name: 'source maps', execArgv: ['--enable-source-maps'] },
];
const measuredConcurrency = 16;
const loadRuns: LoadRun[] = [
  { concurrency: measuredConcurrency, warmupMs: 2_000, durationMs: 10_000 },
  // Context only: latency without queueing behind other requests.
  { concurrency: 1, warmupMs: 1_000, durationMs: 3_000 },
];

const log = (line: string) => console.log(`[bench] ${line}`);
const started = performance.now();
const loadAverageAtStart = loadavg();
// One secrets key for every process of the run (they inherit it), on its in-memory databases only: not `.data`'s.
const secretsKeyDir = mkdtempSync(join(tmpdir(), 'bench-secrets-'));
process.env.SECRETS_KEY_FILE = ensureSecretsKeyFile(join(secretsKeyDir, 'secrets.key'));
process.on('exit', () => rmSync(secretsKeyDir, { recursive: true, force: true }));
// The bench's organizations measure the API, not their plan: rate limits and quotas stay on (their checks are in
// every figure) with limits no section reaches. Section 8 measures the limiter's own figures.
process.env.PLANS ??= JSON.stringify({
  free: { name: 'Bench', quotas: { chat_messages: null, voice_seconds: null, knowledge_chunks: null }, concurrentCalls: 1_000, requestsPerSecond: 1_000_000, burst: 1_000_000 },
});

/** Sections a run can take alone (`npm run bench -- whole-turn`), their figures in bench/results/<name>.json. */
const sectionsAlone: Record<string, () => Promise<{ figures: object; checks: Check[]; report: string[] }>> = {
  turns: async () => {
    const turns = await measureConversationTurns();
    return { figures: { turns }, checks: turnsChecks(turns), report: turnsReport(turns) };
  },
  'whole-turn': async () => {
    const wholeTurn = await measureWholeTurn(log);
    return { figures: { wholeTurn }, checks: wholeTurnChecks(wholeTurn), report: wholeTurnReport(wholeTurn) };
  },
  idle: async () => {
    const idle = await measureIdle(log);
    return { figures: { idle }, checks: idleChecks(idle), report: idleReport(idle) };
  },
  'voice-media': async () => {
    const voiceMedia = await measureVoiceMedia(log);
    return { figures: { voiceMedia }, checks: voiceMediaChecks(voiceMedia), report: voiceMediaReport(voiceMedia) };
  },
  replays: async () => {
    const replays = await measureReplays(log);
    return { figures: { replays }, checks: replaysChecks(replays), report: replaysReport(replays) };
  },
};
const sectionAlone = process.argv.slice(2).find((argument) => argument in sectionsAlone);
const measureAlone = sectionAlone === undefined ? undefined : sectionsAlone[sectionAlone];
if (measureAlone) {
  const { figures, checks, report } = await measureAlone();
  const file = resolve(import.meta.dirname, 'results', `${sectionAlone}.json`);
  writeJson(file, { generatedAt: new Date().toISOString(), loadAverageAtStart, ...figures, checks });
  console.log(`\n${[...report, ...checksSummary(checks, performance.now() - started)].join('\n')}\n\nFigures written to ${file}`);
  process.exit(checks.every((check) => check.pass) ? 0 : 1);
}

const { bundles, initTime, initTimeCpu } = await bundlesAndInitTimes();
const observability = await measureObservability(log);
const startup = await measureStartup(log);
const localRuntime = await measureLocalRuntime(loadRuns, log);
const turns = await measureConversationTurns();
const webhooks = await withDatabase('webhook', 'bench-webhooks', (endpoint, tableName) => measureWebhooks(endpoint, tableName, log));
const analysis = await withDatabase('analysis', 'bench-analysis', (endpoint, tableName) => measureAnalysis(endpoint, tableName, log));
const messagePages = await withDatabase('message history', 'bench-message-pages', (endpoint, tableName) => {
  log('message history: a session of 10,000 messages, then GET of page 1 and page 50 (10 a page), one request at a time');
  return measureMessagePages(endpoint, tableName);
});

const sessionPages = await withDatabase('session list', 'bench-session-pages', (endpoint, tableName) => {
  log('session list: an organization with 100,000 sessions, then GET of page 1 and page 50 (10 a page), one request at a time');
  return measureSessionPages(endpoint, tableName);
});
const developerPages = await withDatabase('developer pages', 'bench-developer-pages', (endpoint, tableName) => {
  log('developer pages: GET /openapi.json and GET /health (the floor), one at a time');
  return measureDeveloperPages(endpoint, tableName);
});

const voice = await withDatabase('voice', 'bench-voice', (endpoint, tableName) => {
  log('voice: 10 calls of 20 turns one after another (overhead), the transport floor, then 50 concurrent calls of 10 turns');
  return measureVoice(endpoint, tableName);
});

const usage = await withDatabase('usage', 'bench-usage', (endpoint, tableName) => {
  log('usage: rate-limit writes per request at 200/s, the quota and rate checks of a turn, analytics over 100,000 sessions of aggregates');
  return measureUsage(endpoint, tableName);
});


log('knowledge: retrieval quality on the evaluation set, ingestion throughput, query latency on a 10,000-chunk store');
const knowledge = await measureKnowledge(log);
const knowledgeIngestion = await withDatabase('knowledge ingestion', 'bench-knowledge-ingestion', (endpoint, tableName) => {
  log('knowledge: a small document and a 100-page PDF upload, POST to UPSERTED on the local runtime');
  return measureKnowledgeIngestion(endpoint, tableName);
});

const contactsImport = await withDatabase('contacts import', 'bench-contacts-import', (endpoint, tableName) => {
  log('contacts import: a CSV of 10,000 new rows, the same file again (updates), and the BatchWrite floor of the same items');
  return measureContactsImport(endpoint, tableName);
});

const whatsapp = await withDatabase('WhatsApp', 'bench-whatsapp', (endpoint, tableName) => {
  log('WhatsApp: 10 customers of 20 messages one at a time (ack and reply), the bare route and the same turns through the chat API (floors)');
  return measureWhatsapp(endpoint, tableName);
});

const campaigns = await withDatabase('campaigns', 'bench-campaigns', (endpoint, tableName) => {
  log(`campaigns: ${process.env.BENCH_CAMPAIGN_CONTACTS ?? '2,000'} contacts at a cap of 100 on the simulator, the same calls without a campaign (floor), then a pause after 200 dials`);
  return measureCampaigns(endpoint, tableName);
});

const cost = await withDatabase('cost', 'bench-cost', (endpoint, tableName) => {
  log('cost: 20 streamed turns, the same with a webhook endpoint, a one-minute call and the SDK floor\'s turn, every request written down');
  return measureCost(endpoint, tableName);
});

log('whole turn: npm start\'s runtime, counted and measured, beside its floors');
const wholeTurn = await measureWholeTurn(log);
log('voice-media: calls through the media worker, with the built-in engines and with speech that takes no time');
const voiceMedia = await measureVoiceMedia(log);
log('replays: replayed turns a second through runReplay, beside the same turns without storage');
const replays = await measureReplays(log);

const checks = [...evaluate(bundles, initTime, localRuntime, measuredConcurrency, turns, webhooks, analysis, messagePages, sessionPages, developerPages, voice, usage), ...knowledgeChecks(knowledge), ...contactsImportChecks(contactsImport), ...whatsappChecks(whatsapp), ...knowledgeIngestionChecks(knowledgeIngestion), ...campaignChecks(campaigns), ...observabilityChecks(observability), ...startupChecks(startup), ...wholeTurnChecks(wholeTurn), ...voiceMediaChecks(voiceMedia), ...replaysChecks(replays)];
const results: BenchResults = {
  generatedAt: new Date().toISOString(),
  environment: {
    node: process.version,
    platform: process.platform,
    arch: process.arch,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
    loadAverageAtStart,
  },
  bundles: bundles.map(({ file: _file, ...bundle }) => ({ ...bundle, file: bundle.group + '/index.mjs' })),
  initTime,
  ...(initTimeCpu ? { initTimeCpu } : {}),
  localRuntime,
  turns,
  webhooks,
  analysis,
  messagePages,
  sessionPages,
  developerPages,
  voice,
  usage,
  knowledge,
  contactsImport,
  whatsapp,
  knowledgeIngestion,
  campaigns,
  observability,
  startup,
  cost,
  wholeTurn,
  voiceMedia,
  replays,
  checks,
  pass: checks.every((check) => check.pass),
  durationMs: performance.now() - started,
};
writeJson(resultsFile, results);
console.log(`\n${formatReport(results)}\n${[...voiceMediaReport(voiceMedia), ...replaysReport(replays)].join('\n')}\n\nFigures written to ${resultsFile}`);
if (!results.pass) process.exitCode = 1;

/** Bundles into a temporary directory, imports each bundle from there, and removes it. */
async function bundlesAndInitTimes() {
  const bundleDir = mkdtempSync(join(tmpdir(), 'bench-bundles-'));
  try {
    log(`bundling the SDK floor and ${lambdaFunctions.length} functions into ${bundleDir}`);
    const bundles = await buildBundles(functions, bundleDir);
    log(`importing each bundle ${initRuns} × ${initVariants.length} times in fresh processes`);
    const before = cpuSnapshot();
    const initTime = await measureInitTimes(bundles, initVariants, initRuns);
    return { bundles, initTime, initTimeCpu: cpuShare(before, cpuSnapshot()) };
  } finally {
    rmSync(bundleDir, { recursive: true, force: true });
  }
}

async function measureConversationTurns() {
  return withDatabase('turn', 'bench-turns', async (endpoint, tableName) => {
    const turns = await measureTurns(endpoint, tableName, log);
    log('the SDK floor: a server making only a turn\'s three DynamoDB calls, at the same concurrency');
    return { ...turns, sdkFloor: await measureSdkFloor(endpoint, tableName) };
  });
}

/** A fresh in-memory DynamoDB Local for one section's measurements, stopped once they are taken. */
async function withDatabase<T>(section: string, tableName: string, measure: (endpoint: string, tableName: string) => Promise<T>): Promise<T> {
  log(`starting DynamoDB Local (in memory) for the ${section} benchmarks`);
  const database = await startLocalDatabase({ tableName });
  try {
    return await measure(database.endpoint, database.tableName);
  } finally {
    await database.stop();
  }
}
