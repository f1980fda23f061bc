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
