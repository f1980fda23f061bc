import { PassThrough, Writable } from 'node:stream';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { installAwsLambdaGlobal } from '../../infra/local/awslambda.ts';
import { localLambdaContext } from '../../infra/local/lambda-context.ts';
import { createHttpHandler, StreamingBody, type PipelineDeps } from '../../shared/platform/http/handler.ts';
import { defineRouteGroup } from '../../shared/platform/http/route.ts';
import { observedHandler } from '../../shared/platform/invocation.ts';
import { logger } from '../../shared/platform/logger.ts';
import { emfMetrics, flushMetrics, metricsNamespace, metricsService } from '../../shared/platform/metrics.ts';
import type { MetricDefinition } from '../../shared/platform/ports.ts';
import { traceAwsClient } from '../../shared/platform/tracing.ts';
import { documentedEmfExample, emfProblems } from '../support/emf.ts';
import { eventually } from '../support/eventually.ts';

const probes = { name: 'Probes', unit: 'Count', description: 'test points' } as const satisfies MetricDefinition;
const probeTime = { name: 'ProbeTime', unit: 'Milliseconds', description: 'test timings' } as const satisfies MetricDefinition;

type EmfDocument = Record<string, unknown> & { _aws: { CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[] } };

/** What leaves through stdout and through the DEBUG log while `run` runs. */
async function captured(run: (sofar: { stdout: string[]; debug: EmfDocument[] }) => unknown): Promise<{ stdout: string[]; debug: EmfDocument[] }> {
  const stdout: string[] = [];
  const debug: EmfDocument[] = [];
  const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout.push(String(chunk));
    return true;
  });
  const log = vi.spyOn(logger, 'debug').mockImplementation((message: unknown, ...extra: unknown[]) => {
    if (message === 'metrics') debug.push((extra[0] as { emf: EmfDocument }).emf);
  });
  try {
    await run({ stdout, debug });
  } finally {
    write.mockRestore();
    log.mockRestore();
  }
  return { stdout, debug };
}

afterEach(() => {
  delete process.env.AWS_LAMBDA_FUNCTION_NAME;
  flushMetrics();
});

describe('the Embedded Metric Format check', () => {
  it("accepts the specification's example and refuses a document whose metric or dimension has no member", () => {
    expect(emfProblems(documentedEmfExample)).toEqual([]);
    const { time: _time, ...withoutValue } = documentedEmfExample;
    expect(emfProblems(withoutValue)).toHaveLength(1);
    expect(emfProblems({ ...documentedEmfExample, functionVersion: 7 })).toHaveLength(1);
    expect(emfProblems({ ...documentedEmfExample, time: Array.from({ length: 101 }, () => 1) })).toHaveLength(1);
  });
});

describe('metrics on Lambda', () => {
  it('leave as one EMF document on stdout per flush, in the namespace, with the service dimension and every point', async () => {
    process.env.AWS_LAMBDA_FUNCTION_NAME = 'agent-platform-test';
    const { stdout, debug } = await captured(() => {
      emfMetrics.add(probes, 1);
      emfMetrics.add(probeTime, 12.5);
      emfMetrics.add(probeTime, 7);
      flushMetrics();
      flushMetrics();
    });
    expect(debug).toEqual([]);
    expect(stdout).toHaveLength(1);
    const document = JSON.parse(stdout[0] as string) as EmfDocument;
    expect(emfProblems(document)).toEqual([]);
    expect(document._aws.CloudWatchMetrics).toEqual([
      {
        Namespace: metricsNamespace,
        Dimensions: [['service']],
        Metrics: [
          { Name: 'Probes', Unit: 'Count' },
          { Name: 'ProbeTime', Unit: 'Milliseconds' },
        ],
      },
    ]);
    expect(document).toMatchObject({ service: metricsService, Probes: 1, ProbeTime: [12.5, 7] });
  });
});

describe('metrics elsewhere (npm start, tests, the bench)', () => {
  it('go to the log at DEBUG, the same document, and never to stdout', async () => {
    const { stdout, debug } = await captured(() => {
      emfMetrics.add(probes, 2);
      flushMetrics();
    });
    expect(stdout).toEqual([]);
    expect(debug).toHaveLength(1);
    expect(emfProblems(debug[0])).toEqual([]);
    expect(debug[0]).toMatchObject({ service: metricsService, Probes: 2 });
  });
});

describe('an invocation', () => {
  const event = (routeKey: string): APIGatewayProxyEventV2 =>
    ({ routeKey, rawPath: routeKey.split(' ')[1], rawQueryString: '', headers: {}, isBase64Encoded: false, requestContext: { requestId: 'req-1', http: { method: 'GET' } } }) as unknown as APIGatewayProxyEventV2;
  const deps = () => ({ config: { MAX_BODY_BYTES: 1_000 } }) as unknown as PipelineDeps;
  const context = () => localLambdaContext('probe', 'req-1', Date.now() + 10_000);

  it('of a route sends its metrics once its response is made, a failed one too', async () => {
    const group = defineRouteGroup({
      name: 'probe',
      entry: 'test',
      routes: {
        count: { method: 'GET', path: '/count', scope: 'public', summary: 'Counts', successStatus: 200, internal: true },
        fail: { method: 'GET', path: '/fail', scope: 'public', summary: 'Fails', successStatus: 200, internal: true },
      },
    });
    const handler = createHttpHandler(
      group,
      {
        count: async () => {
          emfMetrics.add(probes, 1);
          return { counted: true };
        },
        fail: async () => {
          emfMetrics.add(probes, 3);
          throw new Error('boom');
        },
      },
      deps,
    );
    const { debug } = await captured(async () => {
      expect((await handler(event('GET /count'), context() as Context)).statusCode).toBe(200);
      expect((await handler(event('GET /fail'), context() as Context)).statusCode).toBe(500);
    });
    expect(debug.map((document) => document.Probes)).toEqual([1, 3]);
  });

  it('of a streamed route sends its metrics when the stream has ended, not when the handler returns', async () => {
    installAwsLambdaGlobal();
    let finish: (() => void) | undefined;
    const group = defineRouteGroup({
      name: 'probe-stream',
      entry: 'test',
      streaming: true,
      routes: { stream: { method: 'GET', path: '/stream', scope: 'public', summary: 'Streams', successStatus: 200, internal: true } },
    });
    const handler = createHttpHandler(
      group,
      {
        stream: async () => {
          emfMetrics.add(probes, 1);
          const body = new PassThrough();
          body.write('data: 1\n\n');
          finish = () => {
            emfMetrics.add(probeTime, 40);
            body.end('data: [DONE]\n\n');
          };
          return new StreamingBody(body, { 'content-type': 'text/event-stream' });
        },
      },
      deps,
    ) as unknown as (event: APIGatewayProxyEventV2, stream: Writable, context: Context) => Promise<void>;
    const received: string[] = [];
    const response = Object.assign(
      new Writable({
        write(chunk, _encoding, callback) {
          received.push(String(chunk));
          callback();
        },
      }),
      { setPrelude: () => undefined },
    );
    const { debug } = await captured(async (sofar) => {
      const done = handler(event('GET /stream'), response, context() as Context);
      // The body is piped only once the pipeline has returned: a flush at that point would show by now.
      await eventually(() => received.join(''), (text) => text.includes('data: 1'));
      expect(sofar.debug).toEqual([]);
      finish?.();
      await done;
    });
    expect(received.join('')).toContain('[DONE]');
    expect(debug).toHaveLength(1);
    expect(debug[0]).toMatchObject({ Probes: 1, ProbeTime: 40 });
  });

  it('of a consumer sends its metrics when it returns or throws, and passes its result and error on', async () => {
    const consumer = observedHandler('probe-consumer', async (records: number[]) => {
      emfMetrics.add(probes, records.length);
      if (records.length === 0) throw new Error('no records');
      return { batchItemFailures: [] };
    });
    const { debug } = await captured(async () => {
      expect(await consumer([1, 2])).toEqual({ batchItemFailures: [] });
      await expect(consumer([])).rejects.toThrow('no records');
    });
    expect(debug.map((document) => document.Probes)).toEqual([2, 0]);
  });
});

describe('tracing off (npm start, tests, a function the stack does not trace)', () => {
  it('leaves AWS SDK clients as they are, and loads no tracer', async () => {
    const client = { middlewareStack: { add: () => { throw new Error('instrumented'); } } };
    expect(traceAwsClient(client)).toBe(client);
    const load = vi.fn(() => import('@aws-lambda-powertools/tracer'));
    const handler = observedHandler('probe-traced', async () => 'ok', { tracer: load });
    expect(await handler()).toBe('ok');
    expect(load).not.toHaveBeenCalled();
  });
});
