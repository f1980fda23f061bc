import { createAgent, deleteAgent, getAgent, listAgents, updateAgent } from '../../shared/agents/agents.ts';
import { exportAgent, importAgent } from '../../shared/agents/agent-export.ts';
import { createHttpHandler } from '../../shared/platform/http/handler.ts';
import { runtime } from '../../shared/runtime.ts';
import { agentRoutes } from './routes.ts';

export const handler = createHttpHandler(
  agentRoutes,
  {
    createAgent: ({ deps, principal, body, sealResponse }) => createAgent(deps, principal.orgId, body, sealResponse),
    updateAgent: ({ deps, principal, params, body }) => updateAgent(deps, principal.orgId, params.id, body),
    listAgents: ({ deps, principal, query }) => listAgents(deps, principal.orgId, query),
    getAgent: ({ deps, principal, params }) => getAgent(deps, principal.orgId, params.id),
    exportAgent: ({ deps, principal, params }) => exportAgent(deps, principal, params.id),
    importAgent: ({ deps, principal, body, sealResponse }) => importAgent(deps, principal, body, sealResponse),
    deleteAgent: ({ deps, principal, params }) => deleteAgent(deps, principal.orgId, params.id),
  },
  runtime,
);
