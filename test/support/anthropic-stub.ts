/**
 * A local Anthropic Messages API server for tests, on 127.0.0.1 and a free port, no more forgiving than Anthropic's
 * (https://platform.claude.com/docs/en/api/messages, .../build-with-claude/streaming):
 *
 * - Only `POST /v1/messages`. `x-api-key` must be the stub's key (else 401 `authentication_error`),
 *   `anthropic-version` must be sent (else 400), the body must be JSON with `model`, `max_tokens` (a positive
 *   integer) and a non-empty `messages`, and no top-level field the API does not take ("Extra inputs are not
 *   permitted"). Roles are `user` and `assistant`; content is a string or blocks of the documented types; every
 *   `tool_use` of an assistant message is answered by a `tool_result` in the next message, and every `tool_result`
 *   answers a `tool_use` of the message before. Errors come in Anthropic's envelope
 *   `{"type":"error","error":{"type","message"}}`.
 * - `stream: true` answers `text/event-stream` with the documented flow: `message_start`, a `ping`, per content block
 *   `content_block_start`, its deltas (`text_delta`, or `input_json_delta` for `tool_use`) and
 *   `content_block_stop`, then `message_delta` (stop reason, output tokens) and `message_stop`. Without `stream`, one
 *   Message object.
 * - `answer(body, index)` scripts each request (0-based): text, a tool call, or `replay`, an SSE text sent as is
 *   (Anthropic's documented example, test/fixtures/anthropic/). By default the answer is `Hello from Claude`.
 *
 * Every accepted request is recorded (headers and parsed body).
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readBody, sendJson } from './openai-stub.ts';

export interface AnthropicAnswer {
  text?: string;
  toolUse?: { id: string; name: string; input: object };
  /** A whole event stream, sent verbatim. */
  replay?: string;
}

export interface AnthropicRequestBody {
  model: string;
  max_tokens: number;
  messages: { role: 'user' | 'assistant'; content: string | ContentBlock[] }[];
  system?: string | { type: 'text'; text: string }[];
  tools?: { name: string; description?: string; input_schema: object }[];
  stream?: boolean;
  [key: string]: unknown;
}

type ContentBlock = { type: string; id?: string; tool_use_id?: string; text?: string; [key: string]: unknown };

export interface AnthropicStub {
  /** For a key's `baseUrl`: `http://127.0.0.1:<port>/v1`. */
  baseUrl: string;
  requests: { headers: IncomingHttpHeaders; body: AnthropicRequestBody }[];
  close(): Promise<void>;
}

/** Top-level fields of a Messages request (the API refuses any other). */
const requestFields = new Set([
  'model', 'messages', 'max_tokens', 'system', 'stream', 'tools', 'tool_choice', 'temperature', 'top_p', 'top_k', 'stop_sequences', 'metadata',
  'thinking', 'service_tier', 'container', 'mcp_servers', 'context_management',
]);
const blockTypes = new Set(['text', 'image', 'document', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking', 'search_result']);

export async function startAnthropicStub(options: { apiKey: string; answer?: (body: AnthropicRequestBody, index: number) => AnthropicAnswer }): Promise<AnthropicStub> {
  const requests: AnthropicStub['requests'] = [];
  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) sendError(response, 500, 'api_error', String(error));
      else response.destroy();
    });
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const raw = await readBody(request);
    if (request.method !== 'POST' || request.url !== '/v1/messages') return sendError(response, 404, 'not_found_error', 'Not found');
    if (request.headers['x-api-key'] !== options.apiKey) return sendError(response, 401, 'authentication_error', 'invalid x-api-key');
    if (!request.headers['anthropic-version']) return sendError(response, 400, 'invalid_request_error', 'anthropic-version: header is required');
    let body: AnthropicRequestBody;
    try {
      body = JSON.parse(raw) as AnthropicRequestBody;
    } catch {
      return sendError(response, 400, 'invalid_request_error', 'The request body is not valid JSON.');
    }
    const problem = requestProblem(body);
    if (problem) return sendError(response, 400, 'invalid_request_error', problem);
    const index = requests.push({ headers: request.headers, body }) - 1;
    const answer = options.answer?.(body, index) ?? { text: 'Hello from Claude' };
    if (!body.stream) return sendJson(response, 200, message(body, answer));
    response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'request-id': `req_stub${index}` });
    response.end(answer.replay ?? events(body, answer));
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function requestProblem(body: AnthropicRequestBody): string | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'The request body must be an object.';
  const extra = Object.keys(body).find((field) => !requestFields.has(field));
  if (extra) return `${extra}: Extra inputs are not permitted`;
  if (typeof body.model !== 'string' || !body.model) return 'model: Field required';
  if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) return 'max_tokens: Field required (a positive integer)';
  if (!Array.isArray(body.messages) || body.messages.length === 0) return 'messages: at least one message is required';
  for (const [index, entry] of body.messages.entries()) {
    if (entry.role !== 'user' && entry.role !== 'assistant') return `messages.${index}.role: Input should be 'user' or 'assistant'`;
    const blocks = typeof entry.content === 'string' ? [] : entry.content;
    if (typeof entry.content !== 'string' && !Array.isArray(entry.content)) return `messages.${index}.content: Input should be a string or a list of blocks`;
    const unknown = blocks.find((block) => !blockTypes.has(block.type));
    if (unknown) return `messages.${index}.content: unknown block type ${unknown.type}`;
    const uses = blocks.filter((block) => block.type === 'tool_use').map((block) => block.id);
    const next = body.messages[index + 1];
    const answered = next && typeof next.content !== 'string' ? next.content.filter((block) => block.type === 'tool_result').map((block) => block.tool_use_id) : [];
    const unanswered = uses.find((id) => !answered.includes(id));
    if (entry.role === 'assistant' && unanswered) {
      return `messages.${index + 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${unanswered}`;
    }
    const previous = body.messages[index - 1];
    const asked = previous && typeof previous.content !== 'string' ? previous.content.filter((block) => block.type === 'tool_use').map((block) => block.id) : [];
    const stray = blocks.find((block) => block.type === 'tool_result' && !asked.includes(block.tool_use_id));
    if (stray) return `messages.${index}.content: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${stray.tool_use_id}`;
  }
  return undefined;
}

const messageId = (body: AnthropicRequestBody): string => `msg_stub${body.messages.length}`;

function message(body: AnthropicRequestBody, answer: AnthropicAnswer): object {
  return {
    id: messageId(body),
    type: 'message',
    role: 'assistant',
    model: body.model,
    content: [
      ...(answer.text ? [{ type: 'text', text: answer.text }] : []),
      ...(answer.toolUse ? [{ type: 'tool_use', ...answer.toolUse }] : []),
    ],
    stop_reason: answer.toolUse ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: inputTokens(body), output_tokens: outputTokens(answer) },
  };
}

function events(body: AnthropicRequestBody, answer: AnthropicAnswer): string {
  const out: string[] = [];
  const send = (type: string, data: object) => out.push(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  send('message_start', {
    message: { id: messageId(body), type: 'message', role: 'assistant', model: body.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: inputTokens(body), output_tokens: 1 } },
  });
  send('ping', {});
  let index = 0;
  if (answer.text) {
    send('content_block_start', { index, content_block: { type: 'text', text: '' } });
    for (const piece of answer.text.match(/\S+\s*/g) ?? []) send('content_block_delta', { index, delta: { type: 'text_delta', text: piece } });
    send('content_block_stop', { index });
    index += 1;
  }
  if (answer.toolUse) {
    const input = JSON.stringify(answer.toolUse.input);
    send('content_block_start', { index, content_block: { type: 'tool_use', id: answer.toolUse.id, name: answer.toolUse.name, input: {} } });
    send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: '' } });
    for (let at = 0; at < input.length; at += 8) send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: input.slice(at, at + 8) } });
    send('content_block_stop', { index });
  }
  send('message_delta', { delta: { stop_reason: answer.toolUse ? 'tool_use' : 'end_turn', stop_sequence: null }, usage: { output_tokens: outputTokens(answer) } });
  send('message_stop', {});
  return out.join('');
}

const inputTokens = (body: AnthropicRequestBody): number => JSON.stringify(body.messages).split(/\s+/).length;
const outputTokens = (answer: AnthropicAnswer): number => (answer.text?.split(/\s+/).length ?? 0) + (answer.toolUse ? 10 : 0);

function sendError(response: ServerResponse, status: number, type: string, message: string): void {
  sendJson(response, status, { type: 'error', error: { type, message } });
}
