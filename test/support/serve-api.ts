/**
 * The HTTP API alone in a process of its own, against the database DYNAMODB_ENDPOINT and TABLE_NAME name (no
 * DynamoDB Local of its own, no queues): for tests that kill the process mid-request. Prints `listening <port>`.
 */
import { routeGroups } from '../../functions/route-groups.ts';
import { createLocalServer } from '../../infra/local/server.ts';
import { listenOnLoopback } from './loopback-server.ts';

const { server } = createLocalServer(routeGroups);
console.log(`listening ${await listenOnLoopback(server)}`);
