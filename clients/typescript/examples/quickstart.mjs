// The quickstart of @agent-platform/client in plain JavaScript, for Node 20+ (a browser runs the same code without
// `process`): an agent, a session, the reply as it streams, then the session's messages on the event stream.
//   AGENT_PLATFORM_API_URL=http://127.0.0.1:3000 AGENT_PLATFORM_API_KEY=apk_… node quickstart.mjs
import { ApiError, createApiClient } from '@agent-platform/client';

const api = createApiClient({
  baseUrl: process.env.AGENT_PLATFORM_API_URL ?? 'http://127.0.0.1:3000',
  apiKey: process.env.AGENT_PLATFORM_API_KEY,
});

/** The data of an answer, or its error envelope thrown as an ApiError (status, code, message). */
function dataOf({ data, error }) {
  if (error) throw new ApiError(error);
  return data;
}

// A cursor is a time (ms): the event stream resumed from here replays what this script is about to cause.
const since = String(Date.now());
const agent = dataOf(await api.POST('/v2/chat/agents', {
  body: { fullName: 'Quickstart', description: 'Greets', role: 'You are a friendly agent.' },
}));
const session = dataOf(await api.POST('/v1/chat/chat/sessions', { body: { agentId: agent.id } }));

for await (const delta of api.replyDeltas(session.id, { content: 'Hello!' })) process.stdout.write(delta);
process.stdout.write('\n');

// The stream never ends by itself: abort it once both messages (the user's, the reply) have come, or after 10 s.
// Events come in the log's order, close to time order: sort by `createdAt` where order matters.
const stop = new AbortController();
const giveUp = setTimeout(() => stop.abort(), 10_000);
let seen = 0;
for await (const { type, data: event } of api.events({ types: 'message.added', lastEventId: since }, stop.signal)) {
  if (event.data.sessionId !== session.id) continue;
  console.log(`${type}: ${event.data.role}`);
  if (++seen === 2) stop.abort();
}
clearTimeout(giveUp);
