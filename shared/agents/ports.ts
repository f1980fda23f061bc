/** The ports of the agents context: the interfaces its use cases depend on, implemented by its adapters (issue 22 split shared/ports.ts by context). */
import type { Agent } from './agent-schemas.ts';
import type { AgentVersion } from './agent-version-schemas.ts';
import type { DomainEvent } from '../events/events.ts';
import type { ExecutableTool, Tool } from './tool-schemas.ts';
import type { IdempotencyCompletion } from '../platform/ports.ts';

/** What an agent write records besides the agent: the version it makes (if any) and its events. */
export interface AgentChange {
  version?: AgentVersion | undefined;
  events: DomainEvent[];
}

export interface AgentStore {
  /** Throws ToolsNotFoundError when an attached tool does not exist (checked in the same transaction). */
  create(agent: Agent, change: AgentChange, completion?: IdempotencyCompletion): Promise<void>;
  get(orgId: string, agentId: string): Promise<Agent | undefined>;
  list(orgId: string): Promise<Agent[]>;
  /** Writes `next` (and the change's version and events) if the stored agent is still `previous`; throws ConcurrentModificationError otherwise. */
  replace(previous: Agent, next: Agent, change: AgentChange): Promise<void>;
  getVersion(orgId: string, agentId: string, number: number): Promise<AgentVersion | undefined>;
  /** Every version of the agent, oldest first. */
  listVersions(orgId: string, agentId: string): Promise<AgentVersion[]>;
  delete(orgId: string, agentId: string): Promise<boolean>;
}

export interface ToolStore {
  /** Throws ToolNameTakenError when the organization already has a tool of that name. */
  create(tool: Tool, functionSecret?: string, completion?: IdempotencyCompletion): Promise<void>;
  get(orgId: string, toolId: string): Promise<Tool | undefined>;
  /** Tools by id with the secret their FUNCTION_TOOL requests are signed with, for running them. */
  executableTools(orgId: string, toolIds: readonly string[]): Promise<ExecutableTool[]>;
  /** Tools by id without their secrets, in one batch; missing ones are left out. */
  definitions(orgId: string, toolIds: readonly string[]): Promise<Tool[]>;
  list(orgId: string): Promise<Tool[]>;
  /** `functionSecret`, when given, becomes the tool's new signing secret. */
  replace(previous: Tool, next: Tool, functionSecret?: string): Promise<void>;
  /** Deletes an unattached tool; 'attached' when an agent still uses it, 'missing' when there is none. */
  delete(orgId: string, toolId: string): Promise<'deleted' | 'attached' | 'missing'>;
}
