import { EventBridgeClient, PutEventsCommand, type PutEventsRequestEntry } from '@aws-sdk/client-eventbridge';
import { EventEmitter } from 'node:events';
import { costAccountingOn, recordPublishedEvents } from '../platform/cost-accounting.ts';
import type { DomainEvent } from './events.ts';
import { traceAwsClient } from '../platform/tracing.ts';

/** Where domain events are published. Throws when any event could not be published, so the caller retries. */
export interface EventBus {
  publish(events: readonly DomainEvent[]): Promise<void>;
}

/** Every event goes to the bus with this source; its detail type is the event type. */
export const eventSource = 'agent-platform';
const maxEntriesPerCall = 10;

/**
 * The EventBridge custom bus, where AWS customers route events with rules of their own: detail type = event type,
 * detail = `{orgId, occurredAt, event}`: the time of the event (ms precision; EventBridge's own `time` keeps
 * seconds) and its payload as in webhooks.
 */
export class EventBridgeBus implements EventBus {
  private readonly client: EventBridgeClient;
  private readonly busName: string;

  constructor(busName: string, client = traceAwsClient(new EventBridgeClient({}))) {
    this.client = client;
    this.busName = busName;
  }

  async publish(events: readonly DomainEvent[]): Promise<void> {
    for (let start = 0; start < events.length; start += maxEntriesPerCall) {
      const entries: PutEventsRequestEntry[] = events.slice(start, start + maxEntriesPerCall).map((event) => ({
        EventBusName: this.busName,
        Source: eventSource,
        DetailType: event.type,
        Time: new Date(event.createdAt),
        Detail: eventDetail(event),
      }));
      const result = await this.client.send(new PutEventsCommand({ Entries: entries }));
      if (result.FailedEntryCount) {
        const reasons = (result.Entries ?? []).flatMap((entry) => (entry.ErrorCode ? [`${entry.ErrorCode}: ${entry.ErrorMessage}`] : []));
        throw new Error(`EventBridge refused ${result.FailedEntryCount} event(s): ${reasons.join('; ')}`);
      }
    }
  }
}

/**
 * The local runtime's bus: an in-process emitter that the local event router subscribes to. Each `event` comes
 * with a list where a listener may add the promise of its having taken the event in; `publish` resolves once all
 * have, as PutEvents answers once EventBridge holds the events, so the relay moves on only past events in a queue.
 */
export class LocalEventBus extends EventEmitter implements EventBus {
  async publish(events: readonly DomainEvent[]): Promise<void> {
    const taken: Promise<void>[] = [];
    for (const event of events) this.emit('event', event, taken);
    await Promise.all(taken);
  }
}

export const localEventBus = new LocalEventBus();

function eventDetail(event: DomainEvent): string {
  return JSON.stringify({ orgId: event.orgId, occurredAt: event.createdAt, event: event.payload });
}

/** An entry's size as EventBridge bills it: 14 bytes for the time, then source, detail type and detail. */
function entryBytes(event: DomainEvent): number {
  return 14 + [eventSource, event.type, eventDetail(event)].reduce((total, text) => total + Buffer.byteLength(text, 'utf8'), 0);
}

/** EventBridge when the deployment names a bus, the in-process bus otherwise (local runtime, tests). */
export function eventBusFrom(config: { EVENT_BUS_NAME?: string | undefined }): EventBus {
  const bus = config.EVENT_BUS_NAME ? new EventBridgeBus(config.EVENT_BUS_NAME) : localEventBus;
  if (!costAccountingOn()) return bus;
  // The bench's cost accounting (docs/deploy.md#cost): the events each publish puts on the bus, whichever bus it is.
  return {
    publish: async (events) => {
      await bus.publish(events);
      recordPublishedEvents(events.map(entryBytes));
    },
  };
}
