import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';

/**
 * A proxy in front of DynamoDB Local for tests that kill a process the moment one of its writes has committed:
 * `killsAfter` looks at each request (its operation and body) and may return what to do once it has committed
 * (DynamoDB answered 200): true when that killed the process, whose answer is then dropped, so that it dies before
 * it can hear of the commit. `delayMs` holds each request that long before forwarding it.
 */
export function crashProxy(
  database: URL,
  killsAfter: (operation: string, body: Buffer) => (() => boolean) | undefined,
  delayMs: (operation: string) => number = () => 0,
): Server {
  return createServer(async (clientRequest, clientResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of clientRequest) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const operation = String(clientRequest.headers['x-amz-target']).split('.')[1] ?? '';
    const delay = delayMs(operation);
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    const kill = killsAfter(operation, body);
    const upstream = httpRequest({ host: database.hostname, port: database.port, path: clientRequest.url, method: clientRequest.method, headers: clientRequest.headers });
    upstream.end(body);
    const [answer] = (await once(upstream, 'response')) as [IncomingMessage];
    const answerChunks: Buffer[] = [];
    for await (const chunk of answer) answerChunks.push(chunk as Buffer);
    if (kill && answer.statusCode === 200 && kill()) {
      clientResponse.destroy();
      return;
    }
    clientResponse.writeHead(answer.statusCode ?? 500, answer.headers);
    clientResponse.end(Buffer.concat(answerChunks));
  });
}

/** A proxy in front of DynamoDB Local that holds each request `delayMs(operation)` ms before forwarding it: a slow table. */
export const slowProxy = (database: URL, delayMs: (operation: string) => number): Server => crashProxy(database, () => undefined, delayMs);
