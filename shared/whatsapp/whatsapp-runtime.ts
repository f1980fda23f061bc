import { conversationRuntime, type ConversationRuntime } from '../conversations/conversation-runtime.ts';
import type { WhatsappConversationDeps, WhatsappWebhookDeps } from './whatsapp.ts';
import { runtime, type Runtime } from '../runtime.ts';
import { secretCipherFromConfig } from '../platform/secrets/secret-cipher.ts';
import { DynamoWhatsappStore } from './whatsapp-store.ts';
import { GraphApiMessaging } from './graph-client.ts';
import { sqsWhatsappInbound } from './sqs-inbound.ts';

/** The runtime plus WhatsApp's numbers and the inbound queue: the numbers' routes and Meta's webhook. */
export type WhatsappRuntime = Runtime & WhatsappWebhookDeps;

/** What the inbound consumer needs besides: turns, and the Graph API to answer with. */
export type WhatsappConversationRuntime = ConversationRuntime & WhatsappConversationDeps;

let processRuntime: WhatsappRuntime | undefined;
let processConversationRuntime: WhatsappConversationRuntime | undefined;

const whatsappStore = (base: Runtime) => new DynamoWhatsappStore(base.documentClient, base.config.TABLE_NAME, secretCipherFromConfig(base.config));

export function whatsappRuntime(): WhatsappRuntime {
  if (!processRuntime) {
    const base = runtime();
    processRuntime = { ...base, whatsapp: whatsappStore(base), inbound: sqsWhatsappInbound(base.config) };
  }
  return processRuntime;
}

export function whatsappConversationRuntime(): WhatsappConversationRuntime {
  if (!processConversationRuntime) {
    const base = conversationRuntime();
    processConversationRuntime = { ...base, whatsapp: whatsappStore(base), messaging: new GraphApiMessaging(base.config.WHATSAPP_GRAPH_API_URL) };
  }
  return processConversationRuntime;
}
