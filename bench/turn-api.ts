/**
 * The local runtime alone in a child process, so that `npm run bench` can read its CPU time and memory apart from
 * DynamoDB Local, the stub model and the load generator. Configured by the parent through the environment;
 * reports its port on the IPC channel.
 */
import type { AddressInfo } from 'node:net';
import { routeGroups } from '../functions/route-groups.ts';
import { createLocalServer } from '../infra/local/server.ts';

const { server, preload } = createLocalServer(routeGroups);
await preload();
server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }));
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
