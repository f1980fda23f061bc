import * as z from 'zod';
import { instant, jsonRecord, optionalText, pageOf, paginationQuery, requiredText, sortQuery } from '../platform/schemas/common.ts';
import { storableJsonObject } from '../platform/schemas/storable-json.ts';
import { endConversationTool } from '../models/prompt-conventions.ts';

export const toolTypes = ['API_TOOL', 'FUNCTION_TOOL'] as const;
export const httpMethods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** The built-in tools an agent gets from its `transferDestinations` (calls only) and `handoffAgents`. */
export const transferCallTool = 'transfer_call';
export const handoffTool = 'handoff';

/** Names of the platform's built-in tools, which customer tools cannot shadow. */
export const reservedToolNames: ReadonlySet<string> = new Set([endConversationTool, transferCallTool, handoffTool]);

export const toolNamePattern = /^[A-Za-z0-9]+(_[A-Za-z0-9]+)*$/;

/** JSON Schema documents are bounded so that one tool cannot bloat every turn's prompt. */
export const maxToolSchemaBytes = 16 * 1024;

const toolUrl = z
  .string()
  .trim()
  .max(2048)
  .refine(
    (raw) => {
      // Placeholders may sit anywhere, even in the host, so they are swapped for a harmless word before parsing.
      try {
        const url = new URL(raw.replace(/\{\{\s*[A-Za-z0-9_]+\s*\}\}/g, 'x'));
        return url.protocol === 'http:' || url.protocol === 'https:';
      } catch {
        return false;
      }
    },
    { error: 'must be an http or https URL; {{name}} placeholders are allowed' },
  );

const headerName = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

export const apiToolSchema = z.strictObject({
  url: toolUrl,
  method: z
    .string()
    .transform((method) => method.toUpperCase())
    .pipe(z.enum(httpMethods, { error: `must be one of ${httpMethods.join(', ')}` })),
  headers: z
    .record(
      z.string().regex(headerName, { error: 'header names must be HTTP tokens' }).max(256),
      z.string().max(8192),
    )
    .refine((headers) => Object.keys(headers).length <= 50, { error: 'at most 50 headers' })
    .default({}),
});

/** A FUNCTION_TOOL's endpoint: our signed `tool.call` request goes there (docs/sessions.md). */
export const functionToolSchema = z.strictObject({
  url: z
    .url({ protocol: /^https?$/, error: 'must be an http or https URL' })
    .max(2048),
  timeoutMs: z.number().int().min(100).max(30_000).optional(),
});

const jsonSchemaObject = storableJsonObject({ maxBytes: maxToolSchemaBytes });

export const createToolBody = z
  .strictObject({
    name: z.string().max(64).regex(toolNamePattern, {
      error: 'must be letters and digits joined by single underscores, e.g. GET_WEATHER',
    }),
    description: requiredText(2000),
    type: z.enum(toolTypes),
    ajvPropertiesSchema: jsonSchemaObject.default({ type: 'object', properties: {} }),
    preExecutionMessage: optionalText(1000).optional(),
    apiTool: apiToolSchema.optional(),
    functionTool: functionToolSchema.optional(),
  })
  .superRefine((body, ctx) => {
    if (reservedToolNames.has(body.name.toLowerCase())) {
      ctx.addIssue({ code: 'custom', path: ['name'], message: 'is reserved for a built-in tool' });
    }
    if (body.type === 'API_TOOL' && !body.apiTool) {
      ctx.addIssue({ code: 'custom', path: ['apiTool'], message: 'is required for API_TOOL' });
    }
    if (body.type === 'FUNCTION_TOOL' && body.apiTool) {
      ctx.addIssue({ code: 'custom', path: ['apiTool'], message: 'is only for API_TOOL' });
    }
    if (body.type === 'API_TOOL' && body.functionTool) {
      ctx.addIssue({ code: 'custom', path: ['functionTool'], message: 'is only for FUNCTION_TOOL' });
    }
  });

/** `name` and `type` are accepted by the parser only to answer that they cannot change. */
export const updateToolBody = z
  .strictObject({
    name: z.unknown(),
    type: z.unknown(),
    description: requiredText(2000),
    ajvPropertiesSchema: jsonSchemaObject,
    preExecutionMessage: optionalText(1000).nullable(),
    apiTool: apiToolSchema,
    functionTool: functionToolSchema,
  })
  .partial()
  .superRefine((body, ctx) => {
    for (const field of ['name', 'type'] as const) {
      if (field in body) ctx.addIssue({ code: 'custom', path: [field], message: 'cannot be changed; create a new tool' });
    }
    if (Object.keys(body).length === 0) ctx.addIssue({ code: 'custom', path: [], message: 'must change at least one field' });
  })
  .transform(({ name: _name, type: _type, ...changes }) => changes);

export const listToolsQuery = paginationQuery.extend({
  sort: sortQuery(['createdAt', 'updatedAt', 'name'], 'createdAt:desc'),
  type: z.enum(toolTypes).optional(),
});

export const deleteToolQuery = z.object({
  force: z.enum(['true', 'false'], { error: 'must be true or false' }).default('false').transform((v) => v === 'true'),
});

export type CreateToolInput = z.output<typeof createToolBody>;
export type UpdateToolInput = z.output<typeof updateToolBody>;
export type ListToolsQuery = z.output<typeof listToolsQuery>;
export type ApiToolConfig = z.output<typeof apiToolSchema>;
export type FunctionToolConfig = z.output<typeof functionToolSchema> & { signingSecret?: string };

/** A tool as a turn runs it: with the secret its FUNCTION_TOOL requests are signed with. */
export type ExecutableTool = Tool & { functionSecret?: string | undefined };

export interface Tool {
  id: string;
  orgId: string;
  name: string;
  description: string;
  type: (typeof toolTypes)[number];
  ajvPropertiesSchema: Record<string, unknown>;
  preExecutionMessage?: string | undefined;
  apiTool?: ApiToolConfig | undefined;
  /** On the responses that create it, also `signingSecret`, shown only then. */
  functionTool?: FunctionToolConfig | undefined;
  createdAt: string;
  updatedAt: string;
}

export const toolSchema = z.object({
  id: z.uuid(),
  orgId: z.string(),
  name: z.string(),
  description: z.string(),
  type: z.enum(toolTypes),
  ajvPropertiesSchema: jsonRecord,
  preExecutionMessage: z.string().optional(),
  apiTool: z.object({ url: z.string(), method: z.enum(httpMethods), headers: z.record(z.string(), z.string()) }).optional(),
  functionTool: z
    .object({
      url: z.string(),
      timeoutMs: z.int().optional(),
      /** Shown only on the responses that create it (creation, and an update that turns it into a FUNCTION_TOOL). */
      signingSecret: z.string().optional(),
    })
    .optional(),
  createdAt: instant,
  updatedAt: instant,
}) satisfies z.ZodType<Tool>;

export const toolPage = pageOf(toolSchema);
