import { setTimeout as sleep } from 'node:timers/promises';

export interface CredentialWatch {
  /** Aborted at the first refusal of the credential (a deleted key, an expired token, a lost scope): its reason. */
  refused: AbortSignal;
  /** Ends the checks; call it when the response is over. */
  stop(): void;
}

/**
 * Holds a response that outlives a moment (the event stream, a streamed reply) to the rule of a new request: every
 * `intervalMs` its credential is checked again with `reauthorize`, and the first rejection aborts `refused`, which
 * the response turns into its end. A check that cannot be made counts as a refusal, as a new request would fail.
 */
export function watchCredential(reauthorize: () => Promise<void>, intervalMs: number): CredentialWatch {
  const refused = new AbortController();
  const stopped = new AbortController();
  void (async () => {
    while (!stopped.signal.aborted) {
      await sleep(intervalMs, undefined, { signal: stopped.signal }).catch(() => undefined);
      if (stopped.signal.aborted) return;
      try {
        await reauthorize();
      } catch (refusal) {
        if (!stopped.signal.aborted) refused.abort(refusal);
        return;
      }
    }
  })();
  return { refused: refused.signal, stop: () => stopped.abort() };
}
