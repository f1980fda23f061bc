import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type * as z from 'zod';
import { logger } from '../logger.ts';

/**
 * UTF-16 code units a queue may refuse raw in a body: SQS refuses U+FFFE and U+FFFF, the local emulator also
 * every character above U+FFFF (a surrogate pair), and JSON.stringify leaves all of them unescaped. Controls and
 * lone surrogates it escapes already.
 */
const refusableByQueues = /[^\x20-\ud7ff\ue000-\ufffd]/g;

/**
 * A message as a queue body: its JSON, with what a queue may refuse written as `\uXXXX` escapes, so that any
 * JSON value crosses any queue intact and parses back to the same value (`parseQueueMessage`).
 */
export function queueMessageBody(message: unknown): string {
  return JSON.stringify(message).replace(refusableByQueues, (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** A queue message's body as `schema` describes it; undefined when it is not JSON of that shape (a poison message). */
export function parseQueueMessage<Schema extends z.ZodType>(schema: Schema, record: SQSRecord): z.output<Schema> | undefined {
  try {
    const parsed = schema.safeParse(JSON.parse(record.body));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

export interface QueueBatchOptions<Schema extends z.ZodType> {
  schema: Schema;
  /** What the messages are, for the logs: `usage roll-up`, `analysis` … */
  name: string;
  /**
   * `sequential` when the messages of a batch write the same things (default: parallel); `fifo` for a FIFO queue:
   * sequential, and once a message of a group fails the later ones of that group are handed back unhandled, so
   * that the group's order holds when they come again.
   */
  order?: 'parallel' | 'sequential' | 'fifo';
  /** The message's fields worth logging beside a failure. */
  logFields?: (message: z.output<Schema>) => Record<string, unknown>;
}

/**
 * Handles each record of a queue batch. A record that is not a message of `schema` (poison), or whose handling
 * throws, is reported back as a batch item failure: the queue hands it over again, and in the end to its
 * dead-letter queue. The others are done.
 */
export async function handleQueueBatch<Schema extends z.ZodType>(
  event: SQSEvent,
  options: QueueBatchOptions<Schema>,
  handle: (message: z.output<Schema>, record: SQSRecord) => Promise<void>,
): Promise<SQSBatchResponse> {
  const handleRecord = async (record: SQSRecord): Promise<string | undefined> => {
    const message = parseQueueMessage(options.schema, record);
    if (message === undefined) {
      logger.error(`${options.name}: not a message of this queue; left for the dead-letter queue`, { messageId: record.messageId });
      return record.messageId;
    }
    try {
      await handle(message, record);
      return undefined;
    } catch (error) {
      logger.error(`${options.name} failed; the queue hands it over again`, { messageId: record.messageId, ...options.logFields?.(message), error: error as Error });
      return record.messageId;
    }
  };
  const failures: (string | undefined)[] = [];
  if (options.order === 'fifo') {
    const failedGroups = new Set<string | undefined>();
    for (const record of event.Records) {
      const group = record.attributes.MessageGroupId;
      const failure = failedGroups.has(group) ? record.messageId : await handleRecord(record);
      if (failure !== undefined) failedGroups.add(group);
      failures.push(failure);
    }
  } else if (options.order === 'sequential') for (const record of event.Records) failures.push(await handleRecord(record));
  else failures.push(...(await Promise.all(event.Records.map(handleRecord))));
  return { batchItemFailures: failures.filter((id) => id !== undefined).map((itemIdentifier) => ({ itemIdentifier })) };
}
