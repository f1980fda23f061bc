import { signatureHeaders } from '../platform/net/standard-webhooks.ts';
import { sendToolRequest, toolUserAgent, type ApiToolOptions, type ToolExecution } from './api-tool-executor.ts';

export interface FunctionToolDefinition {
  name: string;
  functionTool: { url: string; timeoutMs?: number | undefined };
  functionSecret: string;
}

export interface FunctionCallContext {
  toolCallId: string;
  sessionId: string;
  agentId: string;
  sessionVariables: Record<string, unknown>;
  signal?: AbortSignal;
}

/**
 * Runs a FUNCTION_TOOL: a POST of `{type: "tool.call", toolCallId, name, arguments, session}` to the customer's
 * function endpoint, signed by the Standard Webhooks scheme with the tool's secret (`webhook-id` and
 * `Idempotency-Key` are the tool call id). A 2xx answer is the result: `{"result": …}` is unwrapped, any other body
 * is taken as is. Same egress guard, timeout and size cap as API tools; never throws.
 */
export async function executeFunctionTool(
  tool: FunctionToolDefinition,
  args: Record<string, unknown>,
  context: FunctionCallContext,
  options: ApiToolOptions,
): Promise<ToolExecution> {
  const body = JSON.stringify({
    type: 'tool.call',
    toolCallId: context.toolCallId,
    name: tool.name,
    arguments: args,
    session: { id: context.sessionId, agentId: context.agentId, sessionVariables: context.sessionVariables },
  });
  const execution = await sendToolRequest(
    new URL(tool.functionTool.url),
    {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        accept: 'application/json',
        'user-agent': toolUserAgent,
        'idempotency-key': context.toolCallId,
        ...signatureHeaders(tool.functionSecret, context.toolCallId, body),
      },
      body,
    },
    context,
    { ...options, timeoutMs: tool.functionTool.timeoutMs ?? options.timeoutMs },
  );
  return execution.status === 'SUCCESS' ? { ...execution, result: unwrapResult(execution.result) } : execution;
}

function unwrapResult(text: string): string {
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) && 'result' in parsed) {
      const { result } = parsed as { result: unknown };
      return typeof result === 'string' ? result : JSON.stringify(result);
    }
  } catch {
    // Not JSON: the text is the result.
  }
  return text;
}
