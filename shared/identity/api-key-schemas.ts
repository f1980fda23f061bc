import * as z from 'zod';
import { isScope, scopes } from '../platform/http/scopes.ts';
import { instant, pageOf, paginationQuery, requiredText, sortQuery } from '../platform/schemas/common.ts';

export const createApiKeyBody = z.strictObject({
  name: requiredText(100),
  scopes: z
    .array(z.string().refine(isScope, { error: `must be one of ${scopes.join(', ')}` }))
    .min(1, { error: 'must hold at least one scope' })
    .transform((list) => [...new Set(list)]),
  /** A limit of the key's own, below its organization's plan (docs/usage-and-billing.md#rate-limits). */
  rateLimit: z.strictObject({ requestsPerSecond: z.number().positive().max(10_000), burst: z.number().int().min(1).max(100_000) }).optional(),
});

export const listApiKeysQuery = paginationQuery.extend({
  sort: sortQuery(['createdAt', 'name', 'lastUsedAt'], 'createdAt:desc'),
});

export type CreateApiKeyInput = z.output<typeof createApiKeyBody>;

/** What the API shows of a key; the key itself appears once, in the create response. */
export interface ApiKey {
  id: string;
  orgId: string;
  name: string;
  scopes: string[];
  rateLimit?: { requestsPerSecond: number; burst: number } | undefined;
  prefix: string;
  createdAt: string;
  lastUsedAt?: string | undefined;
}

export const apiKeySchema = z.object({
  id: z.uuid(),
  orgId: z.string(),
  name: z.string(),
  scopes: z.array(z.string()),
  /** The key's first characters, to tell keys apart. */
  prefix: z.string(),
  createdAt: instant,
  lastUsedAt: instant.optional(),
  /** The key's own rate limit, below its organization's, when it was created with one. */
  rateLimit: z.object({ requestsPerSecond: z.number(), burst: z.int() }).optional(),
}) satisfies z.ZodType<ApiKey>;

export const apiKeyPage = pageOf(apiKeySchema);

/** The create response: the only time the key itself is shown. */
export const createdApiKeySchema = apiKeySchema.extend({ key: z.string() });
