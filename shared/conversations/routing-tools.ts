import type { LanguageModelV4FunctionTool } from '@ai-sdk/provider';
import * as z from 'zod';
import { transferModes, type Agent } from '../agents/agent-schemas.ts';
import type { AgentStore } from '../agents/ports.ts';
import { boundVersion } from '../agents/agent-versions.ts';
import { handoffTool, transferCallTool } from '../agents/tool-schemas.ts';
import type { Session } from './session-schemas.ts';

/**
 * The built-in tools that route a conversation elsewhere (docs/sessions.md#handoff, docs/voice.md#transfer): `transfer_call`
 * gives a call to a number of the agent's `transferDestinations`, `handoff` passes the session to one of its
 * `handoffAgents`. They run in the turn itself; what they decide is written with the turn's messages.
 */

/** A handoff, as `metadata.handoffs` lists them. */
export interface HandoffRecord {
  fromAgentId: string;
  toAgentId: string;
  /** A `MANUAL` target's published version at the handoff: it answers with that version for the rest of the session. */
  toAgentVersion?: number;
  reason?: string;
  at: string;
}

/** The transfer a call asked for, as `metadata.transfer` keeps it: the carrier's `<Connect>` action dials it. */
export const transferRecordSchema = z.object({
  number: z.string(),
  mode: z.enum(transferModes),
  description: z.string(),
  reason: z.string().optional(),
  /** What the destination hears before it is connected (warm transfers). */
  summary: z.string().optional(),
  requestedAt: z.string(),
});
export type TransferRecord = z.output<typeof transferRecordSchema>;

/** What a turn's routing tools changed: written in the transaction that writes the turn. */
export interface RoutingChange {
  handoff?: HandoffRecord;
  transfer?: TransferRecord;
}

/** The agent that answers the session now: the last handoff's target, or the agent that opened it. */
export function activeAgentId(session: Pick<Session, 'agentId' | 'metadata'>): string {
  const active = session.metadata.activeAgentId;
  return typeof active === 'string' ? active : session.agentId;
}

/** An agent and the version of it a session is bound to; none for an `AUTO` agent's session, which follows the published version. */
export interface AgentBinding {
  agentId: string;
  version?: number | undefined;
}

/** The agent that answers the session now, and the version it answers with (docs/agent-versions.md#binding). */
export function activeBinding(session: Pick<Session, 'agentId' | 'agentVersion' | 'metadata'>): AgentBinding {
  const active = session.metadata.activeAgentId;
  if (typeof active !== 'string') return { agentId: session.agentId, version: session.agentVersion };
  const version = session.metadata.activeAgentVersion;
  return { agentId: active, version: typeof version === 'number' ? version : undefined };
}

/** The routing tools the agent offers in this session: `transfer_call` on calls only. */
export function routingTools(agent: Agent, session: Pick<Session, 'type'>): LanguageModelV4FunctionTool[] {
  const tools: LanguageModelV4FunctionTool[] = [];
  const destinations = session.type === 'VOICE' ? (agent.transferDestinations ?? []) : [];
  if (destinations.length > 0) {
    tools.push({
      type: 'function',
      name: transferCallTool,
      description: `Transfer the call to a person at one of these numbers, when the caller needs them: ${destinations
        .map((destination) => `${destination.number} (${destination.description})`)
        .join('; ')}. Tell the caller before you transfer.`,
      inputSchema: {
        type: 'object',
        properties: {
          destination: { type: 'string', enum: destinations.map((destination) => destination.number) },
          reason: { type: 'string', description: 'Why the call is transferred.' },
          summary: { type: 'string', description: 'For the person who takes the call: what the caller wants, in one or two sentences.' },
        },
        required: ['destination'],
      },
    });
  }
  const agents = agent.handoffAgents ?? [];
  if (agents.length > 0) {
    tools.push({
      type: 'function',
      name: handoffTool,
      description: `Hand the conversation to another agent, who answers from the user's next message: ${agents
        .map((target) => `${target.agentId} (${target.description})`)
        .join('; ')}.`,
      inputSchema: {
        type: 'object',
        properties: {
          agentId: { type: 'string', enum: agents.map((target) => target.agentId) },
          reason: { type: 'string', description: 'Why the conversation is handed over.' },
        },
        required: ['agentId'],
      },
    });
  }
  return tools;
}

export interface RoutingOutcome {
  status: 'SUCCESS' | 'ERROR';
  result: string;
}

const text = (value: unknown): string | undefined => (typeof value === 'string' && value.trim() ? value.trim().slice(0, 1000) : undefined);

/**
 * Runs a routing tool the agent offered. A destination or agent the agent was not given is the model's error, told
 * to it as the tool's result; so is a second routing in one turn. A success records the change in `change`.
 */
export async function runRoutingTool(
  deps: { agents: AgentStore },
  name: string,
  args: Record<string, unknown>,
  context: { session: Session; agent: Agent; now: string },
  change: RoutingChange,
): Promise<RoutingOutcome> {
  if (change.handoff || change.transfer) return { status: 'ERROR', result: 'The conversation has already been routed in this turn.' };
  const { session, agent, now } = context;
  const reason = text(args.reason);
  if (name === transferCallTool) {
    const destination = (agent.transferDestinations ?? []).find((candidate) => candidate.number === args.destination);
    if (!destination) {
      const known = (agent.transferDestinations ?? []).map((candidate) => candidate.number).join(', ');
      return { status: 'ERROR', result: `No transfer destination ${String(args.destination)} is configured; the configured ones are: ${known}.` };
    }
    const summary = text(args.summary);
    change.transfer = {
      number: destination.number,
      mode: destination.mode,
      description: destination.description,
      ...(reason ? { reason } : {}),
      ...(summary ? { summary } : {}),
      requestedAt: now,
    };
    return { status: 'SUCCESS', result: `The call is being transferred to ${destination.number} (${destination.description}).` };
  }
  const listed = (agent.handoffAgents ?? []).some((target) => target.agentId === args.agentId);
  // Read in the session's own organization: an id of another organization's agent is never found.
  const target = listed && typeof args.agentId === 'string' ? await deps.agents.get(session.orgId, args.agentId) : undefined;
  if (!target) return { status: 'ERROR', result: `No agent ${String(args.agentId)} is available for a handoff.` };
  if (!target.isActive) return { status: 'ERROR', result: `Agent ${target.fullName} is inactive and cannot take the conversation.` };
  const pinned = boundVersion(target).agentVersion;
  change.handoff = {
    fromAgentId: agent.id,
    toAgentId: target.id,
    ...(pinned === undefined ? {} : { toAgentVersion: pinned }),
    ...(reason ? { reason } : {}),
    at: now,
  };
  return { status: 'SUCCESS', result: `The conversation is handed to ${target.fullName}, who answers from the next message.` };
}

/** The session's metadata once the change is applied: the active agent and its handoffs, and the transfer asked for. */
export function routedMetadata(metadata: Session['metadata'], change: RoutingChange): Session['metadata'] {
  const previous = Array.isArray(metadata.handoffs) ? (metadata.handoffs as unknown[]) : [];
  const { activeAgentVersion: _replaced, ...rest } = metadata;
  const handoff = change.handoff;
  return {
    ...(handoff ? rest : metadata),
    ...(handoff ? { activeAgentId: handoff.toAgentId, handoffs: [...previous, handoff] } : {}),
    ...(handoff?.toAgentVersion === undefined ? {} : { activeAgentVersion: handoff.toAgentVersion }),
    ...(change.transfer ? { transfer: change.transfer } : {}),
  };
}
