import { DeleteCommand, ScanCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import type { TableStreamConsumer } from '../../functions/consumers.ts';
import { isConditionFailure } from '../../shared/platform/store/dynamo.ts';
import { tableDefinition } from '../../shared/platform/store/table.ts';
import { consumerHandlers } from './consumer-handlers.ts';


/**
 * DynamoDB Local never deletes expired items, so this does what DynamoDB's TTL and Streams do together: it deletes
 * items whose TTL attribute has passed and hands each deletion, as the stream record AWS would produce, to the
 * consumers that subscribe to it.
 */
export function startTtlSweeper(options: {
  client: DynamoDBDocumentClient;
  tableName: string;
  consumers: readonly TableStreamConsumer[];
  intervalMs: number;
}): { sweep(): Promise<void>; stop(): void } {
  const handlerOf = consumerHandlers();
  const ttl = tableDefinition.timeToLiveAttribute;

  async function sweep(): Promise<void> {
    const now = Math.floor(Date.now() / 1000);
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await options.client.send(
        new ScanCommand({
          TableName: options.tableName,
          FilterExpression: '#ttl < :now',
          ExpressionAttributeNames: { '#ttl': ttl },
          ExpressionAttributeValues: { ':now': now },
          ExclusiveStartKey: startKey,
        }),
      );
      for (const item of page.Items ?? []) await expire(item);
      startKey = page.LastEvaluatedKey;
    } while (startKey);
  }

  async function expire(item: Record<string, unknown>): Promise<void> {
    try {
      // Only if it was not rewritten meanwhile, as TTL deletes what is expired at deletion time.
      await options.client.send(
        new DeleteCommand({
          TableName: options.tableName,
          Key: { pk: item.pk, sk: item.sk },
          ConditionExpression: '#ttl = :seen',
          ExpressionAttributeNames: { '#ttl': ttl },
          ExpressionAttributeValues: { ':seen': item[ttl] },
        }),
      );
    } catch (error) {
      if (isConditionFailure(error)) return;
      throw error;
    }
    const record: DynamoDBRecord = {
      eventID: crypto.randomUUID(),
      eventName: 'REMOVE',
      eventSource: 'aws:dynamodb',
      awsRegion: 'local',
      userIdentity: { type: 'Service', principalId: 'dynamodb.amazonaws.com' },
      dynamodb: {
        Keys: marshall({ pk: item.pk, sk: item.sk }) as never,
        OldImage: marshall(item, { removeUndefinedValues: true }) as never,
        SequenceNumber: String(Date.now()),
        StreamViewType: 'NEW_AND_OLD_IMAGES',
      },
    };
    for (const consumer of options.consumers) {
      if (consumer.select.records === 'ttl-deletions' && consumer.select.entities.includes(String(item.entity))) {
        await (await handlerOf(consumer))({ Records: [record] });
      }
    }
  }

  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    running ??= sweep()
      .catch((error: unknown) => console.error(JSON.stringify({ level: 'ERROR', message: 'TTL sweep failed', error: String(error) })))
      .finally(() => (running = undefined));
  }, options.intervalMs);
  timer.unref();
  return { sweep, stop: () => clearInterval(timer) };
}
