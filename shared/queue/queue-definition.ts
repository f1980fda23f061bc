/** An SQS queue of the platform: the stack creates it (with a dead-letter queue), the local runtime creates it in its SQS emulator. */
export interface QueueDefinition {
  name: string;
  /** How long a received message stays hidden; AWS asks for at least six times the consumer's timeout. */
  visibilityTimeoutSeconds: number;
  /** Receives after which a message that keeps failing its consumer moves to the queue's dead-letter queue. */
  maxReceiveCount: number;
}
