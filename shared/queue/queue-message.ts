import type { SQSRecord } from 'aws-lambda';
import type * as z from 'zod';

/** A queue message's body as `schema` describes it; undefined when it is not JSON of that shape (a poison message). */
export function parseQueueMessage<Schema extends z.ZodType>(schema: Schema, record: SQSRecord): z.output<Schema> | undefined {
  try {
    const parsed = schema.safeParse(JSON.parse(record.body));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
