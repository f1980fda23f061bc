import * as z from 'zod';
import { agentSchema, agentToolSchema, createAgentBody, handoffAgentSchema, maxHandoffAgents, maxToolsPerAgent } from './agent-schemas.ts';
import { analysisConfigProblems } from './analysis-config-schemas.ts';
import { createToolBody, toolSchema } from './tool-schemas.ts';
import { instant, requiredText } from '../platform/schemas/common.ts';

/** What a document says it is: a later format gets a new `formatVersion`, another kind of export another `kind`. */
export const agentExportKind = 'agent';
export const agentExportFormatVersion = 1;

/**
 * The import's body limit instead of `MAX_BODY_BYTES`: an agent with its 32 tools' schemas (16 KiB each) and its
 * prompts exports more than 256 KiB, and what the export writes the import must take; well inside a Lambda request (6 MB).
 */
export const maxAgentDocumentBytes = 5 * 1024 * 1024;

/** Stands where a secret was: the importing organization supplies the value (docs/agent-versions.md#export-and-import). */
export const redactedMarker = '__REDACTED__';

/** A value the document leaves out, by its path in the document, and what the importer must give instead. */
export const exportRedactionSchema = z.strictObject({
  field: z.string().max(500),
  message: z.string().max(500),
});

/** A tool the agent uses, as `POST /v1/chat/tools` takes it (with secrets replaced by the marker). */
const exportedToolSchema = createToolBody;

/** The agent's configuration, with other resources named instead of referenced by id: ids mean nothing in another organization. */
const exportedAgentSchema = createAgentBody.omit({ knowledgeStoreId: true, tools: true, handoffAgents: true }).extend({
  /** The knowledge store the agent answers from, by name; linked on import to the importing organization's store of that name. */
  knowledgeStore: z.strictObject({ name: requiredText(200) }).optional(),
  /** The tools attached, each by its `name` in the document's `tools`. */
  tools: z
    .array(agentToolSchema.omit({ toolId: true }).extend({ name: z.string().max(64) }))
    .max(maxToolsPerAgent)
    .default([]),
  /** Handoff targets by their `fullName`; linked on import to the importing organization's one agent of that name. */
  handoffAgents: z
    .array(handoffAgentSchema.omit({ agentId: true }).extend({ agentName: requiredText(200) }))
    .max(maxHandoffAgents)
    .optional(),
});

/** Tool names are unique per organization whatever their case; the document's are matched the same way. */
export const sameName = (name: string) => name.toLowerCase();

/**
 * The document `GET /v2/chat/agents/{id}/export` answers and `POST /v2/chat/agents/import` takes. Beyond each
 * field's own rules, the whole must hold together: tools named once, every attached tool defined, a voice agent with
 * a pipeline mode, an analysis configuration that `POST /v2/chat/agents` would accept.
 */
export const agentExportDocument = z
  .strictObject({
    kind: z.literal(agentExportKind),
    formatVersion: z.literal(agentExportFormatVersion),
    exportedAt: instant.optional(),
    agent: exportedAgentSchema,
    tools: z.array(exportedToolSchema).max(maxToolsPerAgent).default([]),
    /** Informative: what the export left out. The import looks at the document itself, not at this list. */
    redactions: z.array(exportRedactionSchema).max(10_000).default([]),
  })
  .superRefine((document, ctx) => {
    const defined = new Set<string>();
    document.tools.forEach((tool, index) => {
      if (defined.has(sameName(tool.name))) ctx.addIssue({ code: 'custom', path: ['tools', index, 'name'], message: 'must not define the same tool twice' });
      defined.add(sameName(tool.name));
    });
    const attached = new Set<string>();
    document.agent.tools.forEach((tool, index) => {
      if (!defined.has(sameName(tool.name))) ctx.addIssue({ code: 'custom', path: ['agent', 'tools', index, 'name'], message: 'names no tool of the document' });
      if (attached.has(sameName(tool.name))) ctx.addIssue({ code: 'custom', path: ['agent', 'tools', index, 'name'], message: 'must not attach the same tool twice' });
      attached.add(sameName(tool.name));
    });
    if (document.agent.voiceEnabled && !document.agent.voicePipelineMode) {
      ctx.addIssue({ code: 'custom', path: ['agent', 'voicePipelineMode'], message: 'is required when voiceEnabled is true (pipeline, sts or hybrid)' });
    }
    for (const problem of document.agent.analysis ? analysisConfigProblems(document.agent.analysis) : []) {
      ctx.addIssue({ code: 'custom', path: ['agent', ...problem.field.split('.')], message: problem.message });
    }
  });

/** `?version=n` exports that version of the agent instead of its draft. */
export const exportAgentQuery = z.object({ version: z.coerce.number<string>().int().min(1, { error: 'must be a version number (1, 2, …)' }).optional() });

/** The import's body: the export document as sent back (its own instance, so /openapi.json describes it as input). */
export const importAgentBody = agentExportDocument.describe('An agent export document, as GET /v2/chat/agents/{id}/export answers it.');

export const resupplyKinds = ['secret', 'signingSecret', 'knowledgeStore', 'handoffAgent', 'model', 'voice', 'phoneNumber'] as const;

/** Something the import could not carry over, and what the caller has to do about it. */
export const resupplySchema = z.object({
  kind: z.enum(resupplyKinds),
  /** Where it was in the document (`tools.0.apiTool.headers.Authorization`, `agent.knowledgeStore`). */
  field: z.string(),
  message: z.string(),
  /** The created tool that holds the marker, or whose signing secret is new. */
  toolId: z.uuid().optional(),
});

export const importedToolOutcomes = ['created', 'reused', 'renamed'] as const;

export const agentImportResult = z.object({
  agent: agentSchema,
  /** One per tool of the document, in its order; a created FUNCTION_TOOL carries its new `signingSecret`, shown only here. */
  tools: z.array(z.object({ name: z.string(), outcome: z.enum(importedToolOutcomes), tool: toolSchema })),
  resupply: z.array(resupplySchema),
});

export type AgentExportDocument = z.output<typeof agentExportDocument>;
export type ExportedTool = z.output<typeof exportedToolSchema>;
export type ExportedAgent = z.output<typeof exportedAgentSchema>;
export type ExportRedaction = z.output<typeof exportRedactionSchema>;
export type Resupply = z.output<typeof resupplySchema>;
export type AgentImportResult = z.output<typeof agentImportResult>;
