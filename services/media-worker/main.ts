import { createServer } from 'node:http';
import { logger } from '../../shared/platform/logger.ts';

/**
 * The media worker's entry: what the container image runs (services/media-worker/Dockerfile). It answers `/health`,
 * which the load balancer and ECS check; the Media Streams endpoint `/media-stream` joins it (docs/voice.md).
 */
const port = Number(process.env.PORT ?? 8080);

const server = createServer((request, response) => {
  const status = request.method === 'GET' && request.url === '/health' ? 200 : 404;
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(status === 200 ? { status: 'ok' } : { error: 'NOT_FOUND' }));
});

// ECS sends SIGTERM before it stops a task: no new connection, and the process ends once the open ones have.
process.once('SIGTERM', () => server.close());
server.listen(port, () => logger.info('media worker listening', { port }));
