import { logger } from '../../shared/platform/logger.ts';

/**
 * Scale-in protection of the task this worker runs in, through the ECS container agent's endpoint
 * (`$ECS_AGENT_URI/task-protection/v1/state`, no IAM needed): while the task carries calls, neither a scale-in nor a
 * deployment stops it; once it carries none, it may go (docs/deploy.md#the-media-worker).
 */
export interface TaskProtection {
  /** Says how many calls the task carries now: protects it from the first, renews before expiry, releases at none. */
  update(activeCalls: number): Promise<void>;
}

export interface TaskProtectionOptions {
  /** The agent's address, which ECS gives every container as ECS_AGENT_URI; without it (not on ECS) nothing is done. */
  agentUri: string | undefined;
  /** How long one request protects the task (1–2880 minutes); renewed when half of it has passed. */
  expiresInMinutes?: number;
  fetch?: typeof globalThis.fetch;
  now?: () => number;
}

/** What the agent answers: the protection as set, or why it was not (a failure of ECS, or an error of the request). */
interface AgentAnswer {
  protection?: { ProtectionEnabled: boolean; ExpirationDate?: string };
  failure?: { Reason?: string; Detail?: string };
  error?: { Code?: string; Message?: string };
}

/**
 * The task's protection, asked for only when it must change: a call on an unprotected task, half the protection's
 * time gone with calls still on, the last call ended. A failed request is logged and asked again at the next update,
 * so a call never waits for the agent. Updates run one after another, each with the count it was given.
 */
export function ecsTaskProtection(options: TaskProtectionOptions): TaskProtection {
  const { agentUri, expiresInMinutes = 60, fetch = globalThis.fetch, now = Date.now } = options;
  const lifetimeMs = expiresInMinutes * 60_000;
  /** When the protection the agent confirmed ends (0: not protected). */
  let protectedUntil = 0;
  let queue = Promise.resolve();

  async function apply(activeCalls: number): Promise<void> {
    const protect = activeCalls > 0;
    if (protect ? protectedUntil - now() > lifetimeMs / 2 : protectedUntil === 0) return;
    const body = protect ? { ProtectionEnabled: true, ExpiresInMinutes: expiresInMinutes } : { ProtectionEnabled: false };
    try {
      const response = await fetch(`${agentUri}/task-protection/v1/state`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const answer = (await response.json().catch(() => ({}))) as AgentAnswer;
      if (!response.ok || !answer.protection) throw new Error(describe(response.status, answer));
      protectedUntil = answer.protection.ProtectionEnabled ? now() + lifetimeMs : 0;
    } catch (error) {
      logger.warn('task protection not changed; asked again at the next update', { protect, activeCalls, error: (error as Error).message });
    }
  }

  return {
    update(activeCalls) {
      if (!agentUri) return Promise.resolve();
      queue = queue.then(() => apply(activeCalls));
      return queue;
    },
  };
}

function describe(status: number, answer: AgentAnswer): string {
  const reason = answer.failure ? `${answer.failure.Reason ?? ''} ${answer.failure.Detail ?? ''}` : answer.error ? `${answer.error.Code ?? ''} ${answer.error.Message ?? ''}` : 'no protection in the answer';
  return `the ECS agent answered ${status}: ${reason.trim()}`;
}
