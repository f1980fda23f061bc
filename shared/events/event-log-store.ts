import { QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DomainEvent } from './events.ts';
import type { EventLogStore, LoggedEvent, LogPosition } from './ports.ts';
import { keys } from '../platform/store/keys.ts';
import { putAll } from '../platform/store/dynamo.ts';

/**
 * Each organization's event log is one partition (`ORG#<org>#EVENTS`) whose sort key is the time an entry was
 * logged, then its event id: a Query after a position reads the log in order. Entries expire by TTL.
 */
export class DynamoEventLogStore implements EventLogStore {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.client = client;
    this.tableName = tableName;
  }

  async append(entries: readonly LoggedEvent[], expiresAt: number): Promise<void> {
    await putAll(
      this.client,
      this.tableName,
      entries.map(({ loggedAt, event }) => ({
        ...keys.eventLogEntry(event.orgId, loggedAt, event.eventId),
        entity: 'eventLog',
        loggedAt,
        eventId: event.eventId,
        type: event.type,
        orgId: event.orgId,
        createdAt: event.createdAt,
        payload: event.payload,
        expiresAt,
      })),
    );
  }

  async read(orgId: string, after: LogPosition, limit: number): Promise<{ entries: LoggedEvent[]; more: boolean }> {
    // Without an event id the position is past the whole millisecond: start at the next one.
    const bound = after.eventId === undefined
      ? { condition: 'sk >= :bound', value: keys.eventLogTime(after.loggedAt + 1) }
      : { condition: 'sk > :bound', value: keys.eventLogEntry(orgId, after.loggedAt, after.eventId).sk };
    const page = await this.client.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: `pk = :pk AND ${bound.condition}`,
        ExpressionAttributeValues: { ':pk': keys.eventLog(orgId), ':bound': bound.value },
        ConsistentRead: true,
        Limit: limit,
      }),
    );
    const entries = (page.Items ?? []).map((item) => ({
      loggedAt: item.loggedAt as number,
      event: {
        eventId: item.eventId,
        type: item.type,
        orgId: item.orgId,
        createdAt: item.createdAt,
        payload: item.payload,
      } as DomainEvent,
    }));
    return { entries, more: page.LastEvaluatedKey !== undefined };
  }
}
