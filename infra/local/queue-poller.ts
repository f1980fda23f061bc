import {
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  SQSClient,
  type Message,
  type MessageAttributeValue,
} from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSMessageAttributes, SQSRecord, SQSRecordAttributes } from 'aws-lambda';
import type { QueueConsumer } from '../../functions/consumers.ts';
import { functionSettings } from '../../functions/settings.ts';
import { accountSqsRequests } from '../../shared/platform/cost-accounting.ts';
import { logger } from '../../shared/platform/logger.ts';
import { createLocalFunction, EnvironmentError, type LocalFunction } from './lambda-worker.ts';
import type { LocalQueues } from './queues.ts';

export interface QueuePollers {
  /** Kills the consumer's execution environment mid-invocation: nothing it was handling is deleted. */
  crash(consumerName: string): Promise<void>;
  /** Stops polling, waits (bounded) for the invocations under way, then ends the execution environments. */
  stop(): Promise<void>;
}

/**
 * What Lambda's SQS event source mapping does on AWS, for the local runtime: pollers receive batches from each
 * consumer's queue and invoke the consumer (in its own execution environment, `lambda-worker.ts`) with the
 * `SQSEvent` Lambda would build; every record not reported in `batchItemFailures` is deleted. A failed
 * invocation deletes nothing: its messages come back after the visibility timeout, and go to the dead-letter
 * queue after the queue's `maxReceiveCount` receives.
 */
export function startQueuePollers(options: {
  queues: Pick<LocalQueues, 'clientConfig' | 'urlOf' | 'arnOf' | 'region'>;
  consumers: readonly QueueConsumer[];
  /** Pollers per consumer, each with at most one invocation under way (Lambda starts with five). */
  concurrency?: number;
  /** Long-poll wait, SQS's longest by default: an idle queue costs one request per poller every 20 s. */
  waitTimeSeconds?: number;
  /** How long stop() lets invocations under way finish before it ends their environments. */
  stopGraceMs?: number;
  /** Called after each invocation, e.g. to nudge the stream poller: the consumer may have written to the table. */
  afterInvocation?: () => void;
  /**
   * `at-start` (the default) starts each consumer's first environment with the pollers, so that a module that
   * cannot load shows at once and a first batch pays no load; `on-first-message` waits for its first batch, as
   * Lambda does, so that an idle runtime holds no consumer's modules.
   */
  environments?: 'at-start' | 'on-first-message';
  /** An execution environment with no invocation for this long ends (none ends when not given). */
  environmentIdleEndMs?: number;
}): QueuePollers {
  const client = new SQSClient(options.queues.clientConfig);
  accountSqsRequests(client, 'event-source-mapping');
  const functions = new Map<string, LocalFunction>();
  let running = true;
  // Ends the long polls under way at stop(), which then need not wait out their 20 s.
  const stopping = new AbortController();

  async function poll(consumer: QueueConsumer, target: LocalFunction): Promise<void> {
    const queueUrl = options.queues.urlOf(consumer.queue.name);
    const queueArn = options.queues.arnOf(consumer.queue.name);
    let failures = 0;
    while (running) {
      let messages: Message[];
      try {
        const received = await client.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: consumer.batchSize,
            WaitTimeSeconds: options.waitTimeSeconds ?? 20,
            MessageSystemAttributeNames: ['All'],
            MessageAttributeNames: ['All'],
          }),
          { abortSignal: stopping.signal },
        );
        messages = received.Messages ?? [];
        failures = 0;
      } catch (error) {
        if (!running) return;
        if (failures === 0) logger.error(`${consumer.name}: cannot receive from ${consumer.queue.name}, retrying`, { error: String(error) });
        await new Promise((resolve) => setTimeout(resolve, Math.min(5_000, 100 * 2 ** failures)));
        failures += 1;
        continue;
      }
      if (messages.length > 0) {
        await handleBatch(consumer, target, { queueUrl, queueArn }, messages);
        options.afterInvocation?.();
      }
    }
  }

  async function handleBatch(consumer: QueueConsumer, target: LocalFunction, queue: { queueUrl: string; queueArn: string }, messages: Message[]) {
    const event: SQSEvent = { Records: messages.map((message) => sqsRecord(message, queue.queueArn, options.queues.region)) };
    let response: unknown;
    try {
      response = await target.invoke(event);
    } catch (error) {
      if (!(error instanceof EnvironmentError)) {
        logger.error(`${consumer.name}: invocation failed, its ${messages.length} message(s) come back after the visibility timeout`, {
          error: (error as Error).stack ?? String(error),
        });
      }
      return;
    }
    const retried = recordsToRetry(response, event);
    if (retried === 'all') {
      logger.warn(`${consumer.name}: invalid batchItemFailures, the whole batch is retried (as Lambda does)`, { response: JSON.stringify(response) });
      return;
    }
    const done = event.Records.filter((record) => !retried.has(record.messageId));
    if (done.length === 0) return;
    try {
      const result = await client.send(
        new DeleteMessageBatchCommand({
          QueueUrl: queue.queueUrl,
          Entries: done.map((record, index) => ({ Id: String(index), ReceiptHandle: record.receiptHandle })),
        }),
      );
      if (result.Failed?.length) logger.warn(`${consumer.name}: ${result.Failed.length} handled message(s) not deleted, they will come again`);
    } catch (error) {
      logger.warn(`${consumer.name}: handled messages not deleted, they will come again`, { error: String(error) });
    }
  }

  const loops: Promise<void>[] = [];
  for (const consumer of options.consumers) {
    const target = createLocalFunction({ ...consumer, settings: functionSettings[consumer.name] }, { idleEndMs: options.environmentIdleEndMs });
    functions.set(consumer.name, target);
    if (options.environments !== 'on-first-message') void target.warm();
    for (let index = 0; index < (options.concurrency ?? 4); index += 1) loops.push(poll(consumer, target));
  }
  const finished = Promise.all(loops);

  return {
    crash: async (consumerName) => {
      const target = functions.get(consumerName);
      if (!target) throw new Error(`No queue consumer named ${consumerName}`);
      await target.crash();
    },
    stop: async () => {
      running = false;
      stopping.abort();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([finished, new Promise((resolve) => (timer = setTimeout(resolve, options.stopGraceMs ?? 5_000)))]);
      clearTimeout(timer);
      await Promise.all([...functions.values()].map((target) => target.stop()));
      await finished;
      client.destroy();
    },
  };
}

/** The record Lambda builds from a received message. */
function sqsRecord(message: Message, queueArn: string, region: string): SQSRecord {
  return {
    messageId: message.MessageId as string,
    receiptHandle: message.ReceiptHandle as string,
    body: message.Body ?? '',
    attributes: (message.Attributes ?? {}) as unknown as SQSRecordAttributes,
    messageAttributes: lambdaMessageAttributes(message.MessageAttributes ?? {}),
    md5OfBody: message.MD5OfBody as string,
    ...(message.MD5OfMessageAttributes ? { md5OfMessageAttributes: message.MD5OfMessageAttributes } : {}),
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: region,
  };
}

/** Lambda's spelling of message attributes: camel-case names, binary values in base64, list values always present. */
function lambdaMessageAttributes(attributes: Record<string, MessageAttributeValue>): SQSMessageAttributes {
  const base64 = (value: Uint8Array) => Buffer.from(value).toString('base64');
  return Object.fromEntries(
    Object.entries(attributes).map(([name, value]) => [
      name,
      {
        ...(value.StringValue !== undefined ? { stringValue: value.StringValue } : {}),
        ...(value.BinaryValue !== undefined ? { binaryValue: base64(value.BinaryValue) } : {}),
        stringListValues: value.StringListValues ?? [],
        binaryListValues: (value.BinaryListValues ?? []).map(base64),
        dataType: value.DataType as string,
      },
    ]),
  );
}

/**
 * Lambda's reading of a partial batch response: no response, no list or an empty list is success; an entry that
 * is not the id of a record of the batch makes the whole batch a failure.
 */
function recordsToRetry(response: unknown, event: SQSEvent): Set<string> | 'all' {
  const failures = typeof response === 'object' && response !== null ? (response as { batchItemFailures?: unknown }).batchItemFailures : undefined;
  if (failures === undefined || failures === null) return new Set();
  if (!Array.isArray(failures)) return 'all';
  const ids = new Set(event.Records.map((record) => record.messageId));
  const retried = new Set<string>();
  for (const failure of failures) {
    const id = (failure as { itemIdentifier?: unknown } | null)?.itemIdentifier;
    if (typeof id !== 'string' || !ids.has(id)) return 'all';
    retried.add(id);
  }
  return retried;
}
