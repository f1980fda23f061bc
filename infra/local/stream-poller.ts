import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type _Record as StreamRecord,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord } from 'aws-lambda';
import type { TableStreamConsumer } from '../../functions/consumers.ts';
import { consumerHandlers } from './consumer-handlers.ts';

/**
 * What Lambda's event source mapping does on AWS, for the local runtime: reads the table's stream in DynamoDB
 * Local and hands each consumer the new items it selects, in order, retrying from a record the consumer reports
 * as failed. TTL deletions come from the TTL sweeper instead (DynamoDB Local has no TTL).
 */
export function startStreamPoller(options: {
  endpoint: string;
  tableName: string;
  consumers: readonly TableStreamConsumer[];
  idleDelayMs: number;
}): { stop(): Promise<void> } {
  const config = { region: 'us-east-1', endpoint: options.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } };
  const tables = new DynamoDBClient(config);
  const streams = new DynamoDBStreamsClient(config);
  const handlerOf = consumerHandlers();
  const subscribed = options.consumers.filter((consumer) => consumer.select.records === 'inserts');
  let running = true;

  async function openIterators(streamArn: string, type: 'LATEST' | 'TRIM_HORIZON', known: Set<string>): Promise<Map<string, string>> {
    const description = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
    const iterators = new Map<string, string>();
    for (const shard of description.StreamDescription?.Shards ?? []) {
      if (!shard.ShardId || known.has(shard.ShardId)) continue;
      known.add(shard.ShardId);
      const iterator = await streams.send(new GetShardIteratorCommand({ StreamArn: streamArn, ShardId: shard.ShardId, ShardIteratorType: type }));
      if (iterator.ShardIterator) iterators.set(shard.ShardId, iterator.ShardIterator);
    }
    return iterators;
  }

  /** Hands the records to each consumer; the records it reports failed (and those after) are tried again. */
  async function deliver(records: StreamRecord[]): Promise<void> {
    for (const consumer of subscribed) {
      let pending = records.filter((record) => {
        const entity = record.dynamodb?.NewImage?.entity;
        return record.eventName === 'INSERT' && entity && 'S' in entity && consumer.select.entities.includes(entity.S as string);
      }) as unknown as DynamoDBRecord[];
      for (let attempt = 0; pending.length > 0 && running; attempt += 1) {
        const result = await (await handlerOf(consumer))({ Records: pending });
        const failed = result?.batchItemFailures?.[0]?.itemIdentifier;
        if (!failed) break;
        pending = pending.slice(pending.findIndex((record) => record.dynamodb?.SequenceNumber === failed));
        await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, 50 * 2 ** attempt)));
      }
    }
  }

  const loop = (async () => {
    const table = await tables.send(new DescribeTableCommand({ TableName: options.tableName }));
    const streamArn = table.Table?.LatestStreamArn;
    if (!streamArn) throw new Error(`Table ${options.tableName} has no stream`);
    const known = new Set<string>();
    const iterators = await openIterators(streamArn, 'LATEST', known);
    while (running) {
      let received = 0;
      let shardClosed = false;
      for (const [shardId, iterator] of iterators) {
        const page = await streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }));
        received += page.Records?.length ?? 0;
        if (page.Records?.length) await deliver(page.Records);
        if (page.NextShardIterator) iterators.set(shardId, page.NextShardIterator);
        else {
          iterators.delete(shardId);
          shardClosed = true;
        }
      }
      // A closed shard has children: read them from their start.
      if (shardClosed || iterators.size === 0) {
        for (const [shardId, iterator] of await openIterators(streamArn, 'TRIM_HORIZON', known)) iterators.set(shardId, iterator);
      }
      if (received === 0) await new Promise((resolve) => setTimeout(resolve, options.idleDelayMs));
    }
  })().catch((error: unknown) => {
    if (running) console.error(JSON.stringify({ level: 'ERROR', message: 'stream poller stopped', error: String(error) }));
  });

  return {
    stop: async () => {
      running = false;
      await loop;
      tables.destroy();
      streams.destroy();
    },
  };
}
