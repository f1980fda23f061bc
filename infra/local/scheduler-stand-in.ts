import { createServer, type IncomingMessage, type Server } from 'node:http';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { accountSqsRequests } from '../../shared/platform/cost-accounting.ts';
import { logger } from '../../shared/platform/logger.ts';
import type { LocalQueues } from './queues.ts';

export interface SchedulerStandIn {
  endpoint: string;
  port: number;
  /** Schedules created and not yet fired, by name. */
  pending(): string[];
  stop(): Promise<void>;
}

/**
 * EventBridge Scheduler for `npm start`: the part of its REST-JSON API the platform uses (`POST /schedules/{Name}`
 * with an `at(…)` expression and an SQS target), firing each schedule at its time by sending its `Input` to the
 * local queue of the target ARN, then deleting it (`ActionAfterCompletion: DELETE`). A second schedule of the same
 * name is a 409 ConflictException, as on AWS.
 */
export async function startSchedulerStandIn(queues: Pick<LocalQueues, 'clientConfig' | 'urlOf'>, options: { host?: string } = {}): Promise<SchedulerStandIn> {
  const host = options.host ?? '127.0.0.1';
  const client = new SQSClient(queues.clientConfig);
  accountSqsRequests(client, 'scheduler');
  const timers = new Map<string, NodeJS.Timeout>();
  const server: Server = createServer((request, response) => {
    void readJson(request).then(async (body) => {
      const name = /^\/schedules\/([^/?]+)/.exec(request.url ?? '')?.[1];
      const answer = (status: number, payload: object, errorType?: string) =>
        response.writeHead(status, { 'content-type': 'application/json', ...(errorType ? { 'x-amzn-errortype': errorType } : {}) }).end(JSON.stringify(payload));
      if (!name || request.method !== 'POST') return answer(404, { Message: 'Not found' }, 'ResourceNotFoundException');
      if (timers.has(name)) return answer(409, { Message: `Schedule ${name} already exists.` }, 'ConflictException');
      const at = /^at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)$/.exec(String(body.ScheduleExpression ?? ''))?.[1];
      const target = body.Target as { Arn?: string; Input?: string } | undefined;
      const queueName = target?.Arn?.split(':').at(-1);
      if (!at || !queueName || typeof target?.Input !== 'string') return answer(400, { Message: 'Only at(…) schedules with an SQS target are emulated.' }, 'ValidationException');
      const queueUrl = queues.urlOf(queueName);
      const delay = Math.max(0, Date.parse(`${at}Z`) - Date.now());
      const input = target.Input;
      timers.set(
        name,
        setTimeout(() => {
          timers.delete(name);
          // EventBridge Scheduler retries for 24 hours; the stand-in does not, so it says so loudly.
          void client.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: input })).catch((error: Error) => {
            logger.error('Scheduler stand-in: the queue could not take a schedule\'s input, it is lost', { schedule: name, queueUrl, error });
          });
        }, delay).unref(),
      );
      return answer(200, { ScheduleArn: `arn:aws:scheduler:local:000000000000:schedule/default/${name}` });
    });
  });
  await new Promise<void>((resolveListen) => server.listen(0, host, resolveListen));
  const port = (server.address() as { port: number }).port;
  return {
    endpoint: `http://${host}:${port}`,
    port,
    pending: () => [...timers.keys()],
    stop: async () => {
      for (const timer of timers.values()) clearTimeout(timer);
      timers.clear();
      client.destroy();
      server.closeAllConnections();
      await new Promise((resolveClose) => server.close(resolveClose));
    },
  };
}

function readJson(request: IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolveBody) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      try {
        resolveBody(JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>);
      } catch {
        resolveBody({});
      }
    });
  });
}
