import { NotFoundError, ValidationError } from '../platform/errors.ts';
import { nextUpdatedAt, type Clock } from '../platform/clock.ts';
import type { Principal } from '../platform/http/principal.ts';
import type { IdempotencyCompletion } from '../platform/ports.ts';
import { paginate, type Page } from '../platform/schemas/common.ts';
import type { Agent } from './agent-schemas.ts';
import {
  lifecycleFields,
  type AgentConfiguration,
  type AgentVersion,
  type AgentVersionSummary,
  type AgentVersionView,
  type ListVersionsQuery,
  type VersionAuthor,
  type VersionChange,
} from './agent-version-schemas.ts';
import { agentEvents } from './agent-events.ts';
import type { AgentStore, ToolStore } from './ports.ts';
import type { ExecutableTool, Tool } from './tool-schemas.ts';

export interface VersioningDeps {
  agents: AgentStore;
  tools: ToolStore;
  clock: Clock;
}

export function authorOf(principal: Pick<Principal, 'via'>): VersionAuthor {
  return principal.via.kind === 'apiKey' ? { type: 'API_KEY', keyId: principal.via.keyId } : { type: 'JWT', subject: principal.via.subject ?? null };
}

const lifecycle: ReadonlySet<string> = new Set(lifecycleFields);

export function configurationOf(agent: Agent): AgentConfiguration {
  return Object.fromEntries(Object.entries(agent).filter(([field]) => !lifecycle.has(field))) as AgentConfiguration;
}

/** The agent as `version` configures it: its identity, lifecycle and switches as they are now, everything else the version's. */
export function agentAtVersion(agent: Agent, version: AgentVersion): Agent {
  const current = Object.fromEntries(Object.entries(agent).filter(([field]) => lifecycle.has(field)));
  return { ...current, ...version.configuration } as Agent;
}

/**
 * The tools an agent runs, in the agent's order: each attached tool that still exists, as `version` defined it when
 * the version has it (a bound session, a replay: the tools as they were) and with the tool's current secret.
 */
export function toolsAsOf(attached: readonly string[], current: readonly ExecutableTool[], version: Pick<AgentVersion, 'tools'> | undefined): ExecutableTool[] {
  const live = new Map(current.map((tool) => [tool.id, tool]));
  const definitions = new Map(version?.tools.map((tool) => [tool.id, tool]));
  return attached.flatMap((toolId) => {
    const tool = live.get(toolId);
    if (!tool) return [];
    const definition = definitions.get(toolId);
    return [definition ? { ...definition, functionSecret: tool.functionSecret } : tool];
  });
}

/** Versions embed their tools' definitions; DynamoDB items stop at 400 KB. */
const maxVersionBytes = 350 * 1024;

interface CommitOptions {
  /** The tool definitions the version keeps; read afresh when absent. */
  tools?: Tool[];
  /** Publish the new version whatever the agent's mode (a rollback). */
  publish?: boolean;
  completion?: (agent: Agent) => IdempotencyCompletion | undefined;
}

/**
 * Stores `next` (a new agent when `previous` is undefined) with the version it makes, in one transaction with its
 * events. An `AUTO` agent publishes each version; so does every agent with nothing published yet (its first version),
 * so a session can always bind. An agent stored before versions first keeps its stored configuration as version 1.
 */
export async function commitAgentChange(deps: VersioningDeps, previous: Agent | undefined, next: Agent, author: VersionAuthor, options: CommitOptions = {}): Promise<Agent> {
  if (!previous || previous.draftVersion !== undefined) return commitVersion(deps, previous, next, author, options);
  const kept = await keepStoredConfiguration(deps, previous, author);
  return commitVersion(deps, kept, { ...next, updatedAt: nextUpdatedAt(deps.clock, kept.updatedAt) }, author, options);
}

/**
 * An agent stored before versions: what its sessions ran until now becomes version 1, published, so that its first
 * change can be compared with it and rolled back (decision 565). Nothing changes, so no `agent.updated`.
 */
function keepStoredConfiguration(deps: VersioningDeps, agent: Agent, author: VersionAuthor): Promise<Agent> {
  return commitVersion(deps, agent, { ...agent, updatedAt: nextUpdatedAt(deps.clock, agent.updatedAt) }, author);
}

async function commitVersion(deps: VersioningDeps, previous: Agent | undefined, next: Agent, author: VersionAuthor, options: CommitOptions = {}): Promise<Agent> {
  const number = (previous?.draftVersion ?? 0) + 1;
  const previousPublished = previous?.publishedVersion;
  const publish = options.publish === true || next.publishMode === 'AUTO' || previousPublished === undefined;
  const stored: Agent = { ...next, draftVersion: number, publishedVersion: publish ? number : previousPublished };
  const toolIds = next.tools.map((tool) => tool.toolId);
  const definitions = options.tools ?? (await deps.tools.definitions(next.orgId, toolIds));
  const byId = new Map(definitions.map((tool) => [tool.id, tool]));
  const version: AgentVersion = {
    orgId: next.orgId,
    agentId: next.id,
    number,
    author,
    createdAt: next.updatedAt,
    configuration: configurationOf(stored),
    tools: toolIds.map((toolId) => byId.get(toolId)).filter((tool) => tool !== undefined),
  };
  if (Buffer.byteLength(JSON.stringify(version)) > maxVersionBytes) {
    throw new ValidationError('The agent with the definitions of its tools is too large to keep as a version; attach fewer or smaller tools.', {
      details: [{ field: 'tools', message: `the agent and its tools' definitions must stay under ${maxVersionBytes / 1024} KB` }],
    });
  }
  const at = stored.updatedAt;
  const events = [
    ...(previous?.draftVersion !== undefined
      ? [agentEvents.agentUpdated(stored.orgId, at, { agentId: stored.id, version: number, publishedVersion: stored.publishedVersion ?? null, changedFields: changedFields(previous, stored) })]
      : []),
    ...(publish ? [agentEvents.agentPublished(stored.orgId, at, { agentId: stored.id, version: number, previousVersion: previousPublished ?? null })] : []),
  ];
  const completion = options.completion?.(stored);
  if (previous) await deps.agents.replace(previous, stored, { version, events });
  else await deps.agents.create(stored, { version, events }, completion);
  return stored;
}

function changedFields(previous: Agent, next: Agent): string[] {
  const ignored = new Set(['draftVersion', 'publishedVersion', 'updatedAt']);
  const fields = new Set([...Object.keys(previous), ...Object.keys(next)]);
  return [...fields].filter((field) => !ignored.has(field) && diffValues(previous[field as keyof Agent], next[field as keyof Agent], field).length > 0).sort();
}

async function existingAgent(deps: Pick<VersioningDeps, 'agents'>, orgId: string, agentId: string): Promise<Agent> {
  const agent = await deps.agents.get(orgId, agentId);
  if (!agent) throw new NotFoundError(`Agent ${agentId} not found.`);
  return agent;
}

async function existingVersion(deps: Pick<VersioningDeps, 'agents'>, agent: Agent, number: number): Promise<AgentVersion> {
  const version = await deps.agents.getVersion(agent.orgId, agent.id, number);
  if (!version) throw new NotFoundError(`Agent ${agent.id} has no version ${number}.`);
  return version;
}

/** An agent stored before versions existed gets its first version from its current configuration when it is first published. */
async function versioned(deps: VersioningDeps, agent: Agent, author: VersionAuthor): Promise<Agent> {
  return agent.draftVersion === undefined ? keepStoredConfiguration(deps, agent, author) : agent;
}

/** Makes `number` (the draft when absent) the version new sessions bind to; publishing the published version changes nothing. */
export async function publishAgent(deps: VersioningDeps, orgId: string, agentId: string, number: number | undefined, author: VersionAuthor): Promise<Agent> {
  const agent = await versioned(deps, await existingAgent(deps, orgId, agentId), author);
  const target = number ?? (agent.draftVersion as number);
  await existingVersion(deps, agent, target);
  if (agent.publishedVersion === target) return agent;
  const updatedAt = nextUpdatedAt(deps.clock, agent.updatedAt);
  const next: Agent = { ...agent, publishedVersion: target, updatedAt };
  const published = agentEvents.agentPublished(orgId, updatedAt, { agentId, version: target, previousVersion: agent.publishedVersion ?? null });
  await deps.agents.replace(agent, next, { events: [published] });
  return next;
}

/**
 * Restores `number`'s configuration exactly, tool definitions included, as a new version that becomes both the
 * draft and the published version: later changes start from it, and the history keeps what was rolled back.
 */
export async function rollbackAgent(deps: VersioningDeps, orgId: string, agentId: string, number: number, author: VersionAuthor): Promise<Agent> {
  const agent = await existingAgent(deps, orgId, agentId);
  const target = await existingVersion(deps, agent, number);
  const next = { ...agentAtVersion(agent, target), updatedAt: nextUpdatedAt(deps.clock, agent.updatedAt) };
  return commitAgentChange(deps, agent, next, author, { tools: target.tools, publish: true });
}

function view(agent: Agent, version: AgentVersion): AgentVersionView {
  return { ...summary(agent, version), configuration: version.configuration, tools: version.tools };
}

function summary(agent: Agent, version: AgentVersion): AgentVersionSummary {
  return {
    agentId: version.agentId,
    number: version.number,
    author: version.author,
    createdAt: version.createdAt,
    published: agent.publishedVersion === version.number,
    draft: agent.draftVersion === version.number,
  };
}

/** The agent's versions, newest first, a page at a time. */
export async function listAgentVersions(deps: Pick<VersioningDeps, 'agents'>, orgId: string, agentId: string, query: ListVersionsQuery): Promise<Page<AgentVersionSummary>> {
  const agent = await existingAgent(deps, orgId, agentId);
  const versions = (await deps.agents.listVersions(orgId, agentId)).reverse();
  return paginate(versions.map((version) => summary(agent, version)), query.page, query.limit);
}

export async function getAgentVersion(deps: Pick<VersioningDeps, 'agents'>, orgId: string, agentId: string, number: number): Promise<AgentVersionView> {
  const agent = await existingAgent(deps, orgId, agentId);
  return view(agent, await existingVersion(deps, agent, number));
}

/** What changed from version `against` to version `number`: the configuration, and the tools' definitions by tool id. */
export async function diffAgentVersions(deps: Pick<VersioningDeps, 'agents'>, orgId: string, agentId: string, number: number, against: number) {
  const agent = await existingAgent(deps, orgId, agentId);
  const [from, to] = await Promise.all([existingVersion(deps, agent, against), existingVersion(deps, agent, number)]);
  return { agentId, from: against, to: number, changes: diffValues(comparable(from), comparable(to), '') };
}

function comparable(version: AgentVersion): Record<string, unknown> {
  const toolDefinitions = Object.fromEntries(version.tools.map(({ id, orgId: _orgId, createdAt: _createdAt, updatedAt: _updatedAt, ...definition }) => [id, definition]));
  return { ...version.configuration, toolDefinitions };
}

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The leaves that differ between two JSON values, by path (`voice.voiceId`, `tools[1].toolDescription`); an absent value is left out. */
export function diffValues(before: unknown, after: unknown, path: string): VersionChange[] {
  if (isPlainObject(before) && isPlainObject(after)) {
    const fields = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
    return fields.flatMap((field) => diffValues(before[field], after[field], path ? `${path}.${field}` : field));
  }
  if (Array.isArray(before) && Array.isArray(after)) {
    const length = Math.max(before.length, after.length);
    return Array.from({ length }, (_, index) => diffValues(before[index], after[index], `${path}[${index}]`)).flat();
  }
  if (before === after) return [];
  return [{ path, ...(before === undefined ? {} : { before }), ...(after === undefined ? {} : { after }) }];
}

/**
 * The agent as new sessions, calls and conversations see it: at its published version, whose number is its
 * `publishedVersion` (the binding to record). One read when the draft is what is published (always for `AUTO`).
 */
export async function publishedAgent(deps: Pick<VersioningDeps, 'agents'>, orgId: string, agentId: string): Promise<Agent | undefined> {
  const agent = await deps.agents.get(orgId, agentId);
  return agent && (await atPublishedVersion(deps, agent)).agent;
}

/** The agent read as it is stored, at its published version, with that version when it had to be read (an older version published over the draft). */
export async function atPublishedVersion(deps: Pick<VersioningDeps, 'agents'>, agent: Agent): Promise<{ agent: Agent; version?: AgentVersion }> {
  if (agent.publishedVersion === undefined || agent.publishedVersion === agent.draftVersion) return { agent };
  const version = await deps.agents.getVersion(agent.orgId, agent.id, agent.publishedVersion);
  return version ? { agent: agentAtVersion(agent, version), version } : { agent };
}

/**
 * What a session opened now records: a `MANUAL` agent's sessions are bound to the version published when they open
 * and keep it; an `AUTO` agent's follow its published version turn by turn, as before versions (no `agentVersion`).
 */
export function boundVersion(agent: Agent): { agentVersion?: number } {
  return agent.publishMode === 'MANUAL' && agent.publishedVersion !== undefined ? { agentVersion: agent.publishedVersion } : {};
}

/** The agent as a session answers with: at the version it is bound to, or (bound to none) at the published one. */
export async function agentOfSessionBinding(deps: Pick<VersioningDeps, 'agents'>, orgId: string, binding: { agentId: string; agentVersion?: number | undefined }): Promise<Agent | undefined> {
  if (binding.agentVersion === undefined) return publishedAgent(deps, orgId, binding.agentId);
  const [agent, version] = await Promise.all([deps.agents.get(orgId, binding.agentId), deps.agents.getVersion(orgId, binding.agentId, binding.agentVersion)]);
  return agent && version ? agentAtVersion(agent, version) : agent;
}
