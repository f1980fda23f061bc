import { createAgent, deleteAgent, getAgent, listAgents, updateAgent } from '../../shared/agents/agents.ts';
import { authorOf, diffAgentVersions, getAgentVersion, listAgentVersions, publishAgent, rollbackAgent } from '../../shared/agents/agent-versions.ts';
import { exportAgent, importAgent } from '../../shared/agents/agent-export.ts';
import { createHttpHandler } from '../../shared/platform/http/handler.ts';
import { getReplay, startReplay } from '../../shared/conversations/replays.ts';
import { replayRequestRuntime } from '../../shared/conversations/replay-runtime.ts';
import { agentRoutes } from './routes.ts';

export const handler = createHttpHandler(
  agentRoutes,
  {
    createAgent: ({ deps, principal, body, sealResponse }) => createAgent(deps, principal.orgId, body, authorOf(principal), sealResponse),
    updateAgent: ({ deps, principal, params, body }) => updateAgent(deps, principal.orgId, params.id, body, authorOf(principal)),
    listAgents: ({ deps, principal, query }) => listAgents(deps, principal.orgId, query),
    getAgent: ({ deps, principal, params }) => getAgent(deps, principal.orgId, params.id),
    exportAgent: ({ deps, principal, params, query }) => exportAgent(deps, principal, params.id, query),
    importAgent: ({ deps, principal, body, sealResponse }) => importAgent(deps, principal, body, sealResponse),
    deleteAgent: ({ deps, principal, params }) => deleteAgent(deps, principal.orgId, params.id),
    publishAgent: ({ deps, principal, params, body }) => publishAgent(deps, principal.orgId, params.id, body.version, authorOf(principal)),
    rollbackAgent: ({ deps, principal, params, body }) => rollbackAgent(deps, principal.orgId, params.id, body.version, authorOf(principal)),
    listAgentVersions: ({ deps, principal, params, query }) => listAgentVersions(deps, principal.orgId, params.id, query),
    getAgentVersion: ({ deps, principal, params }) => getAgentVersion(deps, principal.orgId, params.id, params.number),
    diffAgentVersions: ({ deps, principal, params, query }) => diffAgentVersions(deps, principal.orgId, params.id, params.number, query.against),
    startReplay: ({ deps, principal, params, body }) => startReplay(deps, principal.orgId, params.id, body),
    getReplay: ({ deps, principal, params }) => getReplay(deps, principal.orgId, params.id, params.replayId),
  },
  replayRequestRuntime,
);
