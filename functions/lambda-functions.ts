import { queueConsumers, scheduledFunctions, tableStreamConsumers } from './consumers.ts';
import { routeGroups } from './route-groups.ts';
import { voiceRelayRoutes } from './voice-relay/routes.ts';

/**
 * Memory on Lambda where a declaration names none (docs/performance.md#bundles-init-and-memory, decision 422): a
 * route group's request is a few table calls, yet its cold start is CPU-bound module init, and Lambda's CPU share
 * grows with memory; a consumer works in batches where a cold start costs no one a wait.
 */
export const defaultMemoryMb = { routeGroup: 512, consumer: 256 } as const;

/** One Lambda function of the stack, as `npm run bench` measures it and the stack sizes it. */
export interface LambdaFunction {
  name: string;
  entry: string;
  kind: 'route group' | 'consumer' | 'scheduled';
  memoryMb: number;
  /** Calls a model (turns, analysis, embeddings): its bundle's target is the model functions' (bench/report.ts). */
  runsModels: boolean;
}

function declared(fn: { name: string; entry: string; memoryMb?: number | undefined }, kind: LambdaFunction['kind'], runsModels: boolean): LambdaFunction {
  return { name: fn.name, entry: fn.entry, kind, memoryMb: fn.memoryMb ?? (kind === 'route group' ? defaultMemoryMb.routeGroup : defaultMemoryMb.consumer), runsModels };
}

/** Every function the stack deploys: the route groups and the voice relay, the stream and queue consumers, the scheduled functions. */
export const lambdaFunctions: readonly LambdaFunction[] = [
  ...routeGroups.map((group) => declared(group, 'route group', Boolean(group.runsTurns || group.usesKnowledge))),
  declared(voiceRelayRoutes, 'route group', true),
  ...tableStreamConsumers.map((consumer) => declared(consumer, 'consumer', false)),
  ...queueConsumers.map((consumer) => declared(consumer, 'consumer', Boolean(consumer.invokesModels || consumer.queriesKnowledge || consumer.usesKnowledge))),
  ...scheduledFunctions.map((scheduled) => declared(scheduled, 'scheduled', false)),
];

/** A function's memory on Lambda, MB; a name no declaration has is a mistake. */
export function memoryMbOf(name: string): number {
  const fn = lambdaFunctions.find((candidate) => candidate.name === name);
  if (!fn) throw new Error(`No Lambda function is declared as ${name}`);
  return fn.memoryMb;
}
