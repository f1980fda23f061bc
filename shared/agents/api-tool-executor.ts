/**
 * Runs one `API_TOOL` call: the HTTP request its definition describes, through the egress guard, turned into a result
 * for the model. Never throws for the failures a tool can have (HTTP errors, timeouts, blocked or unreachable hosts,
 * binary or oversized bodies): they come back as an `ERROR` execution the model can read.
 *
 * The request:
 * - URL: `{{name}}` placeholders filled from the arguments merged over the session variables (arguments win). Values
 *   in the path, query, fragment and user info are percent-encoded with `encodeURIComponent`, so they can never
 *   change the scheme, host, port or path structure.
 *   Arguments that no placeholder uses are NOT appended to the query string (for any method); for non-GET methods
 *   they travel in the JSON body anyway, for GET the tool's URL must name every parameter it wants. A value that
 *   would make a `.` or `..` path segment (which URL parsing resolves, climbing the path) is refused, and values in
 *   the host are limited to host-name characters (see `buildUrl`).
 * - Headers: the tool's headers with placeholders filled the same way but not encoded: CR, LF and other control
 *   characters are stripped (header injection guard); non-ASCII text is sent as its UTF-8 bytes. Framing and
 *   hop-by-hop headers (`host`, `content-length`, `transfer-encoding`, `connection`, `keep-alive`, `upgrade`, `te`,
 *   `trailer`, `expect`, `proxy-connection`) are computed here and never taken from the tool. `Idempotency-Key` is
 *   always the tool call's id (replacing any the tool sets). `user-agent` and `accept` have defaults the tool may
 *   override; so has `content-type` (default `application/json`) for methods with a body.
 * - Body: the arguments as JSON for every method but GET and HEAD.
 * - No redirects are followed: a 3xx is an `ERROR` that names the `Location`.
 *
 * The result: a 2xx body as text when it is textual (JSON kept verbatim); a binary body (image/*, audio/*, video/*,
 * font/*, application/octet-stream and other binary types, or bytes that are not valid text in their charset) as a
 * description `[binary response: image/png, 1234 bytes]`; an empty body as `[empty response: HTTP 204]`; a body cut
 * at `maxResponseBytes` ends with `…[truncated at N bytes]`. A non-2xx is `ERROR` with `HTTP <status>: <first 2 KB>`.
 */
import * as http from 'node:http';
import {
  bareHostname,
  EgressBlockedError,
  guardedRequest,
  OutboundNetworkError,
  OutboundTimeoutError,
  type EgressPolicy,
  type GuardedResponse,
} from '../platform/net/egress-guard.ts';
import { encodeUrlValue, fillPlaceholders, placeholderPattern, sanitizeHeaderValue } from './placeholders.ts';

export interface ApiToolDefinition {
  name: string;
  apiTool: { url: string; method: string; headers: Record<string, string> };
}

export interface ApiToolContext {
  /** The model's id for this call; sent as `Idempotency-Key`. */
  toolCallId: string;
  sessionVariables: Record<string, unknown>;
  signal?: AbortSignal;
}

export interface ApiToolOptions {
  timeoutMs: number;
  maxResponseBytes: number;
  policy: EgressPolicy;
}

export type ToolExecutionErrorCode =
  | 'TOOL_HTTP_ERROR'
  | 'TOOL_TIMEOUT'
  | 'EGRESS_BLOCKED'
  | 'TOOL_NETWORK_ERROR'
  | 'TOOL_INVALID_URL'
  | 'TOOL_INVALID_REQUEST'
  | 'TOOL_ABORTED';

export interface ToolExecution {
  status: 'SUCCESS' | 'ERROR';
  /** What goes back to the model. */
  result: string;
  httpStatus?: number;
  /** Wall time of the whole execution, in milliseconds (two decimals). */
  durationMs: number;
  error?: { code: ToolExecutionErrorCode | (string & {}); message: string };
}

export const toolUserAgent = 'agent-platform-tool/1';
const defaultAccept = 'application/json, text/plain;q=0.9, */*;q=0.5';
/** Bytes of an error body quoted back to the model. */
const errorBodyBytes = 2048;

/** Headers whose values we compute (framing, hop-by-hop) or own (`idempotency-key`); a tool's own are dropped. */
const controlledHeaders = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'proxy-connection',
  'idempotency-key',
]);

function elapsed(start: number): number {
  return Math.round((performance.now() - start) * 100) / 100;
}

/** A header value node:http accepts as is: controls stripped, non-ASCII as its UTF-8 bytes (latin1 code units). */
function wireHeaderValue(value: string): string {
  const clean = sanitizeHeaderValue(value);
  return /^[\x00-\x7f]*$/.test(clean) ? clean : Buffer.from(clean, 'utf8').toString('latin1');
}

export async function executeApiTool(
  tool: ApiToolDefinition,
  args: Record<string, unknown>,
  context: ApiToolContext,
  options: ApiToolOptions,
): Promise<ToolExecution> {
  const start = performance.now();
  const failure = (code: ToolExecutionErrorCode, message: string, httpStatus?: number) => failedExecution(start, code, message, httpStatus);

  const values: Record<string, unknown> = { ...context.sessionVariables, ...args };
  const method = tool.apiTool.method.toUpperCase();

  const built = buildUrl(tool.apiTool.url, values);
  if (typeof built === 'string') return failure('TOOL_INVALID_URL', `The URL of tool ${tool.name} ${built}.`);
  const url = built;

  const headers: Record<string, string> = { 'user-agent': toolUserAgent, accept: defaultAccept };
  const setHeader = (name: string, value: string): void => {
    for (const existing of Object.keys(headers)) if (existing.toLowerCase() === name.toLowerCase()) delete headers[existing];
    headers[name] = value;
  };
  let body: string | undefined;
  if (method !== 'GET' && method !== 'HEAD') {
    try {
      body = JSON.stringify(args) ?? '{}';
    } catch {
      return failure('TOOL_INVALID_REQUEST', `The arguments of tool ${tool.name} cannot be sent as JSON.`);
    }
    headers['content-type'] = 'application/json';
  }
  for (const [name, template] of Object.entries(tool.apiTool.headers)) {
    if (controlledHeaders.has(name.toLowerCase())) continue;
    setHeader(name, wireHeaderValue(fillPlaceholders(template, values, sanitizeHeaderValue)));
  }
  setHeader('Idempotency-Key', wireHeaderValue(context.toolCallId));
  if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
  return sendToolRequest(url, { method, headers, ...(body === undefined ? {} : { body }) }, context, options, start);
}

/**
 * Sends a tool's request through the egress guard and turns whatever happens into what the model gets back: the
 * response text (binary bodies described, long ones truncated), or an error result. Never throws.
 */
export async function sendToolRequest(
  url: URL,
  request: { method: string; headers: Record<string, string>; body?: string },
  context: Pick<ApiToolContext, 'signal'>,
  options: ApiToolOptions,
  start = performance.now(),
): Promise<ToolExecution> {
  const hostname = bareHostname(url);
  const failure = (code: ToolExecutionErrorCode, message: string, httpStatus?: number) => failedExecution(start, code, message, httpStatus);
  let response: GuardedResponse;
  try {
    response = await guardedRequest(
      url,
      {
        ...request,
        timeoutMs: options.timeoutMs,
        maxResponseBytes: options.maxResponseBytes,
        ...(context.signal ? { signal: context.signal } : {}),
      },
      options.policy,
    );
  } catch (error) {
    if (error instanceof EgressBlockedError) {
      return failure('EGRESS_BLOCKED', `Request blocked: the address of ${hostname} is not allowed for outbound requests.`);
    }
    if (error instanceof OutboundTimeoutError) {
      return failure('TOOL_TIMEOUT', `The request to ${hostname} timed out after ${options.timeoutMs} ms.`);
    }
    if (context.signal?.aborted) return failure('TOOL_ABORTED', `The request to ${hostname} was cancelled.`);
    if (error instanceof OutboundNetworkError) {
      const invalidRequest = error.reason === 'ERR_INVALID_CHAR' || error.reason === 'ERR_INVALID_HTTP_TOKEN';
      return failure(invalidRequest ? 'TOOL_INVALID_REQUEST' : 'TOOL_NETWORK_ERROR', error.message);
    }
    return failure('TOOL_NETWORK_ERROR', `Could not reach ${hostname}: unexpected error.`);
  }

  const content = describeBody(response, options.maxResponseBytes);
  if (response.status >= 200 && response.status < 300) {
    const result = content.kind === 'empty' ? `[empty response: HTTP ${response.status}]` : content.kind === 'binary' ? content.description : content.text;
    return { status: 'SUCCESS', result, httpStatus: response.status, durationMs: elapsed(start) };
  }

  let detail: string;
  if (content.kind === 'empty') detail = http.STATUS_CODES[response.status] ?? 'no body';
  else if (content.kind === 'binary') detail = content.description;
  else detail = firstBytes(content.text, errorBodyBytes);
  const location = response.headers.location;
  if (response.status >= 300 && response.status < 400 && location) detail += ` (redirect to ${location} not followed)`;
  return failure('TOOL_HTTP_ERROR', `HTTP ${response.status}: ${detail}`, response.status);
}

/** An error result for the model, timed from `start`. */
function failedExecution(start: number, code: ToolExecutionErrorCode, message: string, httpStatus?: number): ToolExecution {
  return { status: 'ERROR', result: message, ...(httpStatus === undefined ? {} : { httpStatus }), durationMs: elapsed(start), error: { code, message } };
}

/** Scheme (with the slashes or backslashes after it), authority (up to the first / \\ ? #), and the rest. */
const urlParts = /^([A-Za-z][A-Za-z0-9+.-]*:[/\\]*)([^/\\?#]*)([\s\S]*)$/;
/** What a placeholder in the host may hold: a DNS name or IPv4 address, or a part of one. */
const hostValue = /^[A-Za-z0-9._-]*$/;

/**
 * The request URL, or why there is none (completing "The URL of tool X …"). Placeholders are filled part by part:
 * - in the host, a value must be made of letters, digits, `.`, `-` and `_` (no port, path, `@` or brackets), the host
 *   must not end up empty and no placeholder may stay unfilled there (it would be looked up in DNS);
 * - in the user info and everything after the host, values are percent-encoded (`encodeURIComponent`);
 * - a value that would make a `.` or `..` path segment (also `%2e` forms), which URL parsing resolves and so lets an
 *   argument climb out of the tool's path (`/users/{{id}}/profile` with id `..`), is refused. Encoded values hold no
 *   `/`, backslash, `?` or `#`, so the segments of the template and of the filled text line up one to one.
 */
function buildUrl(template: string, values: Record<string, unknown>): URL | string {
  const parts = urlParts.exec(template.trim());
  if (!parts) return 'is not valid';
  const [, scheme = '', authority = '', rest = ''] = parts;
  const at = authority.lastIndexOf('@');
  const userInfo = fillPlaceholders(authority.slice(0, at + 1), values, encodeUrlValue);
  let badHostValue = false;
  const hostAndPort = fillPlaceholders(authority.slice(at + 1), values, (value) => {
    if (!hostValue.test(value)) badHostValue = true;
    return value;
  });
  if (badHostValue) return "has a host placeholder whose value is not a host name (letters, digits, '.', '-', '_')";
  if (new RegExp(placeholderPattern.source).test(hostAndPort)) return 'has a host placeholder without a value';
  if (hostAndPort.replace(/:\d*$/, '') === '') return 'has an empty host once its placeholders are filled';

  const end = rest.search(/[?#]/);
  const pathTemplate = end === -1 ? rest : rest.slice(0, end);
  const before = pathTemplate.split(/[/\\]/);
  const after = fillPlaceholders(pathTemplate, values, encodeUrlValue).split(/[/\\]/);
  if (after.some((segment, index) => segment !== before[index] && /^(\.|%2e){1,2}$/i.test(segment))) {
    return "would get a '.' or '..' path segment from an argument";
  }

  let url: URL;
  try {
    url = new URL(`${scheme}${userInfo}${hostAndPort}${fillPlaceholders(rest, values, encodeUrlValue)}`);
  } catch {
    return 'is not valid once its placeholders are filled';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be http or https';
  return url;
}

/** The start of a text, at most `limit` UTF-8 bytes, never cutting a character; `…` marks a cut. */
function firstBytes(text: string, limit: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= limit) return text;
  return `${new TextDecoder().decode(bytes.subarray(0, limit), { stream: true })}…`;
}

type BodyContent = { kind: 'empty' } | { kind: 'text'; text: string } | { kind: 'binary'; description: string };

/** Media types whose bodies are binary whatever their bytes look like. */
const binaryMediaType =
  /^(image|audio|video|font|model)\/|^application\/(octet-stream|pdf|zip|gzip|x-gzip|x-tar|x-bzip2|x-7z-compressed|x-rar-compressed|wasm|protobuf|x-protobuf|vnd\.google\.protobuf|msword|vnd\.ms-|vnd\.openxmlformats|java-archive|x-msdownload|cbor|msgpack|x-msgpack)/;
/** Media types that are text; others are text only if their bytes decode. */
const textualMediaType =
  /^text\/|^application\/(json|xml|javascript|ecmascript|x-www-form-urlencoded|x-ndjson|ndjson|yaml|x-yaml|graphql|sql|csv)\b|\+(json|xml|yaml)$/;

function describeBody(response: GuardedResponse, maxResponseBytes: number): BodyContent {
  const { body, truncated } = response;
  if (body.length === 0 && !truncated) return { kind: 'empty' };
  const contentType = response.headers['content-type'] ?? '';
  const [rawType = '', ...parameters] = contentType.split(';');
  const mediaType = rawType.trim().toLowerCase();
  const charset = parameters
    .map((parameter) => /^\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(parameter)?.[1])
    .find((value) => value !== undefined);

  const binary = (): BodyContent => {
    const declared = Number(response.headers['content-length']);
    const size = !truncated ? `${body.length} bytes` : Number.isSafeInteger(declared) && declared > 0 ? `${declared} bytes` : `more than ${maxResponseBytes} bytes`;
    return { kind: 'binary', description: `[binary response: ${mediaType || 'unknown type'}, ${size}]` };
  };
  if (binaryMediaType.test(mediaType)) return binary();

  const text = decodeText(body, charset, truncated);
  if (text === undefined) return binary();
  // An undeclared type whose bytes decode but hold NULs is binary data all the same.
  if (!textualMediaType.test(mediaType) && text.includes('\u0000')) return binary();
  return { kind: 'text', text: truncated ? `${text}…[truncated at ${maxResponseBytes} bytes]` : text };
}

/**
 * The body as text in its charset (UTF-8 unless declared); undefined if the bytes are not valid UTF-8. A truncated
 * body may end inside a character: that partial character is dropped rather than counted as invalid.
 */
function decodeText(body: Buffer, charset: string | undefined, truncated: boolean): string | undefined {
  const label = charset?.toLowerCase();
  if (label && label !== 'utf-8' && label !== 'utf8') {
    try {
      return new TextDecoder(label).decode(body, { stream: truncated });
    } catch {
      // An encoding this runtime does not know: judge the bytes as UTF-8.
    }
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(body, { stream: truncated });
  } catch {
    return undefined;
  }
}
