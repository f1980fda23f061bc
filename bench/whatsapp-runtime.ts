/**
 * WhatsApp on the local runtime, in a child process on the database the parent names: the API, the SQS emulator
 * with the WhatsApp inbound function, and the WhatsApp simulator, as `npm start` runs them (built-in model).
 * Customers are driven in this process through the simulator, so each notification and each reply is timed where
 * Meta would see it. Reports its figures and exits.
 */
import { queueConsumers } from '../functions/consumers.ts';
import { routeGroups } from '../functions/route-groups.ts';
import { useLocalDatabase } from '../infra/local/environment.ts';
import { startQueuePollers } from '../infra/local/queue-poller.ts';
import { startLocalQueues } from '../infra/local/queues.ts';
import { createLocalServer } from '../infra/local/server.ts';
import { simulatorDefaults, startLocalWhatsapp } from '../infra/local/whatsapp-simulator.ts';
import { benchOrganization } from './bench-api.ts';
import { runtime } from '../shared/runtime.ts';
import { percentiles, type Percentiles } from './turns.ts';

export interface WhatsappBenchResult {
  /** Notification posted → the webhook's 200, one customer message at a time. */
  ackMs: Percentiles & { requests: number };
  /** Floor of the ack: GET /health from the same client, the bare route of the same local server. */
  ackFloorMs: Percentiles & { requests: number };
  /** Notification posted → the reply accepted by the simulator's Graph API, one turn at a time, 150 ms apart. */
  replyMs: Percentiles & { turns: number };
  /** Floor of the reply: the same built-in-model turn through the chat API (`stream: false`), no webhook, queue or send. */
  replyFloorMs: Percentiles & { turns: number };
}

const database = { endpoint: process.env.BENCH_DYNAMODB_ENDPOINT as string, tableName: process.env.TABLE_NAME as string };
useLocalDatabase(database);
const consumers = queueConsumers.filter((consumer) => consumer.name === 'whatsapp-inbound');
// The webhook route finds the inbound queue through its own declaration (queueUrls), as on AWS.
const queues = await startLocalQueues({ consumers, rules: [], routeGroups });
const { server, preload } = createLocalServer(routeGroups);
await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
const baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
const simulator =
  (await startLocalWhatsapp(baseUrl, process.env)) ??
  (() => {
    throw new Error('The bench measures replies against the WhatsApp simulator: unset WHATSAPP_GRAPH_API_URL.');
  })();
await preload();
const pollers = startQueuePollers({ queues, consumers });

const deps = runtime();
const { call } = await benchOrganization(deps, baseUrl);
const agent = await call('POST', '/v2/chat/agents', { fullName: 'Bench', description: 'Bench', role: 'Bench' });
const phoneNumberId = '1000000000001';
await call('POST', '/v1/chat/whatsapp/numbers', { phoneNumberId, displayPhoneNumber: '+1 555 700 0000', agentId: agent.id, ...simulatorDefaults });

const warmup = 20;
const measured = 200;
/**
 * A customer reads a reply before writing again; the reply's own status notifications (sent, delivered) share the
 * customer's FIFO group and are handled within this pause, as they are long before a person answers.
 */
const thinkMs = 150;

/** One customer message at a time; each waits for its reply, so queueing behind other turns is not in the figures. */
async function conversation(turns: number, customer: string): Promise<{ ack: number[]; reply: number[] }> {
  const ack: number[] = [];
  const reply: number[] = [];
  for (let turn = 0; turn < turns; turn += 1) {
    const before = simulator.sent.length;
    const posted = await simulator.customerSays({ phoneNumberId, from: customer, text: `Question ${turn} about my order` });
    if (posted.status !== 200) throw new Error(`the webhook answered ${posted.status}`);
    const deadline = Date.now() + 10_000;
    while (!simulator.sent.slice(before).some((message) => message.to === customer)) {
      if (Date.now() > deadline) throw new Error('no reply within 10 s');
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    const sent = simulator.sent.slice(before).find((message) => message.to === customer)!;
    ack.push(posted.answeredAt - posted.sentAt);
    reply.push(sent.atMonotonic - posted.sentAt);
    await new Promise((resolve) => setTimeout(resolve, thinkMs));
  }
  return { ack, reply };
}

async function floorTurns(turns: number): Promise<number[]> {
  const session = await call('POST', '/v1/chat/chat/sessions', { agentId: agent.id, platform: 'WHATSAPP' });
  const timings: number[] = [];
  for (let turn = 0; turn < turns; turn += 1) {
    const started = performance.now();
    await call('POST', `/v1/chat/chat/sessions/${session.id}/messages`, { content: `Question ${turn} about my order`, stream: false });
    timings.push(performance.now() - started);
  }
  return timings;
}

async function bareRoute(requests: number): Promise<number[]> {
  const timings: number[] = [];
  for (let request = 0; request < requests; request += 1) {
    const started = performance.now();
    const response = await fetch(`${baseUrl}/health`);
    await response.arrayBuffer();
    timings.push(performance.now() - started);
  }
  return timings;
}

await conversation(warmup, '31600000000');
await floorTurns(warmup);
await bareRoute(warmup);
// A conversation of 20 turns per customer, as sessions are: the turn reads a history of realistic length.
const ack: number[] = [];
const reply: number[] = [];
for (let customer = 0; customer < measured / 20; customer += 1) {
  const timed = await conversation(20, `3160000${String(customer + 1).padStart(4, '0')}`);
  ack.push(...timed.ack);
  reply.push(...timed.reply);
}
const floor: number[] = [];
for (let session = 0; session < measured / 20; session += 1) floor.push(...(await floorTurns(20)));
const bare = await bareRoute(measured);

const result: WhatsappBenchResult = {
  ackMs: { requests: ack.length, ...percentiles(ack) },
  ackFloorMs: { requests: bare.length, ...percentiles(bare) },
  replyMs: { turns: reply.length, ...percentiles(reply) },
  replyFloorMs: { turns: floor.length, ...percentiles(floor) },
};
process.send?.(result);
await pollers.stop();
await simulator.stop();
await queues.stop();
server.closeAllConnections();
server.close();
