import * as z from 'zod';
import { agentSchema, type Agent } from './agent-schemas.ts';
import { toolSchema, type Tool } from './tool-schemas.ts';
import { idParams, instant, pageOf, paginationQuery } from '../platform/schemas/common.ts';

/**
 * The agent's fields that are not part of a version's configuration: its identity, its lifecycle and its switches
 * (`isActive`, `isPublic` take effect at once whatever is published).
 */
export const lifecycleFields = ['id', 'orgId', 'publishMode', 'draftVersion', 'publishedVersion', 'isActive', 'isPublic', 'createdAt', 'updatedAt'] as const;
type LifecycleField = (typeof lifecycleFields)[number];

/** What a version fixes: every field of the agent but its lifecycle ones. */
export type AgentConfiguration = Omit<Agent, LifecycleField>;

/** Who made a version: the API key, or the JWT's subject (absent when the token has none). */
export const versionAuthorSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('API_KEY'), keyId: z.string() }),
  z.object({ type: z.literal('JWT'), subject: z.string().nullable() }),
]);
export type VersionAuthor = z.output<typeof versionAuthorSchema>;

export interface AgentVersion {
  orgId: string;
  agentId: string;
  number: number;
  author: VersionAuthor;
  createdAt: string;
  configuration: AgentConfiguration;
  /** The definitions of the tools `configuration.tools` names, as they were when the version was made. */
  tools: Tool[];
}

const configurationSchema = agentSchema.omit(Object.fromEntries(lifecycleFields.map((field) => [field, true])) as { [Field in LifecycleField]: true });

const versionSummaryFields = {
  agentId: z.uuid(),
  number: z.int().min(1),
  author: versionAuthorSchema,
  createdAt: instant,
  /** Whether this is the version new sessions bind to. */
  published: z.boolean(),
  /** Whether this is the agent's latest version (what `GET /v2/chat/agents/{id}` shows). */
  draft: z.boolean(),
};

export const agentVersionSummarySchema = z.object(versionSummaryFields);
export const agentVersionSchema = z.object({ ...versionSummaryFields, configuration: configurationSchema, tools: z.array(toolSchema) });
export const agentVersionPage = pageOf(agentVersionSummarySchema);

export const versionParams = idParams.extend({ number: z.coerce.number<string>().int().min(1, { error: 'must be a version number (1, 2, …)' }) });
export const listVersionsQuery = paginationQuery;
export const publishBody = z.strictObject({ version: z.int().min(1).optional() }).default({});
export const rollbackBody = z.strictObject({ version: z.int().min(1) });
export const diffQuery = z.object({ against: z.coerce.number<string>().int().min(1, { error: 'must be a version number (1, 2, …)' }) });

/** One changed field of a diff: its path (`tools[0].toolDescription`, `voice.voiceId`) and its values; absent values are omitted. */
export const versionChangeSchema = z.object({ path: z.string(), before: z.unknown().optional(), after: z.unknown().optional() });
export const versionDiffSchema = z.object({ agentId: z.uuid(), from: z.int(), to: z.int(), changes: z.array(versionChangeSchema) });

export type AgentVersionView = z.output<typeof agentVersionSchema>;
export type AgentVersionSummary = z.output<typeof agentVersionSummarySchema>;
export type VersionChange = z.output<typeof versionChangeSchema>;
export type ListVersionsQuery = z.output<typeof listVersionsQuery>;
