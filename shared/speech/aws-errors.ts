import { SpeechProviderError } from './ports.ts';

/** An AWS SDK failure as a `SpeechProviderError`: retryable when AWS says the fault is its own, or throttles. */
export function awsServiceError(provider: string, error: unknown): SpeechProviderError {
  if (error instanceof SpeechProviderError) return error;
  const failure = error as { name?: string; message?: string; $fault?: string; $metadata?: { httpStatusCode?: number } };
  const status = failure.$metadata?.httpStatusCode;
  const retryable = failure.$fault === 'server' || status === 429 || status === undefined || /Throttl|LimitExceeded/.test(failure.name ?? '');
  return new SpeechProviderError(provider, `${failure.name ?? 'Error'}${status ? ` (HTTP ${status})` : ''}: ${failure.message ?? String(error)}`, retryable);
}
