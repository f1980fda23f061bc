/**
 * A local OpenAI-compatible Chat Completions server for tests and benchmarks, on 127.0.0.1 and a free port.
 *
 * `POST /chat/completions` (and `/v1/chat/completions`):
 * - `stream: true` answers real SSE: one `data: {chunk}\n\n` per delta, then (when the request asks for
 *   `stream_options.include_usage`, as the AI SDK's provider does with `includeUsage`) a usage chunk with empty
 *   `choices`, then `data: [DONE]\n\n`. Content is `tokens` deltas (`stubText(tokens)` is their concatenation),
 *   sent back to back unless `delayMs` is set.
 * - With `toolCall`, a request whose last message is not a tool result gets a tool call instead of content: one
 *   delta with the call's id and name, then its arguments in three pieces, then `finish_reason: "tool_calls"`.
 *   After a tool result, the answer is content again. A `toolCall` function sees the request body and may return
 *   undefined for content.
 * - `failAfterTokens: n` sends n content deltas and then fails as `failMode` says: `destroy` (default) cuts the
 *   connection, `malformed` sends a chunk that is not JSON and ends, `error-event` sends an OpenAI error object
 *   and ends; none of them sends a finish reason or `[DONE]`.
 * - `failStatus` answers every request with that HTTP status and an OpenAI error body, before any streaming.
 * - `stream: false` gets one `chat.completion` JSON object with the same content or tool call.
 * - `answer` scripts each request by its number (0-based): a status to fail it with, a delay, or the content of
 *   a non-streamed answer (e.g. JSON for structured output).
 *
 * `POST /embeddings` (and `/v1/embeddings`) answers OpenAI's embedding list: each input embedded by the built-in
 * embedder's hashing at the request's `dimensions` (or `embeddingDimensions`, which a test changes to play a
 * deployment whose model now answers another size), so that similar texts get near vectors as with a real model.
 *
 * `POST /audio/transcriptions` (and `/v1/audio/transcriptions`) takes OpenAI's multipart form: `file`, whose
 * filename's extension names the format (flac, mp3, mp4, mpeg, mpga, m4a, ogg, wav or webm; any other is a 400 as
 * OpenAI answers it), and `model`; it answers `{text}` with `transcript(bytes, filename)` (by default
 * `Transcribed <n> bytes.`). Its record's body is `{model, filename, bytes}`.
 * https://platform.openai.com/docs/api-reference/audio/createTranscription
 *
 * With `apiKey`, a request without `Authorization: Bearer <apiKey>` is answered 401 with OpenAI's `invalid_api_key`
 * error, as OpenAI answers it, and not recorded.
 *
 * Every request is recorded (path, headers, parsed body, timings as epoch milliseconds with sub-millisecond
 * precision) unless `record: false`, for long benchmarks.
 */
import type { TestApi } from './api.ts';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { embedText } from '../../shared/models/builtin-embedder.ts';

export interface StubToolCall {
  name: string;
  arguments: object;
}

export interface OpenAIStubOptions {
  /** Content deltas per answer; 20 by default. */
  tokens?: number;
  /** Milliseconds before each content delta after the first (and before the first when `firstTokenDelayMs` is unset); 0 by default. */
  delayMs?: number;
  /** Milliseconds before the first delta; `delayMs` by default. */
  firstTokenDelayMs?: number;
  /** Fail after this many content deltas (see `failMode`). */
  failAfterTokens?: number;
  failMode?: 'destroy' | 'malformed' | 'error-event';
  /** Answer every request with this HTTP status and an OpenAI error body. */
  failStatus?: number;
  toolCall?: StubToolCall | ((body: ChatRequestBody) => StubToolCall | undefined);
  /** Record requests (default true); turn off for long benchmarks. */
  record?: boolean;
  answer?: (body: ChatRequestBody, index: number) => StubAnswer | undefined;
  /** The size of embeddings when the request names no `dimensions`; 64 by default. Mutable while the stub runs. */
  embeddingDimensions?: number;
  /** The text of a transcription, by the audio's bytes and filename. */
  transcript?: (bytes: Uint8Array, filename: string) => string;
  /**
   * How long an idle connection stays open (Node's 5 s by default). A benchmark that pauses longer between turns on
   * a machine busy enough to delay timers may otherwise reuse a connection the stub is closing (ECONNRESET).
   */
  keepAliveTimeoutMs?: number;
  /** The only key accepted (`Authorization: Bearer <apiKey>`); any key when unset. */
  apiKey?: string;
}

export interface StubAnswer {
  /** Fail the request with this HTTP status and an OpenAI error body. */
  status?: number;
  /** Wait this long before answering. */
  delayMs?: number;
  /** The content of a non-streamed answer. */
  content?: string;
}

export interface ChatRequestBody {
  model: string;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  messages: { role: string; content?: unknown; tool_calls?: unknown[]; tool_call_id?: string }[];
  tools?: { type: 'function'; function: { name: string; description?: string; parameters?: unknown } }[];
  [key: string]: unknown;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: ChatRequestBody;
  /** Epoch milliseconds (fractional): request body received, first chunk written, response finished, client gone before the end (an aborted call). */
  timings: { received: number; firstChunk?: number; end?: number; clientGone?: number };
}

export interface OpenAIStub {
  /** Base URL for `OPENAI_COMPATIBLE_BASE_URL`, e.g. `http://127.0.0.1:40123/v1`. */
  baseUrl: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

/** The `i`-th content delta (0-based). */
export function stubToken(index: number): string {
  return index === 0 ? 'tok0' : ` tok${index}`;
}

/** The full content of an answer of `tokens` deltas. */
export function stubText(tokens = 20): string {
  return Array.from({ length: tokens }, (_, index) => stubToken(index)).join('');
}

const now = (): number => performance.timeOrigin + performance.now();
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export async function startOpenAIStub(options: OpenAIStubOptions = {}): Promise<OpenAIStub> {
  const requests: RecordedRequest[] = [];
  let completions = 0;
  let answered = 0;

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) sendJson(response, 500, openAIError(String(error), 'server_error'));
      else response.destroy();
    });
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = (request.url ?? '/').split('?')[0]!;
    if (options.apiKey !== undefined && request.headers.authorization !== `Bearer ${options.apiKey}`) {
      request.resume();
      sendJson(response, 401, { error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', code: 'invalid_api_key' } });
      return;
    }
    if (request.method === 'POST' && (path === '/embeddings' || path === '/v1/embeddings')) {
      await embeddings(request, response, path);
      return;
    }
    if (request.method === 'POST' && (path === '/audio/transcriptions' || path === '/v1/audio/transcriptions')) {
      await transcription(request, response, path);
      return;
    }
    if (request.method !== 'POST' || (path !== '/chat/completions' && path !== '/v1/chat/completions')) {
      sendJson(response, 404, openAIError(`No route for ${request.method} ${path}`, 'invalid_request_error'));
      return;
    }
    let body: ChatRequestBody;
    try {
      body = JSON.parse(await readBody(request)) as ChatRequestBody;
    } catch {
      sendJson(response, 400, openAIError('Request body is not JSON', 'invalid_request_error'));
      return;
    }
    const recorded: RecordedRequest = { method: request.method, path, headers: request.headers, body, timings: { received: now() } };
    if (options.record !== false) requests.push(recorded);
    response.on('close', () => {
      if (!response.writableFinished) recorded.timings.clientGone ??= now();
    });
    const scripted = options.answer?.(body, answered++);
    if (scripted?.delayMs) await sleep(scripted.delayMs);
    const failStatus = scripted?.status ?? options.failStatus;

    if (failStatus) {
      sendJson(response, failStatus, openAIError(`Stub failure ${failStatus}`, 'server_error'));
      recorded.timings.end = now();
      return;
    }

    const id = `chatcmpl-stub-${++completions}`;
    const created = Math.floor(Date.now() / 1000);
    const model = body.model;
    const toolCall = chooseToolCall(body);
    const tokens = options.tokens ?? 20;
    const toolCallId = `call_stub_${completions}`;
    const promptTokens = JSON.stringify(body.messages).length >> 2;
    const completionTokens = toolCall ? 4 : tokens;
    const usage = { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };

    if (!body.stream) {
      const message = toolCall
        ? {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: toolCallId, type: 'function', function: { name: toolCall.name, arguments: JSON.stringify(toolCall.arguments) } }],
          }
        : { role: 'assistant', content: scripted?.content ?? stubText(tokens) };
      const finishReason = toolCall ? 'tool_calls' : 'stop';
      recorded.timings.firstChunk = now();
      sendJson(response, 200, { id, object: 'chat.completion', created, model, choices: [{ index: 0, message, finish_reason: finishReason }], usage });
      recorded.timings.end = now();
      return;
    }

    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    response.flushHeaders();
    const chunk = (delta: object, finishReason: string | null = null) => ({
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      choices: [{ index: 0, delta, finish_reason: finishReason }],
    });
    const send = (data: object | string): void => {
      recorded.timings.firstChunk ??= now();
      response.write(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
    };
    const firstDelay = options.firstTokenDelayMs ?? options.delayMs ?? 0;
    const delay = options.delayMs ?? 0;

    if (toolCall) {
      if (firstDelay > 0) await sleep(firstDelay);
      const args = JSON.stringify(toolCall.arguments);
      const third = Math.ceil(args.length / 3);
      send(chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: toolCallId, type: 'function', function: { name: toolCall.name, arguments: '' } }] }));
      for (const piece of [args.slice(0, third), args.slice(third, 2 * third), args.slice(2 * third)]) {
        if (delay > 0) await sleep(delay);
        send(chunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] }));
      }
      send(chunk({}, 'tool_calls'));
    } else {
      for (let index = 0; index < tokens; index++) {
        if (options.failAfterTokens !== undefined && index === options.failAfterTokens) {
          fail(response, send);
          recorded.timings.end = now();
          return;
        }
        const wait = index === 0 ? firstDelay : delay;
        if (wait > 0) await sleep(wait);
        send(chunk(index === 0 ? { role: 'assistant', content: stubToken(index) } : { content: stubToken(index) }));
      }
      if (options.failAfterTokens !== undefined && options.failAfterTokens >= tokens) {
        fail(response, send);
        recorded.timings.end = now();
        return;
      }
      send(chunk({}, 'stop'));
    }
    if (body.stream_options?.include_usage) send({ id, object: 'chat.completion.chunk', created, model, choices: [], usage });
    send('[DONE]');
    response.end();
    recorded.timings.end = now();
  }

  async function embeddings(request: IncomingMessage, response: ServerResponse, path: string): Promise<void> {
    const body = JSON.parse(await readBody(request)) as { model: string; input: string[]; dimensions?: number; encoding_format?: string };
    if (options.record !== false) requests.push({ method: 'POST', path, headers: request.headers, body: body as unknown as ChatRequestBody, timings: { received: now() } });
    if (!Array.isArray(body.input) || body.encoding_format !== 'float') {
      sendJson(response, 400, openAIError('input must be an array of strings and encoding_format float', 'invalid_request_error'));
      return;
    }
    const dimensions = options.embeddingDimensions ?? body.dimensions ?? 64;
    const data = body.input.map((text, index) => ({ object: 'embedding', index, embedding: embedText(text, dimensions) }));
    const tokens = body.input.reduce((sum, text) => sum + text.split(/\s+/).length, 0);
    sendJson(response, 200, { object: 'list', data, model: body.model, usage: { prompt_tokens: tokens, total_tokens: tokens } });
  }

  async function transcription(request: IncomingMessage, response: ServerResponse, path: string): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    let form: FormData;
    try {
      form = await new Request('http://stub/', { method: 'POST', headers: { 'content-type': request.headers['content-type'] ?? '' }, body: Buffer.concat(chunks) }).formData();
    } catch {
      sendJson(response, 400, openAIError('Could not parse multipart form', 'invalid_request_error'));
      return;
    }
    const file = form.get('file');
    const model = form.get('model');
    if (!(file instanceof File) || typeof model !== 'string') {
      sendJson(response, 400, openAIError("'file' and 'model' are required", 'invalid_request_error'));
      return;
    }
    const bytes = new Uint8Array(await file.arrayBuffer());
    if (options.record !== false) requests.push({ method: 'POST', path, headers: request.headers, body: { model, filename: file.name, bytes: bytes.length } as unknown as ChatRequestBody, timings: { received: now() } });
    const extension = file.name.split('.').at(-1)?.toLowerCase() ?? '';
    if (!transcriptionFormats.includes(extension)) {
      sendJson(response, 400, openAIError(`Invalid file format. Supported formats: ${JSON.stringify(transcriptionFormats)}`, 'invalid_request_error'));
      return;
    }
    sendJson(response, 200, { text: options.transcript?.(bytes, file.name) ?? `Transcribed ${bytes.length} bytes.` });
  }

  function chooseToolCall(body: ChatRequestBody): StubToolCall | undefined {
    if (!options.toolCall) return undefined;
    if (body.messages.at(-1)?.role === 'tool') return undefined;
    return typeof options.toolCall === 'function' ? options.toolCall(body) : options.toolCall;
  }

  function fail(response: ServerResponse, send: (data: object | string) => void): void {
    switch (options.failMode ?? 'destroy') {
      case 'destroy':
        // Let what was written reach the client, then cut the connection without a proper end.
        response.write('', () => response.socket?.destroy());
        return;
      case 'malformed':
        send('{"id": "broken", "choices": [');
        response.end();
        return;
      case 'error-event':
        send(openAIError('The stub model failed mid-stream', 'server_error'));
        response.end();
        return;
    }
  }

  if (options.keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = options.keepAliveTimeoutMs;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

/** The audio formats OpenAI's transcription endpoint reads, by file extension. */
const transcriptionFormats = ['flac', 'mp3', 'mp4', 'mpeg', 'mpga', 'm4a', 'ogg', 'wav', 'webm'];

function openAIError(message: string, type: string): { error: { message: string; type: string; code: string | null } } {
  return { error: { message, type, code: null } };
}

/** Also the Anthropic stub's. */
export function sendJson(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

export async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** The catalog id of the stub's model (`OPENAI_COMPATIBLE_MODELS` of the API): what an agent names to answer through the stub. */
export async function stubModelId(api: TestApi, key: string): Promise<string> {
  const models = await api.request('GET', '/v1/chat/models?type=LLM', { key });
  return models.body.data.find((model: { provider: string }) => model.provider === 'openai-compatible').id;
}
