import type { LanguageModelV4 } from '@ai-sdk/provider';
import type { Config } from './config.ts';
import { createLanguageModel } from './models/providers.ts';
import { egressPolicyFromConfig } from './net/egress-guard.ts';
import { runtime, type Runtime } from './runtime.ts';
import type { Model } from './schemas/model.ts';
import type { Tool } from './schemas/tool.ts';
import { executeApiTool, type ToolExecution } from './tools/api-tool-executor.ts';

/**
 * The runtime plus what a conversation turn needs: model providers and tool execution. Only the functions that
 * run turns import this, so the others do not bundle (or load) the AI SDK providers.
 */
export interface ConversationRuntime extends Runtime {
  languageModel(model: Model): LanguageModelV4;
  executeTool(
    tool: Tool,
    args: Record<string, unknown>,
    context: { toolCallId: string; sessionVariables: Record<string, unknown>; signal: AbortSignal },
  ): Promise<ToolExecution>;
}

let processRuntime: ConversationRuntime | undefined;

export function conversationRuntime(): ConversationRuntime {
  if (!processRuntime) {
    const base = runtime();
    processRuntime = {
      ...base,
      languageModel: (model) => createLanguageModel(model, base.config),
      executeTool: (tool, args, context) => executeTool(base.config, tool, args, context),
    };
  }
  return processRuntime;
}

async function executeTool(
  config: Config,
  tool: Tool,
  args: Record<string, unknown>,
  context: { toolCallId: string; sessionVariables: Record<string, unknown>; signal: AbortSignal },
): Promise<ToolExecution> {
  if (tool.type === 'API_TOOL' && tool.apiTool) {
    return executeApiTool({ name: tool.name, apiTool: tool.apiTool }, args, context, {
      timeoutMs: config.TOOL_TIMEOUT_MS,
      maxResponseBytes: config.TOOL_MAX_RESPONSE_BYTES,
      policy: egressPolicyFromConfig(config),
    });
  }
  return {
    status: 'ERROR',
    result: `${tool.name} is a FUNCTION_TOOL, which this deployment cannot execute yet.`,
    durationMs: 0,
    error: { code: 'TOOL_NOT_EXECUTABLE', message: 'FUNCTION_TOOL execution is not available' },
  };
}
