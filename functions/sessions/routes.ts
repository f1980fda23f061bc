import { idParams } from '../../shared/schemas/common.ts';
import { createSessionBody, listMessagesQuery, listSessionsQuery } from '../../shared/schemas/session.ts';
import { defineRouteGroup } from '../../shared/http/route.ts';

export const sessionRoutes = defineRouteGroup({
  name: 'sessions',
  entry: 'functions/sessions/handler.ts',
  routes: {
    createSession: {
      method: 'POST',
      path: '/v1/chat/chat/sessions',
      scope: 'chat:write',
      summary: 'Open a chat session with an agent',
      successStatus: 201,
      body: createSessionBody,
      idempotent: true,
    },
    createSessionLegacy: {
      method: 'POST',
      path: '/api/v1/chat/sessions',
      scope: 'chat:write',
      summary: 'Deprecated twin of POST /v1/chat/chat/sessions',
      successStatus: 201,
      body: createSessionBody,
      idempotent: true,
      deprecated: { since: '2026-06-01T00:00:00Z', sunset: '2027-06-01T00:00:00Z', successor: '/v1/chat/chat/sessions' },
    },
    listSessions: {
      method: 'GET',
      path: '/v1/chat/chat/sessions',
      scope: 'chat:read',
      summary: 'List sessions by agent, state, platform and creation time',
      successStatus: 200,
      query: listSessionsQuery,
    },
    getSession: {
      method: 'GET',
      path: '/api/v1/chat/sessions/{id}',
      scope: 'chat:read',
      summary: 'Get a session',
      successStatus: 200,
      params: idParams,
    },
    listMessages: {
      method: 'GET',
      path: '/api/v1/chat/sessions/{id}/messages',
      scope: 'chat:read',
      summary: 'The full message history of a session, in order',
      successStatus: 200,
      params: idParams,
      query: listMessagesQuery,
    },
    closeSession: {
      method: 'PATCH',
      path: '/v1/chat/chat/sessions/{id}/close',
      scope: 'chat:write',
      summary: 'Close a session (idempotent)',
      successStatus: 200,
      params: idParams,
    },
    analyseSession: {
      method: 'POST',
      path: '/v1/chat/chat/sessions/{id}/analysis',
      scope: 'chat:write',
      summary: "Re-run an ended session's analysis with the agent's current configuration (asynchronous)",
      successStatus: 202,
      params: idParams,
      idempotent: true,
    },
  },
});
