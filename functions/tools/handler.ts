import { createTool, deleteTool, getTool, listTools, updateTool } from '../../shared/agents/tools.ts';
import { authorOf } from '../../shared/agents/agent-versions.ts';
import { createHttpHandler } from '../../shared/platform/http/handler.ts';
import { runtime } from '../../shared/runtime.ts';
import { toolRoutes } from './routes.ts';

export const handler = createHttpHandler(
  toolRoutes,
  {
    createTool: ({ deps, principal, body, sealResponse }) => createTool(deps, principal.orgId, body, sealResponse),
    listTools: ({ deps, principal, query }) => listTools(deps, principal.orgId, query),
    getTool: ({ deps, principal, params }) => getTool(deps, principal.orgId, params.id),
    updateTool: ({ deps, principal, params, body }) => updateTool(deps, principal.orgId, params.id, body, authorOf(principal)),
    deleteTool: ({ deps, principal, params, query }) => deleteTool(deps, principal.orgId, params.id, query.force, authorOf(principal)),
  },
  runtime,
);
