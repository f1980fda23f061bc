import type { SQSClientConfig } from '@aws-sdk/client-sqs';
import { expect, inject } from 'vitest';
import type { EventRule, QueueConsumer } from '../../functions/consumers.ts';
import type { Scope } from '../../shared/platform/http/scopes.ts';
import type { Config } from '../../shared/platform/config.ts';
import type { LocalQueues } from '../../infra/local/queues.ts';
import type { TwilioSimulator } from '../../infra/local/twilio-simulator.ts';
import type { LocalVoice } from '../../infra/local/voice.ts';
import type { WhatsappSimulator } from '../../infra/local/whatsapp-simulator.ts';
import type { LocalSpeech } from '../../infra/local/speech-simulators.ts';
import { assertDocumentedResponse } from './contract.ts';
import { closeServer, listenOnLoopback } from './loopback-server.ts';
import { testTableName } from './database.ts';

export interface ApiResponse<Body = any> {
  status: number;
  headers: Headers;
  body: Body;
  text: string;
}

export interface RequestOptions {
  key?: string;
  token?: string;
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, string>;
}

export interface TestApi {
  baseUrl: string;
  request<Body = any>(method: string, path: string, options?: RequestOptions): Promise<ApiResponse<Body>>;
  /** A fresh organization with one key holding `scopes` (all by default). */
  newOrg(scopes?: Scope[]): Promise<{ orgId: string; key: string }>;
  /** Another key of an existing organization. */
  newKey(orgId: string, scopes: Scope[]): Promise<string>;
  /** The local SQS side, when started with the `queues` option. */
  queues?: TestQueues;
  /** The Twilio simulator and the WebSocket API, when started with the `voice` option. */
  voice?: LocalVoice & { simulator: TwilioSimulator };
  /** The WhatsApp simulator, when started with the `whatsapp` option. */
  whatsapp?: WhatsappSimulator;
  /** The speech providers' simulators, when started with the `speech` option (docs/voice.md#speech-provider-simulators). */
  speech?: LocalSpeech;
  close(): Promise<void>;
}

/** How to run the local SQS emulator, event router and queue pollers (`docs/local-runtime.md#queues-and-event-rules`). */
export interface TestQueueOptions {
  /** Every queue's visibility timeout, instead of the declared one: keep it short to see failures come back. */
  visibilityTimeoutSeconds?: number;
  /** Pollers per consumer (default 4). */
  concurrency?: number;
  /** A consumer's function timeout by consumer name, instead of the declared one: to see it run against its deadline. */
  timeoutSeconds?: Readonly<Record<string, number>>;
  /** Instead of `queueConsumers` and `eventRules`, e.g. a fixture consumer. */
  consumers?: readonly QueueConsumer[];
  rules?: readonly EventRule[];
}

export interface TestQueues {
  /** Queue URLs by name, dead-letter queues (`<name>-dlq`, `<name>-dlq.fifo`) included. */
  urls: Readonly<Record<string, string>>;
  /** For an SQSClient of the test's own. */
  clientConfig: SQSClientConfig;
  /** Kills the consumer's execution environment mid-invocation; its next invocation starts a new one. */
  crash(consumerName: string): Promise<void>;
}

/**
 * Starts the local runtime in this test process, on a free port, against the run's DynamoDB Local. `env` is
 * applied before the handlers read their configuration, so each test file can configure its own API.
 */
export async function startApi(
  env: Record<string, string> = {},
  options: { ttlSweepIntervalMs?: number; streamPoller?: boolean; queues?: boolean | TestQueueOptions; voice?: boolean; campaignTicker?: boolean; whatsapp?: boolean; speech?: boolean } = {},
): Promise<TestApi> {
  Object.assign(process.env, env);
  // Most suites send bursts far beyond the free plan's rate, which is not what they test; the rate-limit suite turns it on.
  process.env.RATE_LIMITING ??= 'off';
  const [{ denyEgressTo, providerAddressVariables, useLocalDatabase }, { createLocalServer }, { routeGroups }, { runtime }, { issueApiKey }] = await Promise.all([
    import('../../infra/local/environment.ts'),
    import('../../infra/local/server.ts'),
    import('../../functions/route-groups.ts'),
    import('../../shared/runtime.ts'),
    import('../../shared/identity/api-keys.ts'),
  ]);
  // Tests run against the simulators whatever the shell names: a preset provider address would win over them.
  for (const name of providerAddressVariables) if (!(name in env)) delete process.env[name];
  // Tests talk to receivers and tool servers on random loopback ports; the platform's own ports stay denied.
  process.env.LOOPBACK_EGRESS_PORTS ??= '1024-65535';
  if (!process.env.SECRETS_KMS_KEY_ID) process.env.SECRETS_KEY_FILE ??= inject('secretsKeyFile');
  useLocalDatabase({ endpoint: inject('dynamodbEndpoint'), tableName: testTableName() });
  const { server } = createLocalServer(routeGroups);
  const port = await listenOnLoopback(server);
  const baseUrl = `http://127.0.0.1:${port}`;
  denyEgressTo(port);
  // Before the runtime reads its configuration: the queues set SQS_ENDPOINT and the consumers' queue URLs.
  // Calls (recordings and backstops when the queues run) and WhatsApp (media when the queues run): set up before the
  // consumers' environments start.
  let voice: (LocalVoice & { simulator: TwilioSimulator }) | undefined;
  let whatsapp: WhatsappSimulator | undefined;
  const startChannels = async (local?: LocalQueues) => {
    if (options.voice) {
      const localVoice = await import('../../infra/local/voice.ts');
      const started = await localVoice.startLocalVoice(baseUrl, process.env, { queues: local });
      const { simulator } = started;
      if (!simulator) throw new Error('TWILIO_API_BASE_URL was preset: the voice tests need the Twilio simulator.');
      voice = { ...started, simulator };
      // As npm start: the playground's test calls reach the simulator through the API's origin.
      localVoice.acceptPhones(server, simulator);
    }
    if (options.whatsapp) {
      whatsapp = await (await import('../../infra/local/whatsapp-simulator.ts')).startLocalWhatsapp(baseUrl, process.env, { queues: local });
      if (!whatsapp) throw new Error('WHATSAPP_GRAPH_API_URL was preset: the WhatsApp tests need the WhatsApp simulator.');
    }
  };
  // The speech simulators set the providers' addresses, keys and catalog models: before the runtime reads them.
  let speech: LocalSpeech | undefined;
  if (options.speech) {
    const [{ startSpeechSimulators }, { builtinSimulatorEngines }] = await Promise.all([import('../../infra/local/speech-simulators.ts'), import('../../infra/local/speech-simulator-server.ts')]);
    speech = await startSpeechSimulators(builtinSimulatorEngines(process.env.SPEECH_ENGINES_DIR));
  }
  const queues = options.queues ? await startQueues(options.queues === true ? {} : options.queues, startChannels, options.campaignTicker === true) : undefined;
  if (!queues) await startChannels();
  const deps = runtime();
  const sweeper =
    options.ttlSweepIntervalMs === undefined
      ? undefined
      : await startSweeper(deps.config, testTableName(), options.ttlSweepIntervalMs);
  const poller = options.streamPoller ? await startPoller(inject('dynamodbEndpoint'), testTableName(), queues !== undefined) : undefined;

  const newKey = async (orgId: string, scopes: Scope[]) => (await issueApiKey(deps, orgId, { name: 'test', scopes })).key;

  return {
    baseUrl,
    async request(method, path, options = {}) {
      const headers: Record<string, string> = { ...options.headers };
      if (options.key) headers['x-api-key'] = options.key;
      if (options.token) headers.authorization = `Bearer ${options.token}`;
      let body: string | undefined = options.rawBody;
      if (options.body !== undefined) {
        body = JSON.stringify(options.body);
        headers['content-type'] ??= 'application/json';
      }
      // Redirects are answers to check (a recording's 302), not to follow.
      const response = await fetch(baseUrl + path, { method, headers, body, redirect: 'manual' });
      const text = await response.text();
      assertDocumentedResponse({ method, url: path, status: response.status, headers: response.headers, text });
      let parsed: unknown = undefined;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined;
      }
      return { status: response.status, headers: response.headers, body: parsed as any, text };
    },
    async newOrg(scopes = ['*']) {
      const orgId = crypto.randomUUID();
      await deps.orgs.ensure({ id: orgId, name: 'test org', createdAt: new Date().toISOString() });
      return { orgId, key: await newKey(orgId, scopes) };
    },
    newKey,
    queues: queues?.handle,
    voice,
    whatsapp,
    speech,
    close: async () => {
      await voice?.stop();
      await whatsapp?.stop();
      await speech?.stop();
      await poller?.stop();
      await queues?.stop();
      sweeper?.stop();
      await closeServer(server);
    },
  };
}

/** The local runtime's TTL sweeper, for tests of what happens when DynamoDB deletes expired items. */
async function startSweeper(config: Config, tableName: string, intervalMs: number) {
  const [{ startTtlSweeper }, { tableStreamConsumers }, { createDocumentClient }] = await Promise.all([
    import('../../infra/local/ttl-sweeper.ts'),
    import('../../functions/consumers.ts'),
    import('../../shared/platform/store/dynamo.ts'),
  ]);
  return startTtlSweeper({ client: createDocumentClient(config), tableName, consumers: tableStreamConsumers, intervalMs });
}

/**
 * The local runtime's stream poller: hands new items to the stream consumers, as Lambda would. Without queues,
 * the consumers that send to a queue (analysis jobs) are left out: their sends could only fail.
 */
async function startPoller(endpoint: string, tableName: string, withQueues: boolean) {
  const [{ startStreamPoller }, { tableStreamConsumers }] = await Promise.all([
    import('../../infra/local/stream-poller.ts'),
    import('../../functions/consumers.ts'),
  ]);
  const consumers = tableStreamConsumers.filter((consumer) => withQueues || !consumer.queueUrls);
  const poller = startStreamPoller({ endpoint, tableName, consumers, idleDelayMs: 10 });
  // Every shard open before the test writes: the worker's table holds the records of its earlier files, and
  // whatever is written while the poller skips past them would be skipped with them.
  await poller.ready;
  return poller;
}

/** Queues, router and pollers as `npm start` runs them, with the consumers and rules given (the declared ones by default). */
async function startQueues(
  options: TestQueueOptions,
  beforeConsumers: (queues: LocalQueues) => Promise<void>,
  campaignTicker: boolean,
): Promise<{ handle: TestQueues; stop(): Promise<void> }> {
  const [{ startLocalQueues }, { startEventRouter }, { startQueuePollers }, { queueConsumers, eventRules, tableStreamConsumers }, { startCampaignTicker }, { routeGroups }] = await Promise.all([
    import('../../infra/local/queues.ts'),
    import('../../infra/local/event-router.ts'),
    import('../../infra/local/queue-poller.ts'),
    import('../../functions/consumers.ts'),
    import('../../infra/local/campaign-ticker.ts'),
    import('../../functions/route-groups.ts'),
  ]);
  const platform = options.consumers === undefined;
  const consumers = (options.consumers ?? queueConsumers).map((consumer) => {
    const timeoutSeconds = options.timeoutSeconds?.[consumer.name];
    return timeoutSeconds === undefined ? consumer : { ...consumer, timeoutSeconds };
  });
  const rules = options.rules ?? eventRules;
  // A fixture's consumers stand alone: the route groups' queues only come with the platform's consumers.
  const queues = await startLocalQueues({
    consumers,
    rules,
    streamConsumers: tableStreamConsumers,
    ...(platform ? { routeGroups } : {}),
    visibilityTimeoutSeconds: options.visibilityTimeoutSeconds,
  });
  const uploads = platform ? await (await import('../../infra/local/s3-upload-gateway.ts')).startLocalUploads(queues) : undefined;
  await beforeConsumers(queues);
  const router = startEventRouter({ queues, rules });
  const pollers = startQueuePollers({ queues, consumers, concurrency: options.concurrency });
  // The dispatcher's tick, as `npm start` runs it, every CAMPAIGN_TICK_SECONDS (which the suite sets).
  const ticker = campaignTicker ? startCampaignTicker(queues, Number(process.env.CAMPAIGN_TICK_SECONDS ?? 1)) : undefined;
  return {
    handle: { urls: queues.urls, clientConfig: queues.clientConfig, crash: pollers.crash },
    stop: async () => {
      ticker?.stop();
      await router.stop();
      await pollers.stop();
      await uploads?.stop();
      await queues.stop();
    },
  };
}

/** Asserts an error envelope: status, stable code, and (when given) that the details name the field. */
export function expectError(response: ApiResponse, status: number, code: string, field?: string): void {
  expect(response.status, response.text).toBe(status);
  expect(response.body.error).toMatchObject({ code, status });
  if (field !== undefined) expect(response.body.error.details.map((detail: { field: string }) => detail.field)).toContain(field);
}
