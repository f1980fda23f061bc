import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { WebSocketServer, type WebSocket } from 'ws';
import type { WebSocketRouteGroup } from '../../functions/voice-relay/routes.ts';
import { accountInvocation, recordCost } from '../../shared/platform/cost-accounting.ts';

type WebSocketHandler = (event: Record<string, unknown>) => Promise<{ statusCode?: number } | undefined>;

const repoRoot = resolve(import.meta.dirname, '../..');

export interface LocalWebSocketGateway {
  /** Where clients connect: `ws://127.0.0.1:<port>` (the `wss://` stage URL on AWS). */
  url: string;
  /** The connection-management API (`POST @connections/{id}`), as the SDK's `endpoint`. */
  managementEndpoint: string;
  port: number;
  /** Cuts every open connection without a closing handshake, as a network failure would. */
  dropConnections(): void;
  stop(): Promise<void>;
}

/**
 * API Gateway's WebSocket API on this machine: each upgrade is a `$connect` event (refused unless the handler
 * answers 2xx), each message a `$default` event, each close a `$disconnect` event, handed to the very handler
 * module that runs on Lambda. The same server answers the connection-management API the handler sends with.
 */
export async function startWebSocketGateway(group: WebSocketRouteGroup, options: { host?: string; port?: number } = {}): Promise<LocalWebSocketGateway> {
  const host = options.host ?? '127.0.0.1';
  const handler = (await import(pathToFileURL(join(repoRoot, group.entry)).href) as { handler: WebSocketHandler }).handler;
  const sockets = new Map<string, WebSocket>();
  const upgrader = new WebSocketServer({ noServer: true });
  const connectedAt = new Map<string, number>();

  const event = (routeKey: string, connectionId: string, extra: Record<string, unknown>) => {
    const now = Date.now();
    return {
      requestContext: {
        routeKey,
        eventType: routeKey === '$connect' ? 'CONNECT' : routeKey === '$disconnect' ? 'DISCONNECT' : 'MESSAGE',
        messageId: randomUUID(),
        extendedRequestId: randomUUID(),
        requestTime: new Date(now).toUTCString(),
        messageDirection: 'IN',
        stage: 'local',
        connectedAt: connectedAt.get(connectionId) ?? now,
        requestTimeEpoch: now,
        requestId: randomUUID(),
        domainName: `${host}:${port}`,
        connectionId,
        apiId: 'local',
      },
      isBase64Encoded: false,
      ...extra,
    };
  };

  const invoke = async (routeKey: string, connectionId: string, extra: Record<string, unknown>): Promise<number> => {
    try {
      return (await accountInvocation(group.name, 'websocket-api', () => handler(event(routeKey, connectionId, extra))))?.statusCode ?? 200;
    } catch (error) {
      console.error(JSON.stringify({ level: 'ERROR', message: 'websocket handler failed', routeKey, error: String((error as Error)?.stack ?? error) }));
      return 500;
    }
  };

  const server: Server = createServer((request, response) => {
    // The connection-management API: POST sends to a connection, DELETE closes it, GET describes it.
    const match = /^\/@connections\/([^/?]+)/.exec(request.url ?? '');
    const socket = match ? sockets.get(decodeURIComponent(match[1] as string)) : undefined;
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (!match) {
        response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ message: 'Not Found' }));
        return;
      }
      if (!socket) {
        response.writeHead(410, { 'content-type': 'application/json', 'x-amzn-errortype': 'GoneException' }).end(JSON.stringify({ message: 'Gone' }));
        return;
      }
      if (request.method === 'POST') {
        const message = Buffer.concat(chunks);
        recordCost({ kind: 'websocket-message', direction: 'out', bytes: message.length });
        socket.send(message.toString('utf8'));
      } else if (request.method === 'DELETE') socket.close(1000);
      response.writeHead(200, { 'content-type': 'application/json' }).end(request.method === 'GET' ? JSON.stringify({ connectedAt: new Date().toISOString() }) : '');
    });
  });

  server.on('upgrade', (request: IncomingMessage, socket, head) => {
    const connectionId = randomBytes(12).toString('base64url').replace(/[-_]/g, 'A');
    const url = new URL(request.url ?? '/', `http://${host}`);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers)) if (typeof value === 'string') headers[name] = value;
    connectedAt.set(connectionId, Date.now());
    void invoke('$connect', connectionId, {
      headers,
      ...(url.searchParams.size > 0 ? { queryStringParameters: Object.fromEntries(url.searchParams) } : {}),
    }).then((status) => {
      if (status < 200 || status >= 300) {
        connectedAt.delete(connectionId);
        socket.end(`HTTP/1.1 ${status} Refused\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
        return;
      }
      upgrader.handleUpgrade(request, socket, head, (ws) => {
        sockets.set(connectionId, ws);
        // API Gateway invokes the route for each message as it arrives, without waiting for earlier ones.
        ws.on('message', (data) => {
          const body = data.toString();
          recordCost({ kind: 'websocket-message', direction: 'in', bytes: Buffer.byteLength(body) });
          void invoke('$default', connectionId, { body });
        });
        ws.on('close', () => {
          sockets.delete(connectionId);
          recordCost({ kind: 'websocket-connection', durationMs: Date.now() - (connectedAt.get(connectionId) ?? Date.now()) });
          void invoke('$disconnect', connectionId, {}).finally(() => connectedAt.delete(connectionId));
        });
      });
    });
  });

  await new Promise<void>((resolveListen) => server.listen(options.port ?? 0, host, resolveListen));
  const port = (server.address() as { port: number }).port;
  return {
    url: `ws://${host}:${port}`,
    managementEndpoint: `http://${host}:${port}`,
    port,
    dropConnections: () => {
      for (const ws of sockets.values()) ws.terminate();
    },
    stop: async () => {
      for (const ws of sockets.values()) ws.terminate();
      server.closeAllConnections();
      await new Promise((resolveClose) => server.close(resolveClose));
    },
  };
}
