import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import type { TableStreamConsumer } from '../../functions/consumers.ts';
import { accountInvocation } from '../../shared/platform/cost-accounting.ts';

const repoRoot = resolve(import.meta.dirname, '../..');
export type StreamHandler = (event: DynamoDBStreamEvent) => Promise<{ batchItemFailures?: { itemIdentifier: string }[] } | void>;

/** Loads each consumer's handler module once, as Lambda would. */
export function consumerHandlers(): (consumer: TableStreamConsumer) => Promise<StreamHandler> {
  const handlers = new Map<TableStreamConsumer, Promise<StreamHandler>>();
  return (consumer) => {
    let loaded = handlers.get(consumer);
    if (!loaded) {
      loaded = import(pathToFileURL(join(repoRoot, consumer.entry)).href).then(
        (module: { handler: StreamHandler }): StreamHandler =>
          (event) => accountInvocation(consumer.name, 'table-stream', () => module.handler(event)),
      );
      handlers.set(consumer, loaded);
    }
    return loaded;
  };
}
