import type { Tracer } from '@aws-lambda-powertools/tracer';
import { logger } from './logger.ts';
import { metricsService } from './metrics.ts';

/** The Powertools Tracer module, as a function of the request path imports it (`() => import(...)`). */
export type TracerModule = typeof import('@aws-lambda-powertools/tracer');

/** A unit of traced work: a request, a relay message. */
export interface TraceSpan {
  /** Closes it; an error (a 5xx, a thrown one) is attached to it first. */
  end(error?: unknown): void;
}

let tracer: Tracer | undefined;
let loading: Promise<void> | undefined;
const untraced: TraceSpan = { end: () => undefined };

/**
 * Loads Powertools Tracer (X-Ray) once, on Lambda, in the functions the stack traces (X-Ray active tracing, and
 * POWERTOOLS_TRACE_ENABLED=true). The caller passes the import: only the functions of the request path bundle the
 * X-Ray SDK, and it is evaluated only where tracing is on, so locally and in tests tracing costs nothing. A tracer
 * that fails to load leaves the function untraced, never failing.
 */
export function startTracing(load: () => Promise<TracerModule>): Promise<void> {
  if (process.env.POWERTOOLS_TRACE_ENABLED !== 'true' || !process.env.AWS_LAMBDA_FUNCTION_NAME) return Promise.resolve();
  loading ??= load().then(
    ({ Tracer }) => {
      tracer = new Tracer({ serviceName: metricsService });
    },
    (error: unknown) => logger.error('tracing unavailable: the tracer did not load', { error: error as Error }),
  );
  return loading;
}

/**
 * An AWS SDK v3 client whose calls are subsegments of the trace, once the tracer is loaded; untouched otherwise.
 * Clients are built with the runtime, on the first invocation, after `startTracing` has settled.
 */
export function traceAwsClient<Client>(client: Client): Client {
  return tracer ? tracer.captureAWSv3Client(client) : client;
}

/**
 * A subsegment of the invocation's segment for `name`, annotated (cold start, service, `annotations`) so traces
 * can be searched by them; the calls made meanwhile nest in it. Without tracing it does nothing.
 */
export function openSpan(name: string, annotations: Readonly<Record<string, string>> = {}): TraceSpan {
  const active = tracer;
  const segment = active?.getSegment();
  if (!active || !segment) return untraced;
  const subsegment = segment.addNewSubsegment(`## ${name}`);
  active.setSegment(subsegment);
  active.annotateColdStart();
  active.addServiceNameAnnotation();
  for (const [key, value] of Object.entries(annotations)) active.putAnnotation(key, value);
  return {
    end(error) {
      if (error !== undefined) active.addErrorAsMetadata(error instanceof Error ? error : new Error(String(error)));
      subsegment.close();
      active.setSegment(segment);
    },
  };
}
