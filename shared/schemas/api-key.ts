import * as z from 'zod';
import { isScope, scopes } from '../auth/scopes.ts';
import { paginationQuery, requiredText, sortQuery } from './common.ts';

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
