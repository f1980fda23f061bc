import { ChangeMessageVisibilityBatchCommand, CreateQueueCommand, SetQueueAttributesCommand, SQSClient, type SQSClientConfig } from '@aws-sdk/client-sqs';
import { startFauxqs, type FauxqsServer } from 'fauxqs';
import type { EventRule, QueueConsumer, TableStreamConsumer } from '../../functions/consumers.ts';
import { deadLetterQueueName, type QueueDefinition } from '../../shared/platform/queue/queue-definition.ts';
import type { RouteGroup } from '../../shared/platform/http/route.ts';
import { denyEgressTo } from './environment.ts';

/** The account id fauxqs puts in queue ARNs. */
export const localAccountId = '000000000000';

export interface LocalQueues {
  /** The emulator's endpoint, as handlers find it in SQS_ENDPOINT. */
  endpoint: string;
  region: string;
  /** Queue URLs by queue name, dead-letter queues (`deadLetterQueueName`) included. */
  urls: Readonly<Record<string, string>>;
  urlOf(queueName: string): string;
  arnOf(queueName: string): string;
  /** For SQS clients of the local runtime and tests: the endpoint, the region and placeholder credentials. */
  clientConfig: SQSClientConfig;
  stop(): Promise<void>;
}

/**
 * The local runtime's SQS: fauxqs in this process, with every queue the declarations name, each with its
 * dead-letter queue, and the handlers pointed at it through the variables they read on AWS. Persisted under
 * `dataDir` when given (messages survive restarts), in memory otherwise.
 *
 * @example
 * const queues = await startLocalQueues({ consumers: queueConsumers, rules: eventRules, dataDir: join(dataDir, 'queues') });
 */
export async function startLocalQueues(options: {
  consumers: readonly QueueConsumer[];
  rules: readonly EventRule[];
  /** Table-stream consumers that send to queues (`queueUrls`): they find the URLs in their variables. */
  streamConsumers?: readonly TableStreamConsumer[];
  /** Route groups that send to queues (`queueUrls`), likewise. */
  routeGroups?: readonly Pick<RouteGroup, 'queueUrls'>[];
  dataDir?: string;
  /** Replaces every queue's visibility timeout, so that tests see failed messages come back quickly. */
  visibilityTimeoutSeconds?: number;
  env?: NodeJS.ProcessEnv;
}): Promise<LocalQueues> {
  const env = options.env ?? process.env;
  const region = env.AWS_REGION ?? 'us-east-1';
  const definitions = distinctQueues([
    ...options.consumers.flatMap((consumer) => [consumer.queue, ...Object.values(consumer.sendsTo ?? {})]),
    ...options.rules.map((rule) => rule.target),
    ...[...(options.streamConsumers ?? []), ...(options.routeGroups ?? [])].flatMap((sender) => Object.values(sender.queueUrls ?? {})),
  ]);
  const server = await startFauxqs({ port: 0, logger: false, defaultRegion: region, dataDir: options.dataDir });
  const endpoint = `http://127.0.0.1:${server.port}`;
  const clientConfig: SQSClientConfig = { endpoint, region, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } };
  // fauxqs's own URLs name sqs.<region>.localhost, which does not resolve everywhere, and keep the port of the run
  // that created a persisted queue; fauxqs finds a queue by the last path segment, so this URL always reaches it.
  const urlOf = (queueName: string) => `${endpoint}/${localAccountId}/${queueName}`;
  const arnOf = (queueName: string) => `arn:aws:sqs:${region}:${localAccountId}:${queueName}`;
  const client = new SQSClient(clientConfig);
  const urls: Record<string, string> = {};
  try {
    for (const definition of definitions) {
      const deadLetterName = deadLetterQueueName(definition);
      // FifoQueue can only be given at creation, as on AWS.
      const creation = definition.fifo ? { Attributes: { FifoQueue: 'true' } } : {};
      await client.send(new CreateQueueCommand({ QueueName: deadLetterName, ...creation }));
      // Create, then set: a persisted queue takes the current declaration, as a deployment would.
      await client.send(new CreateQueueCommand({ QueueName: definition.name, ...creation }));
      await client.send(
        new SetQueueAttributesCommand({
          QueueUrl: urlOf(definition.name),
          Attributes: {
            VisibilityTimeout: String(options.visibilityTimeoutSeconds ?? definition.visibilityTimeoutSeconds),
            RedrivePolicy: JSON.stringify({ deadLetterTargetArn: arnOf(deadLetterName), maxReceiveCount: definition.maxReceiveCount }),
          },
        }),
      );
      urls[definition.name] = urlOf(definition.name);
      urls[deadLetterName] = urlOf(deadLetterName);
      await releaseInFlight(server, client, definition.name, urlOf(definition.name));
    }
  } catch (error) {
    await server.stop();
    throw error;
  } finally {
    client.destroy();
  }

  env.SQS_ENDPOINT = endpoint;
  denyEgressTo(endpoint, env);
  for (const consumer of options.consumers) {
    if (consumer.queueUrlVariable) env[consumer.queueUrlVariable] = urlOf(consumer.queue.name);
    for (const [variable, definition] of Object.entries(consumer.sendsTo ?? {})) env[variable] = urlOf(definition.name);
  }
  for (const sender of [...(options.streamConsumers ?? []), ...(options.routeGroups ?? [])]) {
    for (const [variable, definition] of Object.entries(sender.queueUrls ?? {})) env[variable] = urlOf(definition.name);
  }

  return {
    endpoint,
    region,
    urls,
    urlOf: (queueName) => {
      const url = urls[queueName];
      if (!url) throw new Error(`No local queue named ${queueName}`);
      return url;
    },
    arnOf,
    clientConfig,
    stop: () => server.stop(),
  };
}

/**
 * Makes the messages a previous run had received and not deleted visible again within a second. The consumers run in this
 * process, so after a crash (kill -9) none is still handling them: waiting out their visibility timeout (up to
 * minutes) would only delay them. Their receive counts stay, so a message that crashes its consumer every time
 * still reaches the dead-letter queue.
 */
async function releaseInFlight(server: FauxqsServer, client: SQSClient, queueName: string, queueUrl: string): Promise<void> {
  const receiptHandles = server.inspectQueue(queueName)?.messages.inflight.map((entry) => entry.receiptHandle) ?? [];
  for (let start = 0; start < receiptHandles.length; start += 10) {
    await client.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: queueUrl,
        // One second, not zero: fauxqs 2.4 fails to persist a change to zero (a NOT NULL receive count).
        Entries: receiptHandles.slice(start, start + 10).map((ReceiptHandle, index) => ({ Id: String(index), ReceiptHandle, VisibilityTimeout: 1 })),
      }),
    );
  }
}

/** Each queue once; one name declared with two different settings is a mistake in the declarations. */
function distinctQueues(definitions: readonly QueueDefinition[]): QueueDefinition[] {
  const byName = new Map<string, QueueDefinition>();
  for (const definition of definitions) {
    const known = byName.get(definition.name);
    if (known && (known.visibilityTimeoutSeconds !== definition.visibilityTimeoutSeconds || known.maxReceiveCount !== definition.maxReceiveCount || known.fifo !== definition.fifo)) {
      throw new Error(`Queue ${definition.name} is declared twice with different settings`);
    }
    byName.set(definition.name, definition);
  }
  return [...byName.values()];
}
