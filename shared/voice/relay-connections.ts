import { ApiGatewayManagementApiClient, GoneException, PostToConnectionCommand } from '@aws-sdk/client-apigatewaymanagementapi';
import type { RelayConnections } from './ports.ts';
import { traceAwsClient } from '../platform/tracing.ts';

/**
 * Sends to ConversationRelay through the WebSocket API's connection-management API (`POST @connections/{id}`).
 * The local runtime serves the same API over plain http on loopback, which takes placeholder credentials.
 */
export function relayConnections(options: { endpoint: string; region: string }): RelayConnections {
  const local = options.endpoint.startsWith('http://');
  const client = traceAwsClient(
    new ApiGatewayManagementApiClient({
      endpoint: options.endpoint,
      region: options.region,
      ...(local ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
    }),
  );
  return {
    async send(connectionId, message) {
      try {
        await client.send(new PostToConnectionCommand({ ConnectionId: connectionId, Data: JSON.stringify(message) }));
        return 'sent';
      } catch (error) {
        // 410: the carrier closed the WebSocket, which it does when the call ends.
        if (error instanceof GoneException) return 'gone';
        throw error;
      }
    },
  };
}
