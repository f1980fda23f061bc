/**
 * The local runtime's event and delivery side in a child process, for the webhook benchmark: the API, the stream
 * poller with the event relay, the event router, the SQS emulator and the delivery function's pollers, as
 * `npm start` runs them, on the database the parent names. When ready it reports its port, its organization and
 * an API key; on request it publishes a burst of events to the local bus, as the relay would.
 */
import type { AddressInfo } from 'node:net';
import { eventRules, queueConsumers, tableStreamConsumers } from '../functions/consumers.ts';
import { routeGroups } from '../functions/route-groups.ts';
import { issueApiKey } from '../shared/identity/api-keys.ts';
import type { DomainEvent } from '../shared/events/events.ts';
import { localEventBus } from '../shared/events/bus.ts';
import { runtime } from '../shared/runtime.ts';
import { useLocalDatabase } from '../infra/local/environment.ts';
import { startEventRouter } from '../infra/local/event-router.ts';
import { startQueuePollers } from '../infra/local/queue-poller.ts';
import { startLocalQueues } from '../infra/local/queues.ts';
import { createLocalServer } from '../infra/local/server.ts';
import { startStreamPoller } from '../infra/local/stream-poller.ts';

const database = { endpoint: process.env.BENCH_DYNAMODB_ENDPOINT as string, tableName: process.env.TABLE_NAME as string };
useLocalDatabase(database);
const queues = await startLocalQueues({ consumers: queueConsumers, rules: eventRules, streamConsumers: tableStreamConsumers });
const { server, preload } = createLocalServer(routeGroups);
await preload();
startEventRouter({ queues, rules: eventRules });
await startStreamPoller({ endpoint: database.endpoint, tableName: database.tableName, consumers: tableStreamConsumers, idleDelayMs: 25 }).ready;
startQueuePollers({ queues, consumers: queueConsumers });

const deps = runtime();
const orgId = crypto.randomUUID();
await deps.orgs.ensure({ id: orgId, name: 'bench', createdAt: new Date().toISOString() });
const { key } = await issueApiKey(deps, orgId, { name: 'bench', scopes: ['*'] });

/** `session.updated` events of made-up sessions: what the relay publishes, without the table writes behind them. */
process.on('message', async (command: { type: 'publish'; count: number }) => {
  const events: DomainEvent[] = Array.from({ length: command.count }, () => {
    const eventId = crypto.randomUUID();
    const createdAt = new Date().toISOString();
    const payload = { id: crypto.randomUUID(), eventId, eventType: 'session.updated', createdAt, changedFields: ['state'], state: 'OPEN' };
    return { eventId, type: 'session.updated', orgId, createdAt, payload };
  });
  await localEventBus.publish(events);
  process.send?.({ type: 'published' });
});
server.listen(0, '127.0.0.1', () => process.send?.({ type: 'ready', port: (server.address() as AddressInfo).port, orgId, key }));
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
