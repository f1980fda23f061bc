import { flushMetrics } from './metrics.ts';
import { openSpan, startTracing, type TracerModule } from './tracing.ts';

/**
 * A Lambda handler (a table stream or queue consumer, the voice relay) that sends its invocation's metrics when
 * the invocation ends, and, given the tracer's import, traces each invocation as a span named `name`. The HTTP
 * pipeline (`http/handler.ts`) does the same for the route groups.
 *
 * @example
 * export const handler = observedHandler('webhook-delivery', async (event: SQSEvent) => ({ batchItemFailures: [] }));
 */
export function observedHandler<Args extends unknown[], Result>(
  name: string,
  handler: (...args: Args) => Promise<Result>,
  options: { tracer?: () => Promise<TracerModule> } = {},
): (...args: Args) => Promise<Result> {
  // Started with the module, so a cold start loads the tracer during init.
  const tracing = options.tracer ? startTracing(options.tracer) : Promise.resolve();
  return async (...args) => {
    await tracing;
    const span = openSpan(name);
    try {
      const result = await handler(...args);
      span.end();
      return result;
    } catch (error) {
      span.end(error);
      throw error;
    } finally {
      flushMetrics();
    }
  };
}
