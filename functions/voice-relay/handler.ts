import type { APIGatewayProxyWebsocketEventV2 } from 'aws-lambda';
import { closeRelay, handleRelayMessage, openRelay } from '../../shared/voice/voice.ts';
import { toErrorEnvelope } from '../../shared/platform/http/error-envelope.ts';
import { logger } from '../../shared/platform/logger.ts';
import { relayRuntime } from '../../shared/voice/voice-runtime.ts';
import { observedHandler } from '../../shared/platform/invocation.ts';

/** A WebSocket API event; `$connect` also carries the upgrade request's headers. */
type RelayEvent = APIGatewayProxyWebsocketEventV2 & { headers?: Record<string, string | undefined> };

/**
 * ConversationRelay's WebSocket: `$connect` checks Twilio's signature and binds the connection to its call,
 * `$default` handles each message (a prompt runs a turn whose tokens go back through the connection-management
 * API), `$disconnect` forgets the connection. A refused `$connect` answers its status, which refuses the upgrade.
 */
async function handle(event: RelayEvent): Promise<{ statusCode: number }> {
  const { routeKey, connectionId, requestId } = event.requestContext;
  try {
    if (routeKey === '$connect') {
      const signature = Object.entries(event.headers ?? {}).find(([name]) => name.toLowerCase() === 'x-twilio-signature')?.[1];
      await openRelay(relayRuntime(), connectionId, event.queryStringParameters ?? {}, signature);
    } else if (routeKey === '$disconnect') {
      closeRelay(connectionId);
    } else {
      await handleRelayMessage(relayRuntime(), connectionId, event.body);
    }
    return { statusCode: 200 };
  } catch (error) {
    const envelope = toErrorEnvelope(error, requestId);
    if (envelope.error.status >= 500) logger.error('relay failed', { routeKey, connectionId, error: error as Error });
    else logger.warn('relay refused', { routeKey, connectionId, code: envelope.error.code });
    return { statusCode: envelope.error.status };
  }
}

/** A voice turn is on the request path: traced like the HTTP routes (X-Ray on AWS). */
export const handler = observedHandler('voice-relay', handle, { tracer: () => import('@aws-lambda-powertools/tracer') });
