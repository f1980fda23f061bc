import { idParams } from '../../shared/platform/schemas/common.ts';
import { createToolBody, deleteToolQuery, listToolsQuery, toolPage, toolSchema, updateToolBody } from '../../shared/agents/tool-schemas.ts';
import { defineRouteGroup } from '../../shared/platform/http/route.ts';

export const toolRoutes = defineRouteGroup({
  name: 'tools',
  entry: 'functions/tools/handler.ts',
  // A FUNCTION_TOOL's signing secret is sealed here; only the functions that run turns open it.
  sealsSecrets: true,
  routes: {
    createTool: {
      method: 'POST',
      path: '/v1/chat/tools',
      scope: 'tools:write',
      summary: 'Create a tool',
      successStatus: 201,
      response: toolSchema,
      errors: ['TOOL_NAME_TAKEN', 'INVALID_TOOL_SCHEMA', 'TOOL_URL_NOT_ALLOWED'],
      body: createToolBody,
      idempotent: true,
    },
    listTools: {
      method: 'GET',
      path: '/v1/chat/tools',
      scope: 'tools:read',
      summary: 'List tools',
      successStatus: 200,
      response: toolPage,
      query: listToolsQuery,
      overlapAuthentication: true,
    },
    getTool: {
      method: 'GET',
      path: '/v1/chat/tools/{id}',
      scope: 'tools:read',
      summary: 'Get a tool',
      successStatus: 200,
      response: toolSchema,
      params: idParams,
      overlapAuthentication: true,
    },
    updateTool: {
      method: 'PATCH',
      path: '/v1/chat/tools/{id}',
      scope: 'tools:write',
      summary: 'Update a tool; agents pick the change up on their next turn',
      successStatus: 200,
      response: toolSchema,
      errors: ['INVALID_TOOL_SCHEMA', 'TOOL_URL_NOT_ALLOWED', 'CONCURRENT_MODIFICATION'],
      params: idParams,
      body: updateToolBody,
    },
    deleteTool: {
      method: 'DELETE',
      path: '/v1/chat/tools/{id}',
      scope: 'tools:write',
      summary: 'Delete a tool; 409 while attached unless force=true detaches it',
      successStatus: 204,
      errors: ['TOOL_IN_USE'],
      params: idParams,
      query: deleteToolQuery,
    },
  },
});
