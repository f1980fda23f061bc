/**
 * `npm run smoke -- --base-url <url> [--key <key>]`: the smoke test of a deployment (docs/deploy.md#smoke-test),
 * run against `npm start` by the tests the same way. It creates an agent on the deployment's default model, chats
 * with it (not streamed, then streamed, checking the SSE framing), waits for the session's event on the event
 * stream, creates and deletes a webhook, lists the phone numbers, then cleans up what it created, also after a
 * failure. One line per step; exit code 0 when every step passed, 1 when one failed, 2 for a usage error.
 * The key may come from SMOKE_API_KEY instead of `--key`, so that npm does not echo it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { ApiError, createApiClient, type ApiClient, type ErrorEnvelope } from '../clients/typescript/index.ts';

/** Reserved for documentation (RFC 2606) yet resolvable, as registration requires; it is never sent anything. */
const defaultWebhookUrl = 'https://example.com/agent-platform-smoke';

const usage = `Usage: npm run smoke -- --base-url <url> [--key <key>] [--webhook-url <https url>]
  --base-url     the API's base address (the stack's ApiBaseUrl, or http://127.0.0.1:3000)
  --key          an API key with agents:write, models:read, chat:write, webhooks:write and voice:read
                 (or SMOKE_API_KEY in the environment, which npm does not echo)
  --webhook-url  the URL of the webhook the smoke test registers and deletes at once (default ${defaultWebhookUrl})`;

/** Bounds each step: a cold start plus a turn of a real model fit well within it. */
const stepTimeoutMs = 60_000;

interface Options {
  baseUrl: string;
  key: string;
  webhookUrl: string;
}

function readOptions(argv: string[], env: NodeJS.ProcessEnv): Options | string {
  let values;
  try {
    ({ values } = parseArgs({ args: argv, options: { 'base-url': { type: 'string' }, key: { type: 'string' }, 'webhook-url': { type: 'string' } } }));
  } catch (error) {
    return (error as Error).message;
  }
  const baseUrl = values['base-url']?.replace(/\/+$/, '');
  const key = values.key ?? env.SMOKE_API_KEY;
  if (!baseUrl) return '--base-url is required.';
  if (!URL.canParse(baseUrl)) return `--base-url is not a URL: ${baseUrl}`;
  if (!key) return 'An API key is required: --key, or SMOKE_API_KEY in the environment.';
  return { baseUrl, key, webhookUrl: values['webhook-url'] ?? defaultWebhookUrl };
}

/** What the steps created, for the cleanup. */
interface Created {
  agentId?: string;
  sessionId?: string;
  webhookId?: string;
  eventStream?: EventStreamReader;
}

interface Step {
  name: string;
  /** Runs the step; the text it answers is printed after its time. */
  run(): Promise<string>;
}

class StepFailure extends Error {}

async function main(): Promise<number> {
  const options = readOptions(process.argv.slice(2), process.env);
  if (typeof options === 'string') {
    console.error(`${options}\n\n${usage}`);
    return 2;
  }
  const api = createApiClient({ baseUrl: options.baseUrl, apiKey: options.key, fetch: fetchWithinRateLimits });
  const created: Created = {};
  const steps = smokeSteps(api, options, created);
  console.log(`Smoke test of ${options.baseUrl}`);
  let failed = false;
  for (const step of steps) {
    if (failed) {
      report('skip', step.name);
      continue;
    }
    const started = performance.now();
    try {
      const detail = await withTimeout(step.run(), `${step.name} did not finish within ${stepTimeoutMs / 1000} s`);
      report('ok', step.name, performance.now() - started, detail);
    } catch (error) {
      failed = true;
      report('FAIL', step.name, performance.now() - started, describe(error));
    }
  }
  const cleanupFailed = await cleanUp(api, created);
  console.log(failed || cleanupFailed ? 'Smoke test FAILED' : `Smoke test passed: ${steps.length} steps`);
  return failed || cleanupFailed ? 1 : 0;
}

/** How many times a request refused with 429 is sent again. */
const rateLimitedRetries = 3;

/**
 * The organization's plan limits its requests (a free plan: 5 a second, 10 at once), which two smoke runs in a row
 * can reach; that is not a failure of the deployment, so a 429 is sent again after its Retry-After.
 */
async function fetchWithinRateLimits(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  const request = new Request(input, init);
  for (let attempt = 0; ; attempt += 1) {
    const response = await fetch(request.clone());
    if (response.status !== 429 || attempt === rateLimitedRetries) return response;
    await response.body?.cancel();
    await sleep(Number(response.headers.get('retry-after') ?? 1) * 1000);
  }
}

function smokeSteps(api: ApiClient, options: Options, created: Created): Step[] {
  let defaultModelId = '';
  return [
    {
      name: 'health',
      run: async () => {
        const { data, error } = await api.GET('/health');
        if (error || data?.status !== 'ok') fail(`GET /health answered ${JSON.stringify(data ?? error)}`);
        return '';
      },
    },
    {
      name: 'default model',
      run: async () => {
        const models = answer(await api.GET('/v1/chat/models', { params: { query: { type: 'LLM' } } }));
        const model = models.data.find((candidate) => candidate.isDefault);
        if (!model) fail('no LLM of the catalog is marked isDefault');
        defaultModelId = model.id;
        return `${model.provider}/${model.name}`;
      },
    },
    {
      name: 'create agent',
      run: async () => {
        const agent = answer(
          await api.POST('/v2/chat/agents', {
            body: { fullName: 'Smoke test', description: 'Created and deleted by npm run smoke', role: 'You answer in one short sentence.' },
          }),
        );
        created.agentId = agent.id;
        if (agent.modelId !== defaultModelId) fail(`the agent got model ${agent.modelId}, not the default ${defaultModelId}`);
        return agent.id;
      },
    },
    {
      name: 'open event stream',
      run: async () => {
        created.eventStream = await EventStreamReader.open(options, 'session.created');
        return '';
      },
    },
    {
      name: 'open session',
      run: async () => {
        const session = answer(await api.POST('/v1/chat/chat/sessions', { body: { agentId: created.agentId as string } }));
        created.sessionId = session.id;
        return session.id;
      },
    },
    {
      name: 'chat, not streamed',
      run: async () => {
        const reply = answer(
          await api.POST('/v1/chat/chat/sessions/{id}/messages', {
            params: { path: { id: created.sessionId as string } },
            body: { content: 'Hello! This is a smoke test.', stream: false },
          }),
        );
        if (!('assistantMessage' in reply)) fail('the answer has no assistantMessage');
        const assistant = reply.assistantMessage;
        if (assistant.metadata.status !== 'COMPLETED') fail(`the reply is ${assistant.metadata.status}: ${JSON.stringify(assistant.metadata.error)}`);
        if (!assistant.content) fail('the reply is empty');
        return quote(assistant.content);
      },
    },
    {
      name: 'chat, streamed',
      run: async () => {
        const response = await fetchWithinRateLimits(`${options.baseUrl}/v1/chat/chat/sessions/${created.sessionId}/messages`, {
          method: 'POST',
          headers: { 'x-api-key': options.key, 'content-type': 'application/json', accept: 'text/event-stream' },
          body: JSON.stringify({ content: 'And once more, streamed.' }),
        });
        if (response.status !== 200) fail(`answered ${response.status}: ${await response.text()}`);
        const contentType = response.headers.get('content-type') ?? '';
        if (!contentType.startsWith('text/event-stream')) fail(`content-type is ${contentType}, not text/event-stream`);
        const deltas = replyFrames(await response.text());
        return `${deltas.length} deltas, ${quote(deltas.join(''))}`;
      },
    },
    {
      name: 'event on the event stream',
      run: async () => {
        const event = await (created.eventStream as EventStreamReader).waitFor((candidate) => candidate.data.id === created.sessionId);
        return `${event.type} ${event.id}`;
      },
    },
    {
      name: 'create webhook',
      run: async () => {
        const webhook = answer(await api.POST('/v1/chat/webhooks', { body: { url: options.webhookUrl, events: ['subscription.updated'], description: 'npm run smoke' } }));
        created.webhookId = webhook.id;
        if (!webhook.secret) fail('the answer carries no signing secret');
        return webhook.id;
      },
    },
    {
      name: 'delete webhook',
      run: async () => {
        const id = created.webhookId as string;
        const { response } = await api.DELETE('/v1/chat/webhooks/{id}', { params: { path: { id } } });
        if (response.status !== 204) fail(`DELETE answered ${response.status}`);
        created.webhookId = undefined;
        const after = await api.GET('/v1/chat/webhooks/{id}', { params: { path: { id } } });
        if (after.response.status !== 404) fail(`GET after the delete answered ${after.response.status}`);
        return '';
      },
    },
    {
      name: 'list phone numbers',
      run: async () => {
        const numbers = answer(await api.GET('/api/v1/phone-numbers'));
        return `${numbers.items.length} number(s)`;
      },
    },
  ];
}

/**
 * Removes what the steps created, whatever failed: the event stream, the webhook, the session (closed: sessions are
 * history and have no delete), the agent. Each removal is a line; true when one of them failed.
 */
async function cleanUp(api: ApiClient, created: Created): Promise<boolean> {
  let failed = false;
  const attempt = async (name: string, remove: () => Promise<number>, expected: number[]) => {
    const started = performance.now();
    try {
      const status = await withTimeout(remove(), `did not finish within ${stepTimeoutMs / 1000} s`);
      if (!expected.includes(status)) throw new StepFailure(`answered ${status}`);
      report('ok', name, performance.now() - started);
    } catch (error) {
      failed = true;
      report('FAIL', name, performance.now() - started, describe(error));
    }
  };
  created.eventStream?.close();
  const { webhookId, sessionId, agentId } = created;
  if (webhookId) {
    await attempt('cleanup: delete webhook', async () => (await api.DELETE('/v1/chat/webhooks/{id}', { params: { path: { id: webhookId } } })).response.status, [204, 404]);
  }
  if (sessionId) {
    await attempt('cleanup: close session', async () => (await api.PATCH('/v1/chat/chat/sessions/{id}/close', { params: { path: { id: sessionId } } })).response.status, [200]);
  }
  if (agentId) {
    await attempt('cleanup: delete agent', async () => (await api.DELETE('/v1/chat/agents/{id}', { params: { path: { id: agentId } } })).response.status, [204, 404]);
  }
  return failed;
}

/**
 * The deltas of a streamed reply, checking its framing as docs/sessions.md states it: only `data: …` lines, each
 * event one line followed by a blank line, JSON deltas of one message id, no error event, `data: [DONE]` last.
 */
function replyFrames(body: string): string[] {
  if (!body.endsWith('\n\n')) fail(`the stream does not end with a blank line: ${quote(body.slice(-40))}`);
  const frames = body.slice(0, -2).split('\n\n');
  const data = frames.map((frame) => {
    if (!frame.startsWith('data: ') || frame.includes('\n')) fail(`a frame is not one data line: ${quote(frame)}`);
    return frame.slice('data: '.length);
  });
  if (data.pop() !== '[DONE]') fail('the stream does not end with data: [DONE]');
  if (data.length === 0) fail('the stream has no delta');
  const events = data.map((item) => JSON.parse(item) as { id?: string; delta?: string; error?: ErrorEnvelope['error'] });
  const error = events.find((event) => event.error);
  if (error?.error) fail(`the stream carries an error event: ${error.error.code}: ${error.error.message}`);
  const ids = new Set(events.map((event) => event.id));
  if (ids.size !== 1 || !/^msg_/.test(String(events[0]?.id))) fail(`the deltas name message ids ${JSON.stringify([...ids])}`);
  if (events.some((event) => typeof event.delta !== 'string')) fail('an event has no text delta');
  return events.map((event) => event.delta as string);
}

interface StreamedEvent {
  id: string;
  type: string;
  data: { id?: string };
}

/**
 * Reads `/v1/chat/events/stream` from the moment it is opened, checking each block's framing as
 * docs/event-stream.md states it (`retry:`, `id:`, `event:`, `data:` lines and `:` comments), and keeps its events.
 */
class EventStreamReader {
  private readonly events: StreamedEvent[] = [];
  private readonly waiters = new Set<() => void>();
  private failure: Error | undefined;
  private readonly abort: AbortController;

  private constructor(abort: AbortController) {
    this.abort = abort;
  }

  static async open(options: Options, types: string): Promise<EventStreamReader> {
    const abort = new AbortController();
    const response = await fetchWithinRateLimits(`${options.baseUrl}/v1/chat/events/stream?types=${types}`, {
      headers: { 'x-api-key': options.key, accept: 'text/event-stream' },
      signal: abort.signal,
    });
    if (response.status !== 200 || !response.body) fail(`answered ${response.status}: ${await response.text()}`);
    const contentType = response.headers.get('content-type') ?? '';
    if (!contentType.startsWith('text/event-stream')) fail(`content-type is ${contentType}, not text/event-stream`);
    const reader = new EventStreamReader(abort);
    void reader.read(response.body as ReadableStream<Uint8Array>);
    return reader;
  }

  /** The first event that `matches`, received since the stream opened. */
  async waitFor(matches: (event: StreamedEvent) => boolean): Promise<StreamedEvent> {
    for (;;) {
      const found = this.events.find(matches);
      if (found) return found;
      if (this.failure) throw this.failure;
      await new Promise<void>((wake) => this.waiters.add(wake));
    }
  }

  close(): void {
    this.abort.abort();
  }

  private async read(body: ReadableStream<Uint8Array>): Promise<void> {
    let buffered = '';
    try {
      for await (const text of body.pipeThrough(new TextDecoderStream())) {
        buffered += text;
        let end: number;
        while ((end = buffered.indexOf('\n\n')) >= 0) {
          this.take(buffered.slice(0, end));
          buffered = buffered.slice(end + 2);
        }
      }
      throw new StepFailure('the event stream ended');
    } catch (error) {
      this.failure = this.abort.signal.aborted ? new StepFailure('the event stream was closed') : (error as Error);
    } finally {
      this.wake();
    }
  }

  private take(block: string): void {
    const fields: Record<string, string> = {};
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) continue;
      const match = /^(retry|id|event|data): (.*)$/.exec(line);
      if (!match) fail(`a line of the event stream is malformed: ${quote(line)}`);
      if ((match[1] as string) in fields) fail(`a block of the event stream repeats ${match[1]}: ${quote(block)}`);
      fields[match[1] as string] = match[2] as string;
    }
    if (fields.data === undefined) return;
    if (!fields.id || !fields.event) fail(`an event lacks its id: or event: line: ${quote(block)}`);
    this.events.push({ id: fields.id, type: fields.event, data: JSON.parse(fields.data) as StreamedEvent['data'] });
    this.wake();
  }

  private wake(): void {
    for (const waiter of this.waiters) waiter();
    this.waiters.clear();
  }
}

/** The data of a typed client's answer, or a failure naming the error envelope. */
function answer<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.error !== undefined || result.data === undefined) {
    const envelope = result.error as ErrorEnvelope | undefined;
    if (envelope?.error) throw new ApiError(envelope);
    fail(`answered ${result.response.status}`);
  }
  return result.data;
}

function fail(message: string): never {
  throw new StepFailure(message);
}

function describe(error: unknown): string {
  if (error instanceof ApiError) return `${error.status} ${error.code}: ${error.message}`;
  if (error instanceof StepFailure) return error.message;
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return `${(error as Error).message ?? String(error)}${cause ? ` (${cause.code ?? cause.message})` : ''}`;
}

function withTimeout<T>(work: Promise<T>, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new StepFailure(message)), stepTimeoutMs)));
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

function quote(text: string): string {
  return JSON.stringify(text.length > 60 ? `${text.slice(0, 57)}...` : text);
}

function report(outcome: 'ok' | 'FAIL' | 'skip', step: string, ms?: number, detail = ''): void {
  const time = ms === undefined ? '' : `${Math.round(ms)} ms`;
  console.log(`${outcome.padEnd(4)}  ${step.padEnd(26)} ${time.padStart(8)}${detail ? `  ${detail}` : ''}`.trimEnd());
}

process.exitCode = await main();
