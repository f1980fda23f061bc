import { BatchWriteCommand, TransactWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/**
 * Seeds a benchmark's table with what a store writes, fast: a client to hand the store, which records the items
 * its transactions put and sums the numbers they ADD (counters), then `flush` writes it all with BatchWriteItem.
 * The items are the store's own; only the transport differs (DynamoDB Local takes ~7 ms a transaction).
 */
export function bulkWriter(target: DynamoDBDocumentClient, tableName: string) {
  const puts: Record<string, unknown>[] = [];
  const sums = new Map<string, { key: Record<string, unknown>; cells: Record<string, number> }>();

  const recordingClient = {
    async send(command: unknown) {
      if (!(command instanceof TransactWriteCommand)) throw new Error('bulkWriter records transactions only');
      for (const item of command.input.TransactItems ?? []) {
        if (item.Put) puts.push(item.Put.Item as Record<string, unknown>);
        const update = item.Update;
        if (!update) continue;
        if (!update.UpdateExpression?.startsWith('ADD ')) throw new Error(`bulkWriter sums ADD updates only: ${update.UpdateExpression}`);
        const id = JSON.stringify(update.Key);
        const sum = sums.get(id) ?? { key: update.Key as Record<string, unknown>, cells: {} };
        for (const term of update.UpdateExpression.slice(4).split(',')) {
          const [name, value] = term.trim().split(' ') as [string, string];
          const cell = update.ExpressionAttributeNames?.[name] ?? name;
          sum.cells[cell] = (sum.cells[cell] ?? 0) + (update.ExpressionAttributeValues?.[value] as number);
        }
        sums.set(id, sum);
      }
      return {};
    },
  } as unknown as DynamoDBDocumentClient;

  async function flush(concurrency: number): Promise<void> {
    const items = [...puts, ...[...sums.values()].map(({ key, cells }) => ({ ...key, ...cells }))];
    puts.length = 0;
    sums.clear();
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (let start = next; start < items.length; start = next) {
          next += 25;
          let request: Record<string, { PutRequest: { Item: Record<string, unknown> } }[]> | undefined = {
            [tableName]: items.slice(start, start + 25).map((Item) => ({ PutRequest: { Item } })),
          };
          while (request && Object.keys(request).length > 0) {
            const result = await target.send(new BatchWriteCommand({ RequestItems: request }));
            request = result.UnprocessedItems as typeof request;
          }
        }
      }),
    );
  }

  return { client: recordingClient, flush };
}
