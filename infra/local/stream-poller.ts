import { existsSync, readFileSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  DynamoDBStreamsServiceException,
  ExpiredIteratorException,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type GetRecordsCommandOutput,
  type ShardIteratorType,
  TrimmedDataAccessException,
  type _Record as StreamRecord,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord } from 'aws-lambda';
import type { TableStreamConsumer } from '../../functions/consumers.ts';
import { consumerHandlers } from './consumer-handlers.ts';

/**
 * What Lambda's event source mapping does on AWS, for the local runtime: reads the table's stream in DynamoDB
 * Local and hands each consumer the new items it selects, in order, retrying from a record the consumer reports
 * as failed. TTL deletions come from the TTL sweeper instead (DynamoDB Local has no TTL).
 *
 * With `checkpointFile`, it keeps its place in each shard across restarts, as an event source mapping does
 * (docs/local-runtime.md#stream-poller); without it, it starts after the last record of each shard. `ready` settles once every shard is open
 * (or the poller has failed), so that whatever is written after it is handed over.
 *
 * When the shards are empty it waits `idleDelayMs`, then twice as long after each empty round, up to
 * `maxIdleDelayMs`; it reads again at once after a round that brought records, and `idleDelayMs` after its last
 * read when `nudge()` says the table was written: an idle runtime polls about once a second, and a write is still
 * handed over at once.
 */
export function startStreamPoller(options: {
  endpoint: string;
  tableName: string;
  consumers: readonly TableStreamConsumer[];
  idleDelayMs: number;
  /** The longest wait between empty rounds; `idleDelayMs` when not given (no backoff). */
  maxIdleDelayMs?: number;
  /** How a wait is waited: a timer by default (tests count the waits asked for). */
  wait?: (ms: number) => Promise<void>;
  /** Where the last sequence number handled in each shard is kept, e.g. `$DATA_DIR/stream-checkpoint.json`. */
  checkpointFile?: string;
}): { ready: Promise<void>; nudge(): void; stop(): Promise<void> } {
  const config = { region: 'us-east-1', endpoint: options.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } };
  const tables = new DynamoDBClient(config);
  const streams = new DynamoDBStreamsClient(config);
  const handlerOf = consumerHandlers();
  const subscribed = options.consumers.filter((consumer) => consumer.select.records === 'inserts');
  const { checkpointFile } = options;
  /** Last sequence number every consumer has handled, by shard id. */
  const positions = new Map<string, string>();
  let running = true;
  let idleRounds = 0;
  /** Set by a nudge that came during a round, which may have read the shards before the write: the shortest wait next. */
  let nudged = false;
  let wake = () => {};
  const wait = options.wait ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  let markReady = () => {};
  const ready = new Promise<void>((resolve) => (markReady = resolve));

  async function iteratorOf(streamArn: string, shardId: string, type: ShardIteratorType, sequenceNumber?: string): Promise<string | undefined> {
    const response = await streams.send(
      new GetShardIteratorCommand({ StreamArn: streamArn, ShardId: shardId, ShardIteratorType: type, SequenceNumber: sequenceNumber }),
    );
    return response.ShardIterator;
  }

  /** Iterators for the stream's shards not seen yet, each opened by `open`. */
  async function openNewShards(
    streamArn: string,
    known: Set<string>,
    open: (shardId: string) => Promise<string | undefined>,
  ): Promise<Map<string, string>> {
    const description = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
    const iterators = new Map<string, string>();
    for (const shard of description.StreamDescription?.Shards ?? []) {
      if (!shard.ShardId || known.has(shard.ShardId)) continue;
      known.add(shard.ShardId);
      const iterator = await open(shard.ShardId);
      if (iterator) iterators.set(shard.ShardId, iterator);
    }
    return iterators;
  }

  /** Where a shard starts at start-up, given the checkpoint read (undefined: the poller never ran on this data). */
  async function openAtCheckpoint(streamArn: string, shardId: string, saved: Map<string, string> | undefined): Promise<string | undefined> {
    if (!saved) return skipToEnd(streamArn, shardId);
    const sequenceNumber = saved.get(shardId);
    // The poller ran on this data before this shard existed, so everything in it is new.
    if (!sequenceNumber) return iteratorOf(streamArn, shardId, 'TRIM_HORIZON');
    try {
      const iterator = await iteratorOf(streamArn, shardId, 'AFTER_SEQUENCE_NUMBER', sequenceNumber);
      positions.set(shardId, sequenceNumber);
      return iterator;
    } catch (error) {
      // A client fault (record trimmed, shard gone, sequence number not of this shard) says the position is unusable.
      if (!(error instanceof DynamoDBStreamsServiceException) || error.$fault !== 'client') throw error;
      warn('stream poller: cannot resume a shard after its checkpoint; reading it from its oldest record', { shardId, sequenceNumber, error: error.name });
      return iteratorOf(streamArn, shardId, 'TRIM_HORIZON');
    }
  }

  /**
   * LATEST, with a position: what a shard holds was written before and is skipped, and its last sequence number
   * becomes the position (the checkpoint on a first start on this data, so that a later start cannot replay it even
   * if nothing new arrives on the shard meanwhile). DynamoDB Local fills each page until the shard's end.
   */
  async function skipToEnd(streamArn: string, shardId: string): Promise<string | undefined> {
    let iterator = await iteratorOf(streamArn, shardId, 'TRIM_HORIZON');
    while (iterator) {
      const page = await streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 })).catch((error: unknown) => {
        // DynamoDB Local's trimmed-iterator fault (see readPage): what is left to skip is reached at LATEST.
        if (unusableIterator(error)) return undefined;
        throw error;
      });
      if (!page) return iteratorOf(streamArn, shardId, 'LATEST');
      const last = page.Records?.at(-1)?.dynamodb?.SequenceNumber;
      if (!last) return page.NextShardIterator;
      positions.set(shardId, last);
      iterator = page.NextShardIterator;
    }
    return undefined;
  }

  /**
   * One page of a shard. DynamoDB Local may call an iterator trimmed (reading through a LATEST iterator taken on an
   * empty shard: aws/aws-sdk-java#2923) or expired (15 minutes); the shard is then opened again where this poller
   * is, instead of the poller stopping and handing nothing over ever again.
   */
  async function readPage(streamArn: string, shardId: string, iterator: string): Promise<GetRecordsCommandOutput> {
    try {
      return await streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }));
    } catch (error) {
      if (!unusableIterator(error)) throw error;
      warn('stream poller: opening a shard again after an unusable iterator', { shardId, position: positions.get(shardId), error: error.name });
      const reopened = await reopen(streamArn, shardId);
      if (!reopened) throw error;
      return streams.send(new GetRecordsCommand({ ShardIterator: reopened, Limit: 1000 }));
    }
  }

  /** Where this poller is in a shard: after the last record it handed over, or, if none, at the shard's oldest. */
  function reopen(streamArn: string, shardId: string): Promise<string | undefined> {
    const position = positions.get(shardId);
    return position ? iteratorOf(streamArn, shardId, 'AFTER_SEQUENCE_NUMBER', position) : iteratorOf(streamArn, shardId, 'TRIM_HORIZON');
  }

  async function saveCheckpoint(): Promise<void> {
    if (!checkpointFile) return;
    try {
      await writeCheckpoint(checkpointFile, positions);
    } catch (error) {
      // Relaying goes on; a restart resumes from the last checkpoint written, handing some records over again.
      warn('stream poller: cannot write its checkpoint', { checkpointFile, error: String(error) });
    }
  }

  /**
   * Hands the records to each consumer; the records it reports failed (and those after) are tried again. Records
   * already read are handed over even when stopping; only the retries stop, and then it returns false.
   */
  async function deliver(records: StreamRecord[]): Promise<boolean> {
    for (const consumer of subscribed) {
      let pending = records.filter((record) => {
        const entity = record.dynamodb?.NewImage?.entity;
        return record.eventName === 'INSERT' && entity && 'S' in entity && consumer.select.entities.includes(entity.S as string);
      }) as unknown as DynamoDBRecord[];
      for (let attempt = 0; pending.length > 0; attempt += 1) {
        if (attempt > 0) {
          await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, 50 * 2 ** (attempt - 1))));
          if (!running) return false;
        }
        const result = await (await handlerOf(consumer))({ Records: pending });
        const failed = result?.batchItemFailures?.[0]?.itemIdentifier;
        pending = failed ? pending.slice(pending.findIndex((record) => record.dynamodb?.SequenceNumber === failed)) : [];
      }
    }
    return true;
  }

  const loop = (async () => {
    const table = await tables.send(new DescribeTableCommand({ TableName: options.tableName }));
    const streamArn = table.Table?.LatestStreamArn;
    if (!streamArn) throw new Error(`Table ${options.tableName} has no stream`);
    const known = new Set<string>();
    const saved = checkpointFile ? readCheckpoint(checkpointFile) : undefined;
    const iterators = await openNewShards(streamArn, known, (shardId) =>
      checkpointFile ? openAtCheckpoint(streamArn, shardId, saved) : skipToEnd(streamArn, shardId),
    );
    // At once, so that the file exists from the first start on (and forgets shards the stream no longer has).
    await saveCheckpoint();
    markReady();
    while (running) {
      nudged = false;
      let received = 0;
      let shardClosed = false;
      for (const [shardId, iterator] of iterators) {
        if (!running) break;
        const page = await readPage(streamArn, shardId, iterator).catch(async (error: unknown) => {
          // A read that fails even once reopened: the shard is opened again next round, the poller never stops for it.
          if (!(error instanceof DynamoDBStreamsServiceException)) throw error;
          console.error(JSON.stringify({ level: 'ERROR', message: 'stream poller: cannot read a shard; trying again', shardId, error: error.name }));
          const reopened = await reopen(streamArn, shardId).catch(() => undefined);
          return { Records: [], NextShardIterator: reopened ?? iterator };
        });
        const records = page.Records ?? [];
        received += records.length;
        if (records.length > 0) {
          // Stopped with part of the batch unhandled: the checkpoint stays before it, so a restart hands it over.
          if (!(await deliver(records))) break;
          positions.set(shardId, records.at(-1)?.dynamodb?.SequenceNumber as string);
          await saveCheckpoint();
        }
        if (page.NextShardIterator) iterators.set(shardId, page.NextShardIterator);
        else {
          iterators.delete(shardId);
          shardClosed = true;
        }
      }
      // A closed shard has children: read them from their start.
      if (running && (shardClosed || iterators.size === 0)) {
        for (const [shardId, iterator] of await openNewShards(streamArn, known, (newShardId) => iteratorOf(streamArn, newShardId, 'TRIM_HORIZON'))) {
          iterators.set(shardId, iterator);
        }
      }
      if (received > 0) idleRounds = 0;
      else {
        if (nudged) idleRounds = 0;
        const delayMs = idleDelay(idleRounds, options.idleDelayMs, options.maxIdleDelayMs ?? options.idleDelayMs);
        idleRounds += 1;
        const sleptFrom = performance.now();
        await new Promise<void>((resolve) => {
          void wait(delayMs).then(resolve);
          // Never sooner than `idleDelayMs` after the last round: a busy API nudges many times a round.
          wake = () => void wait(Math.max(0, options.idleDelayMs - (performance.now() - sleptFrom))).then(resolve);
        });
        wake = () => {};
      }
    }
  })()
    .catch((error: unknown) => {
      if (running) console.error(JSON.stringify({ level: 'ERROR', message: 'stream poller stopped', error: String(error) }));
    })
    .finally(markReady);

  return {
    ready,
    nudge: () => {
      nudged = true;
      wake();
    },
    stop: async () => {
      running = false;
      idleRounds = 0;
      wake();
      await loop;
      tables.destroy();
      streams.destroy();
    },
  };
}

function unusableIterator(error: unknown): error is TrimmedDataAccessException | ExpiredIteratorException {
  return error instanceof TrimmedDataAccessException || error instanceof ExpiredIteratorException;
}

/** The wait after `idleRounds` empty rounds in a row: `firstMs`, doubling each round, never more than `maxMs`. */
export function idleDelay(idleRounds: number, firstMs: number, maxMs: number): number {
  return Math.min(maxMs, firstMs * 2 ** Math.min(idleRounds, 30));
}

/** The positions of a checkpoint file, by shard id; undefined when there is no file (the poller never ran on this data). */
function readCheckpoint(file: string): Map<string, string> | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const { shards } = JSON.parse(readFileSync(file, 'utf8')) as { shards: Record<string, string> };
    return new Map(Object.entries(shards));
  } catch (error) {
    warn('stream poller: unreadable checkpoint; reading every shard from its oldest record', { checkpointFile: file, error: String(error) });
    return new Map();
  }
}

async function writeCheckpoint(file: string, positions: ReadonlyMap<string, string>): Promise<void> {
  // The rename replaces the file whole: a crash leaves the previous checkpoint, never part of one.
  const temporary = `${file}.tmp`;
  await writeFile(temporary, JSON.stringify({ shards: Object.fromEntries(positions) }));
  await rename(temporary, file);
}

function warn(message: string, details: Record<string, unknown>): void {
  console.warn(JSON.stringify({ level: 'WARN', message, ...details }));
}
