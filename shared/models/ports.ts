/** The ports of the models context: the organization's own provider keys (docs/models.md#your-own-provider-keys). */
import type { ProviderConnection, ProviderKey, ProviderKeyInput, ProviderKeyProvider } from './provider-key-schemas.ts';

export interface ProviderKeyStore {
  /** Stores (or replaces) the key, sealed; `createdAt` stays the first store's. */
  put(orgId: string, provider: ProviderKeyProvider, input: ProviderKeyInput, updatedAt: string): Promise<ProviderKey>;
  get(orgId: string, provider: ProviderKeyProvider): Promise<ProviderKey | undefined>;
  /** The organization's keys, secrets left sealed. */
  list(orgId: string): Promise<ProviderKey[]>;
  /** The key with its secret opened, for a model request. */
  connection(orgId: string, provider: ProviderKeyProvider): Promise<ProviderConnection | undefined>;
  delete(orgId: string, provider: ProviderKeyProvider): Promise<boolean>;
}
