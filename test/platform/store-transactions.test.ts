/** Transactions that DynamoDB cancels for a conflict on a shared item (a counter) are tried again; others are not. */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { sendTransaction } from '../../shared/platform/store/dynamo.ts';

const canceled = (...codes: string[]) =>
  new TransactionCanceledException({ message: 'Transaction cancelled', $metadata: {}, CancellationReasons: codes.map((Code) => ({ Code })) });

/** A client whose transactions fail with these errors, in turn, then succeed; it counts what it was sent. */
function clientFailingWith(errors: Error[]) {
  let sent = 0;
  const client = {
    async send() {
      const error = errors[sent];
      sent += 1;
      if (error) throw error;
      return {};
    },
  } as unknown as DynamoDBDocumentClient;
  return { client, sent: () => sent };
}

describe('sendTransaction', () => {
  it('tries a transaction canceled by a conflict again, and it succeeds', async () => {
    const { client, sent } = clientFailingWith([canceled('None', 'TransactionConflict'), canceled('TransactionConflict', 'None')]);
    await expect(sendTransaction(client, [])).resolves.toBeUndefined();
    expect(sent()).toBe(3);
  });

  it('gives up after 4 attempts, with the conflict', async () => {
    const { client, sent } = clientFailingWith(Array.from({ length: 6 }, () => canceled('TransactionConflict')));
    await expect(sendTransaction(client, [])).rejects.toBeInstanceOf(TransactionCanceledException);
    expect(sent()).toBe(4);
  });

  it('never retries a failed condition, even beside a conflict', async () => {
    const { client, sent } = clientFailingWith([canceled('ConditionalCheckFailed', 'TransactionConflict')]);
    await expect(sendTransaction(client, [])).rejects.toBeInstanceOf(TransactionCanceledException);
    expect(sent()).toBe(1);
  });
});
