import * as z from 'zod';
import { isScope, scopes } from '../auth/scopes.ts';
import { instant, pageOf, paginationQuery, requiredText, sortQuery } from './common.ts';

export const createApiKeyBody = z.strictObject({
  name: requiredText(100),
  scopes: z
    .array(z.string().refine(isScope, { error: `must be one of ${scopes.join(', ')}` }))
    .min(1, { error: 'must hold at least one scope' })
    .transform((list) => [...new Set(list)]),
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
}) satisfies z.ZodType<ApiKey>;

export const apiKeyPage = pageOf(apiKeySchema);

/** The create response: the only time the key itself is shown. */
export const createdApiKeySchema = apiKeySchema.extend({ key: z.string() });
