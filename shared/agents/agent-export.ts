import { isDeepStrictEqual } from 'node:util';
import { ForbiddenError, InvalidToolSchemaError, NotFoundError, ToolUrlNotAllowedError, type FieldIssue } from '../platform/errors.ts';
import { grants, type Scope } from '../platform/http/scopes.ts';
import type { Principal } from '../platform/http/principal.ts';
import type { SealResponse } from '../platform/ports.ts';
import { catalogHolding } from '../models/provider-keys.ts';
import { voiceCatalog, voiceProviderAvailable } from '../models/voices.ts';
import type { DynamoKnowledgeStore } from '../knowledge/knowledge-store.ts';
import { createAgent, getAgent, modelFields, modelTypeOf, type AgentDeps } from './agents.ts';
import { agentAtVersion, authorOf } from './agent-versions.ts';
import { createTool, checkToolDefinition, type ToolDeps } from './tools.ts';
import { createAgentBody, type Agent, type CreateAgentInput } from './agent-schemas.ts';
import type { Tool } from './tool-schemas.ts';
import { placeholderPattern } from './placeholders.ts';
import {
  agentExportFormatVersion,
  agentExportKind,
  redactedMarker,
  sameName,
  type AgentExportDocument,
  type AgentImportResult,
  type ExportedAgent,
  type ExportedTool,
  type ExportRedaction,
  type Resupply,
} from './agent-export-schemas.ts';

export interface AgentExportDeps extends AgentDeps, ToolDeps {
  knowledge: Pick<DynamoKnowledgeStore, 'getStore' | 'listStores'>;
}

/** The caller, as far as an export or import needs it: its organization, and its scopes for the tools inside. */
export interface ExportCaller {
  orgId: string;
  scopes: readonly string[];
  /** Its credential: the author of the imported agent's first version. */
  via: Principal['via'];
}

/** The agent's own configuration fields: what `POST /v2/chat/agents` takes, less what is named instead of referenced by id. */
const configurationFields = Object.keys(createAgentBody.shape).filter((field) => !['knowledgeStoreId', 'tools', 'handoffAgents'].includes(field));

/**
 * The agent's configuration as one self-contained document: its tools in full (secrets replaced by
 * `redactedMarker`), its knowledge store and handoff targets by name. A handoff target deleted since is left out:
 * the agent could not hand over to it either. The draft by default; with `version`, that version's configuration
 * and its tools' definitions as they were then.
 */
export async function exportAgent(
  deps: Pick<AgentExportDeps, 'agents' | 'tools' | 'knowledge' | 'clock'>,
  caller: ExportCaller,
  agentId: string,
  options: { version?: number } = {},
): Promise<AgentExportDocument> {
  const draft = await getAgent(deps, caller.orgId, agentId);
  const version = options.version === undefined ? undefined : await deps.agents.getVersion(caller.orgId, agentId, options.version);
  if (options.version !== undefined && !version) throw new NotFoundError(`Agent ${agentId} has no version ${options.version}.`);
  const agent = version ? agentAtVersion(draft, version) : draft;
  if (agent.tools.length > 0) assertGranted(caller, 'tools:read', 'the agent has tools, whose definitions the document holds');
  const definitionsThen = new Map(version?.tools.map((tool) => [tool.id, tool]));
  const [tools, store, handoffTargets] = await Promise.all([
    Promise.all(agent.tools.map(async (ref) => definitionsThen.get(ref.toolId) ?? (version ? undefined : deps.tools.get(caller.orgId, ref.toolId)))),
    agent.knowledgeStoreId ? deps.knowledge.getStore(caller.orgId, agent.knowledgeStoreId) : undefined,
    Promise.all((agent.handoffAgents ?? []).map((target) => deps.agents.get(caller.orgId, target.agentId))),
  ]);
  const redactions: ExportRedaction[] = [];
  const definitions = tools.filter((tool) => tool !== undefined).map((tool, index) => exportedTool(tool, `tools.${index}`, redactions));
  const configuration = Object.fromEntries(configurationFields.filter((field) => field in agent).map((field) => [field, agent[field as keyof Agent]]));
  const exported = {
    ...configuration,
    ...(store ? { knowledgeStore: { name: store.name } } : {}),
    tools: agent.tools.flatMap((ref, index) => {
      const tool = tools[index];
      return tool ? [{ name: tool.name, ...(ref.toolDescription === undefined ? {} : { toolDescription: ref.toolDescription }) }] : [];
    }),
    ...(agent.handoffAgents
      ? {
          handoffAgents: agent.handoffAgents.flatMap((target, index) => {
            const found = handoffTargets[index];
            return found ? [{ agentName: found.fullName, description: target.description }] : [];
          }),
        }
      : {}),
  } as ExportedAgent;
  return {
    kind: agentExportKind,
    formatVersion: agentExportFormatVersion,
    exportedAt: deps.clock.now().toISOString(),
    agent: exported,
    tools: definitions,
    redactions,
  };
}

/**
 * Creates the document's agent in the caller's organization. What cannot be carried over is reported in
 * `resupply` rather than refused: secrets still holding the marker, a knowledge store or handoff target the
 * organization has no one of that name, a model or voice it cannot use, the phone number a voice agent needs.
 * A tool whose name the organization uses already is reused when its definition is the same (secrets aside),
 * else created under the next free `NAME_2`, `NAME_3`… Everything is checked before anything is written.
 */
export async function importAgent(deps: AgentExportDeps, caller: ExportCaller, document: AgentExportDocument, sealResponse?: SealResponse): Promise<AgentImportResult> {
  const orgId = caller.orgId;
  const [existingTools, stores, agents] = await Promise.all([deps.tools.list(orgId), deps.knowledge.listStores(orgId), deps.agents.list(orgId)]);
  const plans = planTools(document.tools, existingTools);
  if (plans.some((plan) => plan.outcome !== 'reused')) assertGranted(caller, 'tools:write', 'the import creates tools');
  await Promise.all(plans.map((plan, index) => (plan.outcome === 'reused' ? undefined : underField(`tools.${index}`, () => checkToolDefinition(deps, plan.definition)))));

  const agentResupply: Resupply[] = [];
  const input = await resolveAgent(deps, orgId, document.agent, { stores, agents }, agentResupply);
  const tools = await Promise.all(
    plans.map(async (plan) =>
      plan.outcome === 'reused'
        ? { name: plan.definition.name, outcome: plan.outcome, tool: plan.existing }
        : { name: plan.definition.name, outcome: plan.outcome, tool: await createTool(deps, orgId, { ...plan.definition, name: plan.name }) },
    ),
  );
  // In the document's order, tools first, whichever tool was created first.
  const resupply = [
    ...tools.flatMap((entry, index) => (entry.outcome === 'reused' ? [] : toolResupply(document.tools[index] as ExportedTool, `tools.${index}`, entry.tool))),
    ...agentResupply,
  ];
  const toolIdByName = new Map(tools.map((entry) => [sameName(entry.name), entry.tool.id]));
  const agentInput: CreateAgentInput = {
    ...input,
    tools: document.agent.tools.map(({ name, ...ref }) => ({ ...ref, toolId: toolIdByName.get(sameName(name)) as string })),
  };
  const agent = await createAgent(deps, orgId, agentInput, authorOf(caller), sealResponse && ((created) => sealResponse({ agent: created, tools, resupply })));
  return { agent, tools, resupply };
}

function assertGranted(caller: ExportCaller, scope: Scope, why: string): void {
  if (grants(caller.scopes, scope)) return;
  throw new ForbiddenError(`This credential lacks the scope ${scope}: ${why}.`, { details: [{ field: 'tools', message: `needs the scope ${scope}` }] });
}

/** Header names whose values are never secrets; every other header value is, unless it is made of placeholders only. */
const plainHeaders: ReadonlySet<string> = new Set(['accept', 'accept-language', 'cache-control', 'content-language', 'content-type', 'prefer', 'user-agent']);
/** Query parameters whose values are taken for secrets (`api_key`, `access_token`, `sig`, `password`, `appid`…). */
const secretParameter = /key|token|secret|sig|auth|pass|pwd|credential|app_?id/i;
/** A value that, placeholders aside, holds at most an authorization scheme: what it sends comes from the call's arguments. */
const withoutSecret = (value: string) => /^\s*(?:(?:bearer|basic|token)\s*)?$/i.test(value.replace(placeholderPattern, ''));

/** A tool as the document holds it: its definition with each secret replaced by the marker, and a redaction for each. */
function exportedTool(tool: Tool, at: string, redactions: ExportRedaction[]): ExportedTool {
  const definition: ExportedTool = {
    name: tool.name,
    description: tool.description,
    type: tool.type,
    ajvPropertiesSchema: tool.ajvPropertiesSchema,
    ...(tool.preExecutionMessage === undefined ? {} : { preExecutionMessage: tool.preExecutionMessage }),
  };
  if (tool.apiTool) {
    const headers = Object.fromEntries(
      Object.entries(tool.apiTool.headers).map(([name, value]) => {
        if (plainHeaders.has(name.toLowerCase()) || withoutSecret(value)) return [name, value];
        redactions.push({ field: `${at}.apiTool.headers.${name}`, message: `the value of the ${name} header` });
        return [name, redactedMarker];
      }),
    );
    definition.apiTool = { url: redactedUrl(tool.apiTool.url, `${at}.apiTool.url`, redactions), method: tool.apiTool.method, headers };
  }
  if (tool.functionTool) {
    definition.functionTool = {
      url: redactedUrl(tool.functionTool.url, `${at}.functionTool.url`, redactions),
      ...(tool.functionTool.timeoutMs === undefined ? {} : { timeoutMs: tool.functionTool.timeoutMs }),
    };
  }
  return definition;
}

/**
 * The URL with the password of its user information and the values of secret-looking query parameters replaced,
 * as text: parsing and serializing it again would percent-encode its `{{placeholders}}`.
 */
function redactedUrl(url: string, field: string, redactions: ExportRedaction[]): string {
  const withoutPassword = url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/?#@:]*:)([^/?#@]*)@/i, (whole, head: string, password: string) => {
    if (withoutSecret(password)) return whole;
    redactions.push({ field, message: 'the password in the URL' });
    return `${head}${redactedMarker}@`;
  });
  const queryStart = withoutPassword.indexOf('?');
  if (queryStart < 0) return withoutPassword;
  const fragmentStart = withoutPassword.indexOf('#', queryStart);
  const end = fragmentStart < 0 ? withoutPassword.length : fragmentStart;
  const query = withoutPassword.slice(queryStart + 1, end).replace(/(^|&)([^=&]+)=([^&]*)/g, (whole, separator: string, name: string, value: string) => {
    if (!secretParameter.test(name) || withoutSecret(value)) return whole;
    redactions.push({ field, message: `the value of the query parameter ${name}` });
    return `${separator}${name}=${redactedMarker}`;
  });
  return `${withoutPassword.slice(0, queryStart + 1)}${query}${withoutPassword.slice(end)}`;
}

/** What the importer must supply for a tool it created: each marker still in it, and a FUNCTION_TOOL's new signing secret. */
function toolResupply(definition: ExportedTool, at: string, tool: Tool): Resupply[] {
  const found: Resupply[] = [];
  for (const [name, value] of Object.entries(definition.apiTool?.headers ?? {})) {
    if (value.includes(redactedMarker)) found.push({ kind: 'secret', field: `${at}.apiTool.headers.${name}`, toolId: tool.id, message: `Set the ${name} header of tool ${tool.name} (PATCH /v1/chat/tools/${tool.id}).` });
  }
  for (const part of ['apiTool', 'functionTool'] as const) {
    if (definition[part]?.url.includes(redactedMarker)) found.push({ kind: 'secret', field: `${at}.${part}.url`, toolId: tool.id, message: `Replace ${redactedMarker} in the URL of tool ${tool.name} (PATCH /v1/chat/tools/${tool.id}).` });
  }
  if (tool.functionTool) {
    found.push({
      kind: 'signingSecret',
      field: `${at}.functionTool`,
      toolId: tool.id,
      message: `Tool ${tool.name} signs its requests with a new secret (functionTool.signingSecret of this response, shown only here): give it to the endpoint.`,
    });
  }
  return found;
}

type ToolPlan =
  | { outcome: 'reused'; definition: ExportedTool; existing: Tool }
  | { outcome: 'created' | 'renamed'; definition: ExportedTool; name: string };

const maxToolNameLength = 64;

/** For each tool of the document: the organization's identical tool of that name, or the name to create it under. */
function planTools(definitions: readonly ExportedTool[], existing: readonly Tool[]): ToolPlan[] {
  const byName = new Map(existing.map((tool) => [sameName(tool.name), tool]));
  const taken = new Set([...byName.keys(), ...definitions.map((definition) => sameName(definition.name))]);
  return definitions.map((definition) => {
    const namesake = byName.get(sameName(definition.name));
    if (!namesake) return { outcome: 'created', definition, name: definition.name };
    if (isDeepStrictEqual(exportedTool(namesake, '', []), definition)) return { outcome: 'reused', definition, existing: namesake };
    for (let suffix = 2; ; suffix += 1) {
      const name = `${definition.name.slice(0, maxToolNameLength - `_${suffix}`.length)}_${suffix}`;
      if (taken.has(sameName(name))) continue;
      taken.add(sameName(name));
      return { outcome: 'renamed', definition, name };
    }
  });
}

/** A tool's own checks, with the fields of their details placed in the document (`tools.0.apiTool.url`). */
async function underField(at: string, check: () => Promise<void>): Promise<void> {
  const placed = (details: FieldIssue[] | undefined) => ({ details: (details ?? []).map((issue) => ({ ...issue, field: `${at}.${issue.field}` })) });
  try {
    await check();
  } catch (error) {
    if (error instanceof ToolUrlNotAllowedError) throw new ToolUrlNotAllowedError(error.message, { cause: error, ...placed(error.details) });
    if (error instanceof InvalidToolSchemaError) throw new InvalidToolSchemaError(error.message, { cause: error, ...placed(error.details) });
    throw error;
  }
}

/**
 * The agent's fields for `createAgent` in the importing organization: models and voice it can use (else the
 * default LLM, or none, reported), its knowledge store and handoff targets found by name (else left out, reported).
 */
async function resolveAgent(
  deps: AgentExportDeps,
  orgId: string,
  exported: ExportedAgent,
  found: { stores: readonly { id: string; name: string }[]; agents: readonly Agent[] },
  resupply: Resupply[],
): Promise<Omit<CreateAgentInput, 'tools'>> {
  const { knowledgeStore, handoffAgents, tools: _tools, ...input } = exported;
  const resolved: Omit<CreateAgentInput, 'tools'> = { ...input };
  const catalog = await catalogHolding(deps, orgId, modelFields.map((field) => input[field]));
  for (const field of modelFields) {
    const type = modelTypeOf[field];
    const id = input[field];
    if (id === undefined || catalog.byId(id)?.type === type) continue;
    if (field === 'modelId') resolved.modelId = deps.catalog.defaultLlm.id;
    else delete resolved[field];
    const instead = field === 'modelId' ? `the deployment's default LLM (${deps.catalog.defaultLlm.id}) is used instead` : 'it is left unset';
    resupply.push({ kind: 'model', field: `agent.${field}`, message: `Model ${id} is not a ${type} model this organization can use: ${instead}.` });
  }
  if (input.voice) {
    const { provider, voiceId } = input.voice;
    if (!voiceCatalog.some((voice) => voice.provider === provider && voice.voiceId === voiceId) || !voiceProviderAvailable(catalog, provider)) {
      delete resolved.voice;
      resupply.push({ kind: 'voice', field: 'agent.voice', message: `This deployment cannot speak the ${provider} voice ${voiceId}: the agent has no voice; choose one (GET /v1/chat/voices).` });
    }
  }
  if (knowledgeStore) {
    const store = onlyOne(found.stores.filter((candidate) => candidate.name === knowledgeStore.name));
    if (store) resolved.knowledgeStoreId = store.id;
    else {
      resupply.push({
        kind: 'knowledgeStore',
        field: 'agent.knowledgeStore',
        message: `This organization has no single knowledge store named ${knowledgeStore.name}: create one, upload its documents and set the agent's knowledgeStoreId.`,
      });
    }
  }
  if (handoffAgents) {
    resolved.handoffAgents = handoffAgents.flatMap((target, index) => {
      const agent = onlyOne(found.agents.filter((candidate) => candidate.fullName === target.agentName));
      if (agent) return [{ agentId: agent.id, description: target.description }];
      resupply.push({
        kind: 'handoffAgent',
        field: `agent.handoffAgents.${index}`,
        message: `This organization has no single agent named ${target.agentName} to hand over to: the target is left out; add it with PATCH /v2/chat/agents/{id}.`,
      });
      return [];
    });
  }
  if (input.voiceEnabled) {
    resupply.push({ kind: 'phoneNumber', field: 'agent.voiceEnabled', message: 'No phone number routes calls to the imported agent yet: assign one (PATCH /api/v1/phone-numbers/{phone_number_id}).' });
  }
  return resolved;
}

const onlyOne = <T>(candidates: readonly T[]): T | undefined => (candidates.length === 1 ? candidates[0] : undefined);
