import { agentPage, agentSchema, createAgentBody, listAgentsQuery, updateAgentBody } from '../../shared/agents/agent-schemas.ts';
import { idParams } from '../../shared/platform/schemas/common.ts';
import { defineRouteGroup } from '../../shared/platform/http/route.ts';

export const agentRoutes = defineRouteGroup({
  name: 'agents',
  entry: 'functions/agents/handler.ts',
  routes: {
    createAgent: {
      method: 'POST',
      path: '/v2/chat/agents',
      scope: 'agents:write',
      summary: 'Create an agent',
      successStatus: 201,
      response: agentSchema,
      errors: ['MODELS_NOT_FOUND', 'TOOLS_NOT_FOUND', 'INVALID_ANALYSIS_CONFIG', 'VOICE_NOT_FOUND', 'KNOWLEDGE_STORE_NOT_FOUND'],
      body: createAgentBody,
      idempotent: true,
    },
    updateAgent: {
      method: 'PATCH',
      path: '/v2/chat/agents/{id}',
      aliases: ['/v1/chat/agents/{id}'],
      scope: 'agents:write',
      summary: 'Update an agent, including its tools',
      successStatus: 200,
      response: agentSchema,
      errors: ['MODELS_NOT_FOUND', 'TOOLS_NOT_FOUND', 'INVALID_ANALYSIS_CONFIG', 'VOICE_NOT_FOUND', 'KNOWLEDGE_STORE_NOT_FOUND', 'CONCURRENT_MODIFICATION'],
      params: idParams,
      body: updateAgentBody,
    },
    listAgents: {
      method: 'GET',
      path: '/v1/chat/agents',
      aliases: ['/v2/chat/agents'],
      scope: 'agents:read',
      summary: 'List agents',
      successStatus: 200,
      response: agentPage,
      query: listAgentsQuery,
      overlapAuthentication: true,
    },
    getAgent: {
      method: 'GET',
      path: '/v1/chat/agents/{id}',
      aliases: ['/v2/chat/agents/{id}'],
      scope: 'agents:read',
      summary: 'Get an agent',
      successStatus: 200,
      response: agentSchema,
      params: idParams,
      overlapAuthentication: true,
    },
    deleteAgent: {
      method: 'DELETE',
      path: '/v1/chat/agents/{id}',
      aliases: ['/v2/chat/agents/{id}'],
      scope: 'agents:write',
      summary: 'Delete an agent',
      successStatus: 204,
      params: idParams,
    },
  },
});
