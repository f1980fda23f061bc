import type { Config } from '../platform/config.ts';
import { retrieve } from '../knowledge/knowledge.ts';
import { knowledgeRuntime } from '../knowledge/knowledge-runtime.ts';
import { createLanguageModel, createOrganizationLanguageModel } from '../models/model-providers.ts';
import { ownModelConnection } from '../models/provider-keys.ts';
import type { RetrievedChunk } from '../knowledge/knowledge-schemas.ts';
import { egressPolicyFromConfig, guardedFetch } from '../platform/net/egress-guard.ts';
import { runtime, type Runtime } from '../runtime.ts';
import type { Model } from '../models/model-schemas.ts';
import type { ToolCallContext, TurnDeps } from './turn.ts';
import type { ExecutableTool } from '../agents/tool-schemas.ts';
import { executeApiTool, type ToolExecution } from '../agents/api-tool-executor.ts';
import { executeFunctionTool } from '../agents/function-tool-executor.ts';

/**
 * The runtime plus what a conversation turn needs: model providers and tool execution. Only the functions that
 * run turns import this, so the others do not bundle (or load) the AI SDK providers.
 */
export interface ConversationRuntime extends Runtime {
  turnModel: TurnDeps['turnModel'];
  executeTool(tool: ExecutableTool, args: Record<string, unknown>, context: ToolCallContext): Promise<ToolExecution>;
  retrieveKnowledge(orgId: string, storeId: string, query: string): Promise<RetrievedChunk[] | undefined>;
}

let processRuntime: ConversationRuntime | undefined;

export function conversationRuntime(): ConversationRuntime {
  if (!processRuntime) {
    const base = runtime();
    processRuntime = {
      ...base,
      turnModel: turnModelOf(base),
      executeTool: (tool, args, context) => executeTool(base.config, tool, args, context),
      retrieveKnowledge: async (orgId, storeId, query) => {
        const knowledge = knowledgeRuntime();
        const store = await knowledge.knowledge.getStore(orgId, storeId);
        return store && retrieve(knowledge, store, query);
      },
    };
  }
  return processRuntime;
}

/** The deployment's models through their configured providers; an organization's own through its key, behind the egress guard (it chose the URL). */
function turnModelOf(base: Runtime): TurnDeps['turnModel'] {
  const fetch = guardedFetch(egressPolicyFromConfig(base.config));
  const deploymentModel = (model: Model) => ({ model, languageModel: createLanguageModel(model, base.config) });
  return async (orgId, modelId) => {
    const deployed = base.catalog.byId(modelId);
    if (deployed) return deploymentModel(deployed);
    const own = await ownModelConnection(base, orgId, modelId);
    if (own) return { model: own.model, languageModel: await createOrganizationLanguageModel(own.model, own.connection, fetch) };
    return deploymentModel(base.catalog.defaultLlm);
  };
}

async function executeTool(config: Config, tool: ExecutableTool, args: Record<string, unknown>, context: ToolCallContext): Promise<ToolExecution> {
  const options = { timeoutMs: config.TOOL_TIMEOUT_MS, maxResponseBytes: config.TOOL_MAX_RESPONSE_BYTES, policy: egressPolicyFromConfig(config) };
  if (tool.type === 'API_TOOL' && tool.apiTool) return executeApiTool({ name: tool.name, apiTool: tool.apiTool }, args, context, options);
  if (tool.type === 'FUNCTION_TOOL' && tool.functionTool && tool.functionSecret) {
    return executeFunctionTool({ name: tool.name, functionTool: tool.functionTool, functionSecret: tool.functionSecret }, args, context, options);
  }
  const message = `${tool.name} has no endpoint to run it: give the tool a functionTool.url.`;
  return { status: 'ERROR', result: message, durationMs: 0, error: { code: 'TOOL_NOT_EXECUTABLE', message } };
}
