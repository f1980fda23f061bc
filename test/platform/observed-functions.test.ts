import { describe, expect, it, vi } from 'vitest';
import { queueConsumers, scheduledFunctions, tableStreamConsumers } from '../../functions/consumers.ts';
import { voiceRelayRoutes } from '../../functions/voice-relay/routes.ts';

/** The functions that build their handler with observedHandler, by the name they give it, and whether they trace. */
const observed = vi.hoisted(() => new Map<string, { traced: boolean }>());
vi.mock('../../shared/platform/invocation.ts', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../shared/platform/invocation.ts')>();
  return {
    observedHandler: (...args: Parameters<typeof actual.observedHandler>) => {
      observed.set(args[0], { traced: args[2]?.tracer !== undefined });
      return actual.observedHandler(...args);
    },
  };
});

describe('every function that is not a route group', () => {
  it('sends its metrics at the end of each invocation (observedHandler, under its own name); the voice relay, on the request path, is traced', async () => {
    const functions = [...tableStreamConsumers, ...queueConsumers, ...scheduledFunctions, voiceRelayRoutes];
    for (const { entry } of functions) await import(new URL(`../../${entry}`, import.meta.url).href);
    expect([...observed.keys()].sort()).toEqual(functions.map((fn) => fn.name).sort());
    for (const [name, { traced }] of observed) expect(traced, name).toBe(name === voiceRelayRoutes.name);
  }, 60_000);
});
