import type { Ajv } from 'ajv';
import type { Config } from '../platform/config.ts';
import { ConcurrentModificationError, InvalidToolSchemaError, NotFoundError, ToolInUseError, ToolUrlNotAllowedError, ValidationError } from '../platform/errors.ts';
import {
  assertUrlAllowed,
  bareHostname,
  describeLoopbackPorts,
  EgressBlockedError,
  egressPolicyFromConfig,
  OutboundNetworkError,
  portOf,
  staticEgressRefusal,
  type Resolver,
} from '../platform/net/egress-guard.ts';
import { generateSigningSecret } from '../platform/net/standard-webhooks.ts';
import type { AgentStore, ToolStore } from './ports.ts';
import type { SealResponse } from '../platform/ports.ts';
import { compareBy, paginate, type Page } from '../platform/schemas/common.ts';
import type { CreateToolInput, ListToolsQuery, Tool, UpdateToolInput } from './tool-schemas.ts';
import { placeholderPattern } from './placeholders.ts';
import { newId, nextUpdatedAt, type Clock } from '../platform/clock.ts';
import type { Agent } from './agent-schemas.ts';
import type { VersionAuthor } from './agent-version-schemas.ts';
import { commitAgentChange } from './agent-versions.ts';

export interface ToolDeps {
  tools: ToolStore;
  agents: AgentStore;
  clock: Clock;
  config: Pick<Config, 'LOOPBACK_EGRESS_PORTS' | 'EGRESS_DENIED_PORTS'>;
  /** Name resolution for the registration check; the system resolver unless a test replaces it. */
  resolveHost?: Resolver | undefined;
}

/**
 * Each schema is compiled on its own and then dropped: the shared instance keeps nothing, so one organization's
 * `$id` can neither collide with nor be `$ref`erenced by another's, and memory does not grow with every schema.
 */
let schemaCompiler: Promise<Ajv> | undefined;
// Loaded when a tool is written: the functions that bundle this module for its reads need no ajv at init.
const compiler = () => (schemaCompiler ??= import('ajv').then(({ Ajv }) => new Ajv({ strict: false, allErrors: true, addUsedSchema: false })));

/**
 * A tool's parameters must be a JSON Schema that ajv compiles and that describes an object: models call tools
 * with an object of named arguments.
 */
export async function assertUsableToolSchema(schema: Record<string, unknown>): Promise<void> {
  if (schema.type !== undefined && schema.type !== 'object') {
    throw new InvalidToolSchemaError('ajvPropertiesSchema must describe an object (type "object").', {
      details: [{ field: 'ajvPropertiesSchema.type', message: 'must be "object"' }],
    });
  }
  const ajv = await compiler();
  try {
    ajv.compile(schema);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new InvalidToolSchemaError(`ajvPropertiesSchema is not a valid JSON Schema: ${reason}`, {
      cause: error,
      details: [{ field: 'ajvPropertiesSchema', message: reason }],
    });
  } finally {
    ajv.removeSchema(schema);
  }
}

const refusedTargets: Record<EgressBlockedError['addressClass'], string> = {
  public: 'a public address',
  loopback: 'a loopback host',
  private: 'a private address',
  shared: 'a shared (CGNAT) address',
  'link-local': 'a link-local address',
  metadata: 'a cloud metadata service',
  unspecified: 'an unspecified address',
  multicast: 'a multicast address',
  reserved: 'a reserved address',
  invalid: 'an invalid address',
  'platform-port': "a port of the platform's own services",
};

/** A registration waits this long for the tool's host to resolve; a name that does not answer by then is left to the call. */
export const toolHostResolutionTimeoutMs = 2_000;

/** `{{host}}` in the authority: the host is known only when the tool is called. */
const placeholderInHost = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*\{\{/i;

/**
 * Refuses a tool URL that the egress guard would refuse on every call, as a webhook URL is refused: judged from the
 * URL (scheme, port, IP literal, `localhost`, metadata names; a placeholder reads as a plain name), then from what its
 * host resolves to now (a name such as the machine's own host name that resolves to loopback on a port not opened to
 * it). A name that does not resolve now is left to the call, where the guard checks again as the socket connects.
 */
async function assertAllowedToolUrl(deps: Pick<ToolDeps, 'config' | 'resolveHost'>, field: 'apiTool.url' | 'functionTool.url', raw: string): Promise<void> {
  const url = new URL(raw.trim().replace(placeholderPattern, 'x'));
  const policy = egressPolicyFromConfig(deps.config);
  const fromUrl = staticEgressRefusal(url, policy);
  if (fromUrl instanceof OutboundNetworkError) refuseToolUrl(field, 'must be an http or https URL');
  if (fromUrl) refuseToolUrl(field, `must not point at ${refusedTarget(fromUrl.addressClass, url, deps.config)}`);
  if (placeholderInHost.test(raw.trim())) return;
  const resolved = await assertUrlAllowed(url, policy, deps.resolveHost, toolHostResolutionTimeoutMs).then(
    () => undefined,
    (error: unknown) => (error instanceof EgressBlockedError ? error : undefined),
  );
  if (resolved) refuseToolUrl(field, `must not point at ${bareHostname(url)}: it resolves to ${refusedTarget(resolved.addressClass, url, deps.config)}`);
}

function refuseToolUrl(field: string, message: string): never {
  throw new ToolUrlNotAllowedError(`${field} ${message}.`, { details: [{ field, message }] });
}

/** The target a refusal names; for loopback, the setting that would open it (on the local runtime, the fix). */
function refusedTarget(addressClass: EgressBlockedError['addressClass'], url: URL, config: ToolDeps['config']): string {
  if (addressClass !== 'loopback') return refusedTargets[addressClass];
  return `a loopback host on port ${portOf(url)}, which tools reach only where the deployment opens it to loopback egress (${describeLoopbackPorts(config.LOOPBACK_EGRESS_PORTS)})`;
}

async function assertAllowedToolUrls(deps: Pick<ToolDeps, 'config' | 'resolveHost'>, tool: Pick<CreateToolInput, 'apiTool' | 'functionTool'>): Promise<void> {
  if (tool.apiTool) await assertAllowedToolUrl(deps, 'apiTool.url', tool.apiTool.url);
  if (tool.functionTool) await assertAllowedToolUrl(deps, 'functionTool.url', tool.functionTool.url);
}

/** The checks a new tool's definition passes before anything is stored: its parameters' schema, then its URLs. */
export async function checkToolDefinition(deps: Pick<ToolDeps, 'config' | 'resolveHost'>, tool: Pick<CreateToolInput, 'ajvPropertiesSchema' | 'apiTool' | 'functionTool'>): Promise<void> {
  await assertUsableToolSchema(tool.ajvPropertiesSchema);
  await assertAllowedToolUrls(deps, tool);
}

/** A FUNCTION_TOOL with an endpoint gets a signing secret, shown in this response only. */
export async function createTool(deps: ToolDeps, orgId: string, input: CreateToolInput, sealResponse?: SealResponse): Promise<Tool> {
  await checkToolDefinition(deps, input);
  const now = deps.clock.now().toISOString();
  const tool: Tool = { id: newId(), orgId, ...input, createdAt: now, updatedAt: now };
  const secret = tool.functionTool ? generateSigningSecret() : undefined;
  const created = secret && tool.functionTool ? { ...tool, functionTool: { ...tool.functionTool, signingSecret: secret } } : tool;
  await deps.tools.create(tool, secret, sealResponse?.(created));
  return created;
}

export async function getTool(deps: Pick<ToolDeps, 'tools'>, orgId: string, toolId: string): Promise<Tool> {
  const tool = await deps.tools.get(orgId, toolId);
  if (!tool) throw new NotFoundError(`Tool ${toolId} not found.`);
  return tool;
}

export async function listTools(deps: Pick<ToolDeps, 'tools'>, orgId: string, query: ListToolsQuery): Promise<Page<Tool>> {
  const matching = (await deps.tools.list(orgId)).filter((tool) => query.type === undefined || tool.type === query.type);
  matching.sort(compareBy<Tool>(query.sort.field, query.sort.direction));
  return paginate(matching, query.page, query.limit);
}

/**
 * A version keeps its tools' definitions, so a changed tool makes a new version of each agent using it: published
 * at once for an `AUTO` agent (its next turns use the change, as before versions), a draft for a `MANUAL` one.
 */
export async function updateTool(deps: ToolDeps, orgId: string, toolId: string, changes: UpdateToolInput, author: VersionAuthor): Promise<Tool> {
  const previous = await getTool(deps, orgId, toolId);
  if (changes.ajvPropertiesSchema) await assertUsableToolSchema(changes.ajvPropertiesSchema);
  if (changes.apiTool && previous.type !== 'API_TOOL') {
    throw new ValidationError('apiTool can only be set on an API_TOOL.', {
      details: [{ field: 'apiTool', message: 'is only for API_TOOL' }],
    });
  }
  if (changes.functionTool && previous.type !== 'FUNCTION_TOOL') {
    throw new ValidationError('functionTool can only be set on a FUNCTION_TOOL.', {
      details: [{ field: 'functionTool', message: 'is only for FUNCTION_TOOL' }],
    });
  }
  await assertAllowedToolUrls(deps, changes);
  const { preExecutionMessage, ...rest } = changes;
  const next: Tool = { ...previous, ...rest, updatedAt: nextUpdatedAt(deps.clock, previous.updatedAt) };
  if (preExecutionMessage === null) delete next.preExecutionMessage;
  else if (preExecutionMessage !== undefined) next.preExecutionMessage = preExecutionMessage;
  // The first endpoint of a FUNCTION_TOOL brings its signing secret; a changed endpoint keeps the secret.
  const secret = changes.functionTool && !previous.functionTool ? generateSigningSecret() : undefined;
  await deps.tools.replace(previous, next, secret);
  await changeAgentsUsing(deps, orgId, toolId, author, (agent) => agent);
  return secret && next.functionTool ? { ...next, functionTool: { ...next.functionTool, signingSecret: secret } } : next;
}

/** Refuses while agents use the tool; with `force`, detaches it from each of them first. */
export async function deleteTool(deps: ToolDeps, orgId: string, toolId: string, force: boolean, author: VersionAuthor): Promise<void> {
  // A concurrent attach can land between detaching and deleting; a few rounds settle it.
  for (let round = 0; round < 3; round += 1) {
    const outcome = await deps.tools.delete(orgId, toolId);
    if (outcome === 'deleted') return;
    if (outcome === 'missing') throw new NotFoundError(`Tool ${toolId} not found.`);
    const users = (await deps.agents.list(orgId)).filter((agent) => agent.tools.some((tool) => tool.toolId === toolId));
    if (!force) {
      throw new ToolInUseError(
        `Tool ${toolId} is attached to ${users.length} agent(s): ${users.map((agent) => agent.id).join(', ')}. Detach it or delete with force=true.`,
      );
    }
    await changeAgentsUsing(deps, orgId, toolId, author, (agent) => ({ ...agent, tools: agent.tools.filter((tool) => tool.toolId !== toolId) }));
  }
  throw new ToolInUseError(`Tool ${toolId} kept being attached while it was being deleted; retry.`);
}

/** Makes a new version of each agent the tool is attached to, changed by `change`; an agent changed meanwhile is read again. */
async function changeAgentsUsing(deps: ToolDeps, orgId: string, toolId: string, author: VersionAuthor, change: (agent: Agent) => Agent): Promise<void> {
  const uses = (agent: Agent | undefined): agent is Agent => agent?.tools.some((tool) => tool.toolId === toolId) === true;
  for (const listed of (await deps.agents.list(orgId)).filter(uses)) {
    let agent: Agent | undefined = listed;
    for (let attempt = 0; uses(agent); attempt += 1) {
      try {
        await commitAgentChange(deps, agent, { ...change(agent), updatedAt: nextUpdatedAt(deps.clock, agent.updatedAt) }, author);
        break;
      } catch (error) {
        if (!(error instanceof ConcurrentModificationError) || attempt === 2) throw error;
        agent = await deps.agents.get(orgId, agent.id);
      }
    }
  }
}
