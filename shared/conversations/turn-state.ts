import type { Message } from './session-schemas.ts';
import type { AgentBinding } from './routing-tools.ts';

/**
 * Per-process state that makes turns fast without making them less exact: a queue per session (turns of one
 * session run one after another here; across processes, commits are ordered by the session's sequence), and
 * caches of facts that are either immutable or checked against the session's sequence number before use.
 */

/** A bounded map that forgets its oldest entries. */
class BoundedMap<K, V> extends Map<K, V> {
  private readonly limit: number;

  constructor(limit: number) {
    super();
    this.limit = limit;
  }

  override set(key: K, value: V): this {
    if (!this.has(key) && this.size >= this.limit) this.delete(this.keys().next().value as K);
    return super.set(key, value);
  }
}

/**
 * The agent (and version) that answers a session: it changes only by a handoff, which sets it here; other processes
 * see the session's `metadata.activeAgentId` and follow.
 */
export const agentOfSession = new BoundedMap<string, AgentBinding>(10_000);

/** The tool ids of an agent (`bindingKey`) as last read: a guess, to read the tools in the same round trip as the agent. */
export const lastKnownTools = new BoundedMap<string, string[]>(10_000);

/**
 * Messages never change once written, except a call's reply cut short by an interruption, which counts in the
 * session's `historyRevision`: a history is exact while the session's next sequence number and revision are the same.
 */
export const histories = new BoundedMap<string, { nextSeq: number; revision: number; messages: Message[] }>(2_000);

const queues = new Map<string, Promise<void>>();

/**
 * Waits for the session's earlier turns in this process, then holds the session until `release` is called.
 * Gives up (false) at the deadline.
 */
export async function queueTurn(sessionKey: string, deadline: number): Promise<{ acquired: boolean; release(): void }> {
  const previous = queues.get(sessionKey) ?? Promise.resolve();
  let release!: () => void;
  const mine = new Promise<void>((resolve) => (release = resolve));
  const tail = previous.then(() => mine);
  queues.set(sessionKey, tail);
  const done = () => {
    release();
    if (queues.get(sessionKey) === tail) queues.delete(sessionKey);
  };
  const waited = await Promise.race([
    previous.then(() => true),
    new Promise<false>((resolve) => setTimeout(() => resolve(false), Math.max(0, deadline - Date.now())).unref()),
  ]);
  if (!waited) {
    // Let later turns pass once the earlier ones are done, as if this one had run.
    void previous.then(done);
    return { acquired: false, release: () => undefined };
  }
  return { acquired: true, release: done };
}

/** The key of a binding in the caches: a version's tools never change, an unversioned agent's are a guess. */
export const bindingKey = (binding: AgentBinding): string => (binding.version === undefined ? binding.agentId : `${binding.agentId}#${binding.version}`);
