import * as z from 'zod';
import { analysisConfigSchema, type AnalysisConfig } from './analysis-config-schemas.ts';
import { ttsProviders } from '../models/voices.ts';
import { booleanQuery, e164, instant, optionalText, pageOf, paginationQuery, requiredText, sortQuery, timestamp } from '../platform/schemas/common.ts';

export const maxToolsPerAgent = 32;

/** A well-formed BCP-47 tag as Intl understands it (`en`, `en-US`, `pt-BR`, `zh-Hant-TW`). */
const bcp47 = z.string().refine(
  (tag) => {
    try {
      return Intl.getCanonicalLocales(tag).length === 1;
    } catch {
      return false;
    }
  },
  { error: 'must be a BCP-47 language tag such as en-US' },
);

export const voicePipelineModes = ['pipeline', 'sts', 'hybrid'] as const;

/** `AUTO`: every change is published at once (as before versions existed); `MANUAL`: changes stay a draft until published. */
export const publishModes = ['AUTO', 'MANUAL'] as const;
export type PublishMode = (typeof publishModes)[number];

/** How a call decides the caller has finished speaking: the STT provider's endpointing, or a silence threshold. */
export const endOfTurnOptions = ['STT_ENDPOINTING', 'SILENCE'] as const;

/** The voice of an agent's calls: a voice of `GET /v1/chat/voices`, and how turns start and end. */
export const agentVoiceSchema = z.strictObject({
  provider: z.enum(ttsProviders),
  voiceId: z.string().trim().min(1).max(100),
  endOfTurn: z.enum(endOfTurnOptions).optional(),
  /**
   * The silence after speech, in ms, that ends the caller's turn: the detector's threshold with `SILENCE`, the STT
   * provider's endpointing with `STT_ENDPOINTING` (docs/voice.md#the-media-worker). Unset: 600 ms, or the provider's own.
   */
  endOfTurnSilenceMs: z.int().min(100).max(5000).optional(),
  /** Spoken when the call connects, before the callee says anything. */
  welcomeMessage: optionalText(1000).optional(),
});
export type AgentVoice = z.output<typeof agentVoiceSchema>;

export const agentToolSchema = z.strictObject({
  toolId: z.uuid({ error: 'must be a UUID' }),
  toolDescription: optionalText(2000).optional(),
});

const agentToolsSchema = z
  .array(agentToolSchema)
  .max(maxToolsPerAgent)
  .refine((tools) => new Set(tools.map((tool) => tool.toolId)).size === tools.length, {
    error: 'must not attach the same tool twice',
  });

/** How a call is transferred: straight through (`cold`), or after a whispered summary to the destination (`warm`). */
export const transferModes = ['cold', 'warm'] as const;
export const maxTransferDestinations = 10;
export const maxHandoffAgents = 10;

/** A number the agent may transfer a call to (the built-in `transfer_call` tool); the description tells the model when. */
export const transferDestinationSchema = z.strictObject({
  number: e164,
  description: requiredText(500),
  mode: z.enum(transferModes).default('cold'),
});

/** Another agent of the organization the agent may hand the conversation to (the built-in `handoff` tool). */
export const handoffAgentSchema = z.strictObject({
  agentId: z.uuid({ error: 'must be a UUID' }),
  description: requiredText(500),
});

const transferDestinationsSchema = z
  .array(transferDestinationSchema)
  .max(maxTransferDestinations)
  .refine((destinations) => new Set(destinations.map((destination) => destination.number)).size === destinations.length, {
    error: 'must not list the same number twice',
  });

const handoffAgentsSchema = z
  .array(handoffAgentSchema)
  .max(maxHandoffAgents)
  .refine((agents) => new Set(agents.map((agent) => agent.agentId)).size === agents.length, { error: 'must not list the same agent twice' });

const modelId = z.uuid({ error: 'must be a UUID from GET /v1/chat/models' });

const agentFields = {
  fullName: requiredText(200),
  description: requiredText(2000),
  role: requiredText(8000),
  language: bcp47,
  systemPrompt: optionalText(32000),
  specialInstructions: optionalText(8000),
  modelId,
  sttModelId: modelId,
  ttsModelId: modelId,
  stsModelId: modelId,
  voiceEnabled: z.boolean(),
  voicePipelineMode: z.enum(voicePipelineModes).nullable(),
  knowledgeStoreId: z.string().trim().min(1).max(200),
  tools: agentToolsSchema,
  welcomeAllowInterruptions: z.boolean(),
  voice: agentVoiceSchema,
  analysis: analysisConfigSchema,
  transferDestinations: transferDestinationsSchema,
  handoffAgents: handoffAgentsSchema,
  publishMode: z.enum(publishModes),
};

export const createAgentBody = z.strictObject({
  fullName: agentFields.fullName,
  description: agentFields.description,
  role: agentFields.role,
  language: agentFields.language.optional(),
  systemPrompt: agentFields.systemPrompt.optional(),
  specialInstructions: agentFields.specialInstructions.optional(),
  modelId: agentFields.modelId.optional(),
  sttModelId: agentFields.sttModelId.optional(),
  ttsModelId: agentFields.ttsModelId.optional(),
  stsModelId: agentFields.stsModelId.optional(),
  voiceEnabled: agentFields.voiceEnabled.default(false),
  voicePipelineMode: agentFields.voicePipelineMode.optional(),
  knowledgeStoreId: agentFields.knowledgeStoreId.optional(),
  tools: agentFields.tools.default([]),
  welcomeAllowInterruptions: agentFields.welcomeAllowInterruptions.optional(),
  voice: agentFields.voice.optional(),
  analysis: agentFields.analysis.optional(),
  transferDestinations: agentFields.transferDestinations.optional(),
  handoffAgents: agentFields.handoffAgents.optional(),
  publishMode: agentFields.publishMode.default('AUTO'),
});

/** Every field optional; `null` clears an optional field. `isActive` and `isPublic` can be changed here only. */
export const updateAgentBody = z
  .strictObject({
    fullName: agentFields.fullName,
    description: agentFields.description,
    role: agentFields.role,
    language: agentFields.language.nullable(),
    systemPrompt: agentFields.systemPrompt.nullable(),
    specialInstructions: agentFields.specialInstructions.nullable(),
    modelId: agentFields.modelId,
    sttModelId: agentFields.sttModelId.nullable(),
    ttsModelId: agentFields.ttsModelId.nullable(),
    stsModelId: agentFields.stsModelId.nullable(),
    voiceEnabled: agentFields.voiceEnabled,
    voicePipelineMode: agentFields.voicePipelineMode,
    knowledgeStoreId: agentFields.knowledgeStoreId.nullable(),
    tools: agentFields.tools,
    welcomeAllowInterruptions: agentFields.welcomeAllowInterruptions,
    voice: agentFields.voice.nullable(),
    analysis: agentFields.analysis.nullable(),
    transferDestinations: agentFields.transferDestinations.nullable(),
    handoffAgents: agentFields.handoffAgents.nullable(),
    publishMode: agentFields.publishMode,
    isActive: z.boolean(),
    isPublic: z.boolean(),
  })
  .partial()
  .refine((body) => Object.keys(body).length > 0, { error: 'must change at least one field' });

export const listAgentsQuery = paginationQuery.extend({
  sort: sortQuery(['createdAt', 'updatedAt', 'fullName'], 'createdAt:desc'),
  isActive: booleanQuery.optional(),
  isPublic: booleanQuery.optional(),
  voiceEnabled: booleanQuery.optional(),
  createdAfter: timestamp.optional(),
  createdBefore: timestamp.optional(),
});

/** An agent as the API answers it. */
export const agentSchema = z.object({
  id: z.uuid(),
  orgId: z.string(),
  fullName: z.string(),
  description: z.string(),
  role: z.string(),
  language: z.string().optional(),
  systemPrompt: z.string().optional(),
  specialInstructions: z.string().optional(),
  modelId: z.uuid(),
  sttModelId: z.uuid().optional(),
  ttsModelId: z.uuid().optional(),
  stsModelId: z.uuid().optional(),
  voiceEnabled: z.boolean(),
  voicePipelineMode: z.enum(voicePipelineModes).nullable(),
  knowledgeStoreId: z.string().optional(),
  tools: z.array(agentToolSchema),
  welcomeAllowInterruptions: z.boolean().optional(),
  analysis: analysisConfigSchema.optional(),
  voice: agentVoiceSchema.optional(),
  transferDestinations: z.array(transferDestinationSchema).optional(),
  handoffAgents: z.array(handoffAgentSchema).optional(),
  publishMode: z.enum(publishModes),
  /** The latest version (what this agent shows); absent on an agent not changed since versions were introduced. */
  draftVersion: z.int().min(1).optional(),
  /** The version new sessions, calls and conversations bind to (docs/agent-versions.md). */
  publishedVersion: z.int().min(1).optional(),
  isActive: z.boolean(),
  isPublic: z.boolean(),
  createdAt: instant,
  updatedAt: instant,
}) satisfies z.ZodType<Agent>;

export const agentPage = pageOf(agentSchema);

export type CreateAgentInput = z.output<typeof createAgentBody>;
export type UpdateAgentInput = z.output<typeof updateAgentBody>;
export type ListAgentsQuery = z.output<typeof listAgentsQuery>;
export type AgentToolRef = z.output<typeof agentToolSchema>;
export type TransferDestination = z.output<typeof transferDestinationSchema>;
export type HandoffAgent = z.output<typeof handoffAgentSchema>;

export interface Agent {
  id: string;
  orgId: string;
  fullName: string;
  description: string;
  role: string;
  language?: string | undefined;
  systemPrompt?: string | undefined;
  specialInstructions?: string | undefined;
  modelId: string;
  sttModelId?: string | undefined;
  ttsModelId?: string | undefined;
  /** The STS model an `sts` agent's calls speak with; the deployment's first STS model when absent. */
  stsModelId?: string | undefined;
  voiceEnabled: boolean;
  voicePipelineMode: (typeof voicePipelineModes)[number] | null;
  knowledgeStoreId?: string | undefined;
  tools: AgentToolRef[];
  welcomeAllowInterruptions?: boolean | undefined;
  /** Calls: the TTS voice (checked against the voices catalog), end-of-turn option and welcome message. */
  voice?: AgentVoice | undefined;
  /** Post-session analysis; absent: only the summary is produced. */
  analysis?: AnalysisConfig | undefined;
  /** Calls: numbers the built-in `transfer_call` tool may transfer to (docs/voice.md#transfer). */
  transferDestinations?: TransferDestination[] | undefined;
  /** Agents of the same organization the built-in `handoff` tool may pass the conversation to. */
  handoffAgents?: HandoffAgent[] | undefined;
  publishMode: PublishMode;
  draftVersion?: number | undefined;
  publishedVersion?: number | undefined;
  isActive: boolean;
  isPublic: boolean;
  createdAt: string;
  updatedAt: string;
}
