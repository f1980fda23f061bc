/** An SQS queue of the platform: the stack creates it (with a dead-letter queue), the local runtime creates it in its SQS emulator. */
export interface QueueDefinition {
  name: string;
  /** How long a received message stays hidden; AWS asks for at least six times the consumer's timeout. */
  visibilityTimeoutSeconds: number;
  /** Receives after which a message that keeps failing its consumer moves to the queue's dead-letter queue. */
  maxReceiveCount: number;
  /**
   * A FIFO queue (its name ends in `.fifo`, and so does its dead-letter queue's): messages of one group are handed
   * over in order, one at a time, and a sender's deduplication id drops a copy sent within 5 minutes.
   */
  fifo?: boolean;
}

/** The dead-letter queue's name: `<name>-dlq`, or `<name>-dlq.fifo` for a FIFO queue (whose DLQ must be FIFO too). */
export const deadLetterQueueName = (definition: QueueDefinition): string =>
  definition.fifo ? `${definition.name.replace(/\.fifo$/, '')}-dlq.fifo` : `${definition.name}-dlq`;
