/** The ports of the platform context: the interfaces its use cases depend on, implemented by its adapters (issue 22 split shared/ports.ts by context). */

/** What a secret at rest belongs to: sealed under this context, it opens only with the same one. */
export interface SecretContext {
  orgId: string;
  purpose: 'webhook-secret' | 'function-tool-secret' | 'telephony-auth-token' | 'whatsapp-access-token' | 'whatsapp-app-secret' | 'whatsapp-verify-token' | 'provider-api-key';
  /** The id of the item that holds it (the endpoint, the tool). */
  id: string;
}

/**
 * Encrypts the secrets the stores keep (webhook and function-tool signing secrets) before they reach the table:
 * under a KMS key on AWS, a local key file on this machine (`shared/platform/secrets/`, docs/security.md#secrets-at-rest).
 */
export interface SecretCipher {
  /** The secret as the table holds it: `sealed:v1:…`, bound to `context`. */
  seal(plaintext: string, context: SecretContext): Promise<string>;
  /**
   * The secret a stored value holds; a value stored before secrets were sealed (no `sealed:` prefix) is returned as
   * is. Fails (SecretUnreadableError) when the value was sealed under another context, or altered.
   */
  open(stored: string, context: SecretContext): Promise<string>;
}

export interface StoredResponse {
  status: number;
  body: string;
  headers: Record<string, string>;
}

export type IdempotencyClaim =
  | { outcome: 'claimed'; claimId: string }
  | { outcome: 'replay'; response: StoredResponse }
  | { outcome: 'mismatch' }
  | { outcome: 'in-progress' };

export interface IdempotencyStore {
  /** Claims `key` for a request with this fingerprint, or says why it cannot be claimed. */
  claim(orgId: string, key: string, fingerprint: string): Promise<IdempotencyClaim>;
  /** Records the response of a claimed key in a write of its own. */
  complete(orgId: string, key: string, response: StoredResponse): Promise<void>;
  /** The response of a claimed key, sealed, for the store to record in the transaction that creates the resource. */
  seal(orgId: string, key: string, claimId: string, response: StoredResponse): IdempotencyCompletion;
  release(orgId: string, key: string): Promise<void>;
}

/**
 * Completes an idempotent request in the same transaction as the resource it created, so that no crash can
 * leave the resource without its recorded response (a retry then replays it instead of creating another).
 * Written only while the claim `claimId` still holds the key.
 */
export interface IdempotencyCompletion {
  orgId: string;
  keyDigest: string;
  claimId: string;
  sealedResponse: string;
}

/** Given to the operation of an idempotent request: seals the response body it is about to return. */
export type SealResponse = (body: unknown) => IdempotencyCompletion;

/** Where messages wait until they are due (`notBefore`, epoch ms; SQS, whose delay limit is the adapter's concern). */
export interface ScheduledQueue<Message extends { notBefore: number }> {
  schedule(messages: readonly Message[]): Promise<void>;
}

/** A metric of the platform's own (namespace `AgentPlatform`): declared once by the context that records it. */
export interface MetricDefinition {
  /** The CloudWatch metric name. */
  readonly name: string;
  readonly unit: 'Count' | 'Milliseconds' | 'None';
  /** What one point means; the dashboard and docs/deploy.md show it. */
  readonly description: string;
}

/**
 * Records operational metrics: CloudWatch metrics through the Embedded Metric Format on AWS, debug log lines
 * elsewhere (`shared/platform/metrics.ts`). Points are buffered and leave when the invocation ends.
 */
export interface MetricsRecorder {
  add(metric: MetricDefinition, value: number): void;
}
