import { agentRoutes } from './agents/routes.ts';
import { analyticsRoutes } from './analytics/routes.ts';
import { callCampaignRoutes } from './call-campaigns/routes.ts';
import { apiKeyRoutes } from './api-keys/routes.ts';
import { chatMessageRoutes } from './chat-messages/routes.ts';
import { contactRoutes } from './contacts/routes.ts';
import { edgeRoutes } from './edge/routes.ts';
import { eventRoutes } from './events/routes.ts';
import { carrierCallbackRoutes } from './carrier-callbacks/routes.ts';
import { knowledgeRoutes } from './knowledge/routes.ts';
import { modelRoutes } from './models/routes.ts';
import { phoneNumberRoutes } from './phone-numbers/routes.ts';
import { sessionRoutes } from './sessions/routes.ts';
import { toolRoutes } from './tools/routes.ts';
import { usageRoutes } from './usage/routes.ts';
import { webhookRoutes } from './webhooks/routes.ts';
import { whatsappConversationRoutes } from './whatsapp-conversations/routes.ts';
import { whatsappNumberRoutes } from './whatsapp-numbers/routes.ts';
import { whatsappWebhookRoutes } from './whatsapp-webhook/routes.ts';
import type { RouteGroup } from '../shared/platform/http/route.ts';
import type { NamedComponents } from '../shared/platform/http/openapi.ts';
import { agentSchema } from '../shared/agents/agent-schemas.ts';
import { analysisResultSchema } from '../shared/conversations/analysis-result-schemas.ts';
import { apiKeySchema } from '../shared/identity/api-key-schemas.ts';
import { modelSchema } from '../shared/models/model-schemas.ts';
import { messageSchema, sessionSchema } from '../shared/conversations/session-schemas.ts';
import { toolSchema } from '../shared/agents/tool-schemas.ts';
import { webhookDeliverySchema, webhookEndpointSchema } from '../shared/webhooks/webhook-schemas.ts';

/** Every endpoint group of the API: the CDK stack deploys these and the local runtime serves these. */
export const routeGroups: readonly RouteGroup[] = [
  edgeRoutes,
  apiKeyRoutes,
  agentRoutes,
  toolRoutes,
  modelRoutes,
  sessionRoutes,
  chatMessageRoutes,
  eventRoutes,
  webhookRoutes,
  usageRoutes,
  analyticsRoutes,
  phoneNumberRoutes,
  carrierCallbackRoutes,
  knowledgeRoutes,
  contactRoutes,
  whatsappNumberRoutes,
  whatsappWebhookRoutes,
  whatsappConversationRoutes,
  callCampaignRoutes,
];

/** Resources many responses share, named in /openapi.json so that the description and the typed client refer to them by name. */
export const namedComponents: NamedComponents = {
  Agent: agentSchema,
  Tool: toolSchema,
  Model: modelSchema,
  ApiKey: apiKeySchema,
  Session: sessionSchema,
  Message: messageSchema,
  AnalysisResult: analysisResultSchema,
  WebhookEndpoint: webhookEndpointSchema,
  WebhookDelivery: webhookDeliverySchema,
};
