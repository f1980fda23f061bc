import { requestAnalysisRerun } from '../../shared/analysis/analysis.ts';
import { closeSession, createSession, getSession, listMessages, listSessions, publicSession } from '../../shared/conversations/sessions.ts';
import { createHttpHandler } from '../../shared/platform/http/handler.ts';
import { runtime } from '../../shared/runtime.ts';
import { sessionRoutes } from './routes.ts';

export const handler = createHttpHandler(
  sessionRoutes,
  {
    createSession: ({ deps, principal, body, sealResponse }) => createSession(deps, principal.orgId, body, sealResponse),
    createSessionLegacy: ({ deps, principal, body, sealResponse }) => createSession(deps, principal.orgId, body, sealResponse),
    listSessions: ({ deps, principal, query }) => listSessions(deps, principal.orgId, query),
    getSession: async ({ deps, principal, params }) => publicSession(await getSession(deps, principal.orgId, params.id)),
    listMessages: ({ deps, principal, params, query }) => listMessages(deps, principal.orgId, params.id, query),
    closeSession: ({ deps, principal, params }) => closeSession(deps, principal.orgId, params.id),
    analyseSession: ({ deps, principal, params, sealResponse }) => requestAnalysisRerun(deps, principal.orgId, params.id, sealResponse),
  },
  runtime,
);
