import { InvalidAnalysisConfigError, ModelsNotFoundError, NotFoundError, ValidationError, VoiceNotFoundError, type FieldIssue } from '../platform/errors.ts';
import { voiceCatalog, voiceProviderAvailable } from '../models/voices.ts';
import type { ModelCatalog } from '../models/model-catalog.ts';
import { catalogHolding, type OrganizationModelDeps } from '../models/provider-keys.ts';
import type { SealResponse } from '../platform/ports.ts';
import { analysisConfigProblems } from './analysis-config-schemas.ts';
import type { Agent, CreateAgentInput, ListAgentsQuery, UpdateAgentInput } from './agent-schemas.ts';
import { compareBy, paginate, type Page } from '../platform/schemas/common.ts';
import type { ModelType } from '../models/model-schemas.ts';
import type { DynamoKnowledgeStore } from '../knowledge/knowledge-store.ts';
import { newId, nextUpdatedAt, type Clock } from '../platform/clock.ts';
import { assertKnowledgeStoreExists } from '../knowledge/knowledge.ts';
import { commitAgentChange, type VersioningDeps } from './agent-versions.ts';
import type { VersionAuthor } from './agent-version-schemas.ts';

export interface AgentDeps extends OrganizationModelDeps, VersioningDeps {
  clock: Clock;
  knowledge: Pick<DynamoKnowledgeStore, 'getStore'>;
}

/** Creates the agent with its version 1, published. */
export async function createAgent(deps: AgentDeps, orgId: string, input: CreateAgentInput, author: VersionAuthor, sealResponse?: SealResponse): Promise<Agent> {
  const now = deps.clock.now().toISOString();
  const agent = withoutUndefined<Agent>({
    id: newId(),
    orgId,
    ...input,
    modelId: input.modelId ?? deps.catalog.defaultLlm.id,
    voicePipelineMode: input.voicePipelineMode ?? null,
    isActive: true,
    isPublic: false,
    createdAt: now,
    updatedAt: now,
  });
  checkConfiguration(await catalogHolding(deps, orgId, modelFields.map((field) => agent[field])), agent, modelFields);
  checkVoice(deps.catalog, agent);
  if (agent.knowledgeStoreId) await assertKnowledgeStoreExists(deps, orgId, agent.knowledgeStoreId);
  await checkHandoffAgents(deps, agent);
  return commitAgentChange(deps, undefined, agent, author, { completion: (stored) => sealResponse?.(stored) });
}

export async function getAgent(deps: Pick<AgentDeps, 'agents'>, orgId: string, agentId: string): Promise<Agent> {
  const agent = await deps.agents.get(orgId, agentId);
  if (!agent) throw new NotFoundError(`Agent ${agentId} not found.`);
  return agent;
}

export async function listAgents(deps: Pick<AgentDeps, 'agents'>, orgId: string, query: ListAgentsQuery): Promise<Page<Agent>> {
  const createdAfter = query.createdAfter ? Date.parse(query.createdAfter) : undefined;
  const createdBefore = query.createdBefore ? Date.parse(query.createdBefore) : undefined;
  const matching = (await deps.agents.list(orgId)).filter(
    (agent) =>
      (query.isActive === undefined || agent.isActive === query.isActive) &&
      (query.isPublic === undefined || agent.isPublic === query.isPublic) &&
      (query.voiceEnabled === undefined || agent.voiceEnabled === query.voiceEnabled) &&
      (createdAfter === undefined || Date.parse(agent.createdAt) > createdAfter) &&
      (createdBefore === undefined || Date.parse(agent.createdAt) < createdBefore),
  );
  matching.sort(compareBy<Agent>(query.sort.field, query.sort.direction));
  return paginate(matching, query.page, query.limit);
}

/**
 * Applies a partial update; `null` clears an optional field. The merged agent must still be valid as a whole. Every
 * update is a new version, published at once unless the agent's `publishMode` is `MANUAL`.
 */
export async function updateAgent(deps: AgentDeps, orgId: string, agentId: string, changes: UpdateAgentInput, author: VersionAuthor): Promise<Agent> {
  const previous = await getAgent(deps, orgId, agentId);
  const next = patchedAgent({ ...previous, updatedAt: nextUpdatedAt(deps.clock, previous.updatedAt) }, changes);
  // Only the model ids being set are checked, so an agent whose model left the catalog can still be edited.
  const changedModels = modelFields.filter((field) => changes[field] !== undefined && changes[field] !== null);
  checkConfiguration(await catalogHolding(deps, orgId, changedModels.map((field) => next[field])), next, changedModels);
  // Like model ids, only a voice (or its TTS model) being set is checked: a voice that left the catalog does not
  // block other edits.
  if (changes.voice || changes.ttsModelId) checkVoice(deps.catalog, next);
  if (changes.knowledgeStoreId) await assertKnowledgeStoreExists(deps, orgId, changes.knowledgeStoreId);
  if (changes.handoffAgents) await checkHandoffAgents(deps, next);
  return commitAgentChange(deps, previous, next, author);
}

/** The agent as a PATCH body leaves it: each field given replaced, a null removing it. */
export function patchedAgent(agent: Agent, changes: UpdateAgentInput): Agent {
  const merged: Record<string, unknown> = { ...agent };
  for (const [field, value] of Object.entries(changes)) {
    // voicePipelineMode is nullable in the record itself; every other null means "remove this field".
    if (value === null && field !== 'voicePipelineMode') delete merged[field];
    else merged[field] = value;
  }
  return merged as unknown as Agent;
}

export async function deleteAgent(deps: Pick<AgentDeps, 'agents'>, orgId: string, agentId: string): Promise<void> {
  if (!(await deps.agents.delete(orgId, agentId))) throw new NotFoundError(`Agent ${agentId} not found.`);
}

/** The agent's fields that name a model, each with the type of model it must be. */
export const modelFields = ['modelId', 'sttModelId', 'ttsModelId', 'stsModelId'] as const;
export const modelTypeOf: Record<(typeof modelFields)[number], ModelType> = { modelId: 'LLM', sttModelId: 'STT', ttsModelId: 'TTS', stsModelId: 'STS' };

/** Rules that span fields, checked on the agent as it will be stored (after create defaults or a merge). */
function checkConfiguration(catalog: ModelCatalog, agent: Agent, modelFieldsToCheck: readonly (typeof modelFields)[number][]): void {
  if (agent.voiceEnabled && !agent.voicePipelineMode) {
    throw new ValidationError('voicePipelineMode is required when voiceEnabled is true.', {
      details: [{ field: 'voicePipelineMode', message: 'is required when voiceEnabled is true (pipeline, sts or hybrid)' }],
    });
  }
  const analysisProblems = agent.analysis ? analysisConfigProblems(agent.analysis) : [];
  if (analysisProblems.length > 0) {
    throw new InvalidAnalysisConfigError(analysisProblems.map((problem) => `${problem.field}: ${problem.message}`).join('; '), {
      details: analysisProblems,
    });
  }
  const problems: FieldIssue[] = [];
  for (const field of modelFieldsToCheck) {
    const type = modelTypeOf[field];
    const id = agent[field];
    if (id === undefined) continue;
    const model = catalog.byId(id);
    if (!model) problems.push({ field, message: `model ${id} is not in this organization's catalog` });
    else if (model.type !== type) problems.push({ field, message: `model ${id} is of type ${model.type}, not ${type}` });
  }
  if (problems.length > 0) {
    throw new ModelsNotFoundError(problems.map((problem) => `${problem.field}: ${problem.message}`).join('; '), {
      details: problems,
    });
  }
}

/**
 * The agent's voice must be in the voices catalog, for its provider, and one this deployment can speak with
 * (422 VOICE_NOT_FOUND); its TTS model, when it names one, must be of the voice's provider (422 MODELS_NOT_FOUND).
 */
function checkVoice(catalog: ModelCatalog, agent: Agent): void {
  if (!agent.voice) return;
  const { provider, voiceId } = agent.voice;
  if (!voiceCatalog.some((voice) => voice.provider === provider && voice.voiceId === voiceId)) {
    throw new VoiceNotFoundError(`voice.voiceId: ${provider} has no voice ${voiceId} in the catalog (GET /v1/chat/voices?provider=${provider}).`, {
      details: [{ field: 'voice.voiceId', message: `is not a ${provider} voice of the catalog` }],
    });
  }
  if (!voiceProviderAvailable(catalog, provider)) {
    throw new VoiceNotFoundError(`voice.provider: this deployment has no ${provider} TTS model, so no ${provider} voice can be spoken (GET /v1/chat/models?type=TTS).`, {
      details: [{ field: 'voice.provider', message: `has no TTS model in this deployment's catalog` }],
    });
  }
  const model = agent.ttsModelId === undefined ? undefined : catalog.byId(agent.ttsModelId);
  if (model && model.provider !== provider) {
    throw new ModelsNotFoundError(`ttsModelId: model ${model.id} is a ${model.provider} TTS model; the voice is ${provider}'s.`, {
      details: [{ field: 'ttsModelId', message: `must be a TTS model of the voice's provider (${provider})` }],
    });
  }
}

/**
 * Handoff targets are other agents of the agent's own organization: an id of another organization's agent is
 * refused like one that does not exist. Checked when set; a target deleted later is refused when the model asks
 * for it (docs/sessions.md#handoff).
 */
async function checkHandoffAgents(deps: Pick<AgentDeps, 'agents'>, agent: Agent): Promise<void> {
  const targets = agent.handoffAgents ?? [];
  const found = await Promise.all(targets.map((target) => (target.agentId === agent.id ? undefined : deps.agents.get(agent.orgId, target.agentId))));
  const details: FieldIssue[] = targets.flatMap((target, index) =>
    found[index]
      ? []
      : [{ field: `handoffAgents[${index}].agentId`, message: target.agentId === agent.id ? 'must be another agent than this one' : 'is not an agent of this organization' }],
  );
  if (details.length > 0) throw new ValidationError(details.map((issue) => `${issue.field} ${issue.message}`).join('; '), { details });
}

function withoutUndefined<T>(record: Record<string, unknown>): T {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as T;
}
