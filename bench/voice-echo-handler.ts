/**
 * The floor of a voice turn: a WebSocket API handler that answers every message with one `text` token through the
 * connection-management API, touching nothing else. Same gateway, same client, same send path as the relay.
 */
import { relayConnections } from '../shared/voice/relay-connections.ts';

let relay: ReturnType<typeof relayConnections> | undefined;

export async function handler(event: { requestContext: { routeKey: string; connectionId: string } }): Promise<{ statusCode: number }> {
  if (event.requestContext.routeKey === '$default') {
    relay ??= relayConnections({ endpoint: process.env.BENCH_ECHO_MANAGEMENT_ENDPOINT as string, region: 'us-east-1' });
    await relay.send(event.requestContext.connectionId, { type: 'text', token: 'x', last: true });
  }
  return { statusCode: 200 };
}
