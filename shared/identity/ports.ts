/** The ports of the identity context: the interfaces its use cases depend on, implemented by its adapters (issue 22 split shared/ports.ts by context). */
import type { ApiKey } from './api-key-schemas.ts';
import type { IdempotencyCompletion } from '../platform/ports.ts';

export interface Organization {
  id: string;
  name: string;
  createdAt: string;
}

export interface OrgStore {
  /** Creates the organization unless it exists; returns the stored one either way. */
  ensure(org: Organization): Promise<Organization>;
  get(orgId: string): Promise<Organization | undefined>;
}

export interface KeyIdentity {
  orgId: string;
  keyId: string;
  scopes: string[];
  rateLimit?: { requestsPerSecond: number; burst: number } | undefined;
  keyHash: string;
}

export interface ApiKeyStore {
  /** Stores the key and its hash lookup together; false when that hash is already registered. */
  create(key: ApiKey, keyHash: string, completion?: IdempotencyCompletion): Promise<boolean>;
  list(orgId: string): Promise<ApiKey[]>;
  delete(orgId: string, keyId: string): Promise<boolean>;
  findByHash(keyHash: string): Promise<KeyIdentity | undefined>;
  recordUse(orgId: string, keyId: string, at: string): Promise<void>;
}
