/**
 * `npm start`: the whole API on this machine. DynamoDB Local (persisted under DATA_DIR) and the Lambda handlers
 * behind a local HTTP server that speaks API Gateway's event format.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { eventRules, queueConsumers, scheduledFunctions, tableStreamConsumers } from '../../functions/consumers.ts';
import { routeGroups } from '../../functions/route-groups.ts';
import { orgIdPattern } from '../../shared/platform/http/principal.ts';
import { createPlanCatalog, initialPlanId } from '../../shared/billing/plans.ts';
import { campaignRuntime } from '../../shared/campaigns/campaign-runtime.ts';
import { ensureOrgWithKey, issueApiKey } from '../../shared/identity/api-keys.ts';
import { newId } from '../../shared/platform/clock.ts';
import { checkSettingsTogether } from '../../shared/platform/config.ts';
import { runtime } from '../../shared/runtime.ts';
import { announceRunningInstance, dataDirectory, dataDirPrefix, denyEgressTo, localUrl, startLocalDatabase, useLocalDatabase, useRunningDatabase } from './environment.ts';
import { startCampaignTicker } from './campaign-ticker.ts';
import { startEventRouter } from './event-router.ts';
import { startQueuePollers } from './queue-poller.ts';
import { startLocalQueues } from './queues.ts';
import { startLocalUploads } from './s3-upload-gateway.ts';
import { startScheduleTicker } from './schedule-ticker.ts';
import { createLocalServer } from './server.ts';
import { startStreamPoller } from './stream-poller.ts';
import { startStripeSimulator } from './stripe-simulator.ts';
import { startTtlSweeper } from './ttl-sweeper.ts';
import { acceptPhones, startLocalVoice } from './voice.ts';
import { startLocalWhatsapp } from './whatsapp-simulator.ts';
import { builtinSimulatorEngines } from './speech-simulator-server.ts';
import { holdPort } from './free-port.ts';
import { startSpeechSimulators } from './speech-simulators.ts';

const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOST ?? '127.0.0.1';
const dataDir = dataDirectory();
mkdirSync(dataDir, { recursive: true });
denyEgressTo(port);
// Held from the start: the database, the simulators and the media worker below listen on ports the system picks,
// one of which could otherwise be the API's.
const portHold = port === 0 ? undefined : await holdPort(port, host).catch((error: Error) => {
  console.error(`Cannot listen on ${host}:${port}: ${error.message}`);
  process.exit(1);
});

const presetEndpoint = process.env.DYNAMODB_ENDPOINT;
const database = await (presetEndpoint ? useRunningDatabase(presetEndpoint) : startLocalDatabase({ dataDir })).catch((error: Error) => {
  console.error(error.message);
  process.exit(1);
});
useLocalDatabase(database);
// Knowledge stores' vectors: the local flat index, in files beside the database (S3 Vectors on AWS).
process.env.KNOWLEDGE_VECTOR_DIR ??= join(dataDir, 'vectors');
// The campaign dispatcher ticks every 5 s here (every minute on AWS), so that a campaign started now starts soon.
process.env.CAMPAIGN_TICK_SECONDS ??= '5';
// Before the handlers read their configuration: the queues set SQS_ENDPOINT and the consumers' queue URLs.
const queues = await startLocalQueues({ consumers: queueConsumers, rules: eventRules, streamConsumers: tableStreamConsumers, routeGroups, dataDir: join(dataDir, 'queues') }).catch(
  async (error: Error) => {
    console.error(`Cannot start the local SQS emulator: ${error.message}`);
    await database.stop();
    process.exit(1);
  },
);
// Stripe's stand-in, before the handlers read their configuration: the Stripe adapter talks to it, and its
// signed events reach the webhook route.
const stripe = await startStripeSimulator({
  webhookUrl: `http://${host}:${port}/v1/billing/stripe/webhook`,
  webhookSecret: process.env.STRIPE_WEBHOOK_SECRET,
  secretKey: process.env.STRIPE_SECRET_KEY,
});
denyEgressTo(stripe.url);
const stripeSimulated = !process.env.STRIPE_API_URL;
process.env.STRIPE_API_URL ??= stripe.url;
process.env.STRIPE_WEBHOOK_SECRET ??= stripe.webhookSecret;
process.env.STRIPE_SECRET_KEY ??= stripe.secretKey;
// BILLING_PROVIDER=stripe against the simulator: its account gets each paid plan's prices (and meters), so that a
// checkout works at once; STRIPE_PRICES, when set, names prices of an account of your own.
if (stripeSimulated && process.env.BILLING_PROVIDER === 'stripe' && !process.env.STRIPE_PRICES) {
  const paidPlans = createPlanCatalog(process.env).list().filter((plan) => plan.id !== initialPlanId);
  process.env.STRIPE_PRICES = JSON.stringify(stripe.seedPlans(paidPlans));
}
// The speech providers' simulators (Deepgram, Cartesia, Rime, ElevenLabs, Polly), speaking and hearing with the
// built-in engines, also before the handlers read their configuration: they set the providers' addresses, keys and
// models, which the media worker (started with the calls) reads too.
const speech = await startSpeechSimulators(builtinSimulatorEngines(process.env.SPEECH_ENGINES_DIR));
// Calls: the Twilio simulator, the WebSocket API and the media worker, also before the handlers read their configuration.
const voice = await startLocalVoice(`http://${host}:${port}`, process.env, {
  simulatorPort: optionalPort(process.env.TWILIO_SIMULATOR_PORT),
  relayPort: optionalPort(process.env.VOICE_RELAY_PORT),
  mediaWorkerPort: optionalPort(process.env.MEDIA_WORKER_PORT),
  queues,
}).catch(async (error: Error) => {
  console.error(`Cannot start the Twilio simulator, the WebSocket API or the media worker: ${error.message}`);
  await queues.stop();
  await database.stop();
  process.exit(1);
});
// WhatsApp: the simulated Cloud API (customers' media copied to fauxqs's S3), before the handlers read their configuration.
const whatsapp = await startLocalWhatsapp(`http://${host}:${port}`, process.env, { port: optionalPort(process.env.WHATSAPP_SIMULATOR_PORT), queues });
// Document uploads: presigned POSTs to the local gateway, objects in fauxqs's S3, Object Created to the uploads queue.
const uploads = await startLocalUploads(queues);
// Each handler module loads on its group's first request, as a Lambda function's does: an idle runtime holds only
// what has been used.
const { server } = createLocalServer(routeGroups);
if (voice.simulator) acceptPhones(server, voice.simulator);
try {
  checkSettingsTogether(runtime().config);
  await bootstrapOrganization();
} catch (error) {
  console.error((error as Error).message);
  await database.stop();
  process.exit(1);
}
const sweeper = startTtlSweeper({
  client: runtime().documentClient,
  tableName: database.tableName,
  consumers: tableStreamConsumers,
  intervalMs: Number(process.env.TTL_SWEEP_INTERVAL_MS ?? 5_000),
});
const router = startEventRouter({ queues, rules: eventRules });
const schedules = startScheduleTicker({ functions: scheduledFunctions, region: queues.region, intervalMs: Number(process.env.SCHEDULE_TICK_MS) || undefined });
// Idle, the stream poller backs off to a poll a second; what writes to the table here (a request, a queue consumer)
// nudges it, so that a turn's events are still handed over at once.
const poller = startStreamPoller({
  endpoint: database.endpoint,
  tableName: database.tableName,
  consumers: tableStreamConsumers,
  idleDelayMs: 25,
  maxIdleDelayMs: 1_000,
  checkpointFile: join(dataDir, 'stream-checkpoint.json'),
});
server.on('request', (_request, response: ServerResponse) => response.once('close', poller.nudge));
// Execution environments start with a consumer's first batch and end after 30 s without one, as Lambda's do
// (later): a burst's environments do not keep their memory while the runtime idles.
const queuePollers = startQueuePollers({
  queues,
  consumers: queueConsumers,
  environments: 'on-first-message',
  environmentIdleEndMs: 30_000,
  afterInvocation: poller.nudge,
});
// A tick only while a campaign is scheduled or running (one Query), so that the dispatcher loads with the first one.
const campaignTicker = startCampaignTicker(queues, Number(process.env.CAMPAIGN_TICK_SECONDS), {
  due: async () => (await campaignRuntime().campaigns.active()).length > 0,
});
// Every shard open before the first request: on a first start on this data, what comes after is not skipped.
await poller.ready;
server.once('error', async (error) => {
  console.error(`Cannot listen on ${host}:${port}: ${error.message}`);
  await database.stop();
  process.exit(1);
});
const forgetInstance = announceRunningInstance(dataDir, {
  pid: process.pid,
  apiUrl: localUrl(host, port),
  dynamodbEndpoint: database.endpoint,
  tableName: database.tableName,
  twilioSimulator: voice.simulator?.baseUrl,
  whatsappSimulator: whatsapp?.baseUrl,
});
await portHold?.release();
server.listen(port, host, () => {
  console.log(`Agent platform API on http://${host}:${port} (data in ${dataDir})`);
  console.log(describeLoopbackEgress(process.env));
  console.log(
    voice.simulator
      ? `Twilio simulator on ${voice.simulator.baseUrl}, WebSocket API on ${voice.gateway.url}, media worker on ${voice.mediaWorker.url} (docs/voice.md#simulator)`
      : `Twilio at TWILIO_API_BASE_URL=${process.env.TWILIO_API_BASE_URL} (preset: no simulator), WebSocket API on ${voice.gateway.url}, reached as ${process.env.VOICE_RELAY_URL}, media worker on ${voice.mediaWorker.url}, reached as ${process.env.MEDIA_WORKER_URL}`,
  );
  console.log(
    whatsapp
      ? `WhatsApp simulator on ${whatsapp.baseUrl} (docs/whatsapp.md#simulator)`
      : `WhatsApp Graph API at WHATSAPP_GRAPH_API_URL=${process.env.WHATSAPP_GRAPH_API_URL} (preset: no simulator)`,
  );
  const simulatedSpeech = Object.entries(speech.started).map(([provider, simulator]) => `${provider} ${simulator.url}`);
  if (simulatedSpeech.length > 0) console.log(`Speech provider simulators: ${simulatedSpeech.join(', ')} (docs/voice.md#speech-provider-simulators)`);
  if (stripeSimulated) console.log(`Stripe simulator on ${stripe.url}, billing ${process.env.BILLING_PROVIDER ?? 'manual'} (docs/usage-and-billing.md#the-stripe-simulator)`);
});

/** How long requests under way may take to finish once a stop signal came. */
const shutdownGraceMs = 3_000;
let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  console.log(`${signal}: stopping`);
  forgetInstance();
  // No new connections from now on. Requests under way get a moment; then the streams still open (an event stream
  // lasts minutes) are cut, and their clients resume with Last-Event-ID against the next start.
  const serverClosed = new Promise((resolveClose) => server.close(resolveClose));
  server.closeIdleConnections();
  const cutOpenStreams = setTimeout(() => server.closeAllConnections(), shutdownGraceMs);
  sweeper.stop();
  schedules.stop();
  campaignTicker.stop();
  await poller.stop();
  await router.stop();
  await queuePollers.stop();
  await uploads.stop();
  await queues.stop();
  await stripe.stop();
  await voice.stop();
  await whatsapp?.stop();
  await speech.stop();
  await serverClosed;
  clearTimeout(cutOpenStreams);
  await database.stop();
  process.exit(0);
}
process.on('SIGINT', () => void shutdown('SIGINT'));
process.on('SIGTERM', () => void shutdown('SIGTERM'));

/**
 * INIT_ORG_ID with INIT_API_KEY: make sure that organization and key exist (every start, idempotent). Otherwise
 * the first start on a DATA_DIR creates an organization and prints a full-access key, once.
 */
async function bootstrapOrganization(): Promise<void> {
  const deps = runtime();
  const { INIT_ORG_ID: orgId, INIT_API_KEY: key } = process.env;
  if (orgId && key) {
    if (!orgIdPattern.test(orgId)) throw new Error('INIT_ORG_ID must be 1 to 128 letters, digits, dots, dashes or underscores.');
    if (key.length < 16 || key.length > 256) throw new Error('INIT_API_KEY must be 16 to 256 characters.');
    const { created } = await ensureOrgWithKey(deps, orgId, key);
    console.log(`Organization ${orgId}: INIT_API_KEY ${created ? 'registered' : 'already registered'}.`);
    console.log(commandHints(orgId));
    return;
  }
  const marker = join(dataDir, 'bootstrap.json');
  if (existsSync(marker)) {
    const { orgId: existing } = JSON.parse(readFileSync(marker, 'utf8')) as { orgId: string };
    console.log(`Organization ${existing}.`);
    console.log(commandHints(existing));
    return;
  }
  const newOrgId = newId();
  await deps.orgs.ensure({ id: newOrgId, name: 'Local organization', createdAt: deps.clock.now().toISOString() });
  const created = await issueApiKey(deps, newOrgId, { name: 'bootstrap', scopes: ['*'] });
  writeFileSync(marker, JSON.stringify({ orgId: newOrgId, keyId: created.id }));
  console.log(`Created organization ${newOrgId} with a full-access API key (shown once):\n\n  ${created.key}\n`);
  console.log(commandHints(newOrgId));
}

/**
 * The command lines that work with this instance, whole: its DATA_DIR in front when it is not the default (the
 * tools find this instance through it), and the key taken from the environment (npm echoes a command line).
 */
function commandHints(orgId: string): string {
  const prefix = dataDirPrefix(process.env);
  return [
    `More keys: ${prefix}npm run --silent keys -- create --org ${orgId} --name NAME --scopes '*'`,
    `Calls from the terminal: export AGENT_PLATFORM_API_KEY=<key>, then ${prefix}npm run call -- --from <phone number id> --to +15550100 --agent <agent id>`,
    `Call one of your numbers as a caller: ${prefix}npm run call -- --inbound <number, as +1…>`,
  ].join('\n');
}

function optionalPort(value: string | undefined): number | undefined {
  return value ? Number(value) : undefined;
}

/** What tools and webhooks may reach on this machine, said at start-up so that the opt-in is never a surprise. */
function describeLoopbackEgress(env: NodeJS.ProcessEnv): string {
  const own = `never this runtime's own ports (${env.EGRESS_DENIED_PORTS})`;
  if (!env.LOOPBACK_EGRESS_PORTS) {
    return `Tools and webhooks cannot reach this machine: set LOOPBACK_EGRESS_PORTS (e.g. 8080,9000-9099) to open loopback ports to them; ${own}.`;
  }
  return `Tools and webhooks may reach loopback ports ${env.LOOPBACK_EGRESS_PORTS} (LOOPBACK_EGRESS_PORTS); ${own}.`;
}
