import { conversationRuntime, type ConversationRuntime } from '../conversations/conversation-runtime.ts';
import type { WhatsappConversationDeps, WhatsappWebhookDeps } from './whatsapp.ts';
import type { WhatsappOutboundDeps } from './whatsapp-conversations.ts';
import { runtime, type Runtime } from '../runtime.ts';
import { secretCipherFromConfig } from '../platform/secrets/secret-cipher.ts';
import { DynamoWhatsappStore } from './whatsapp-store.ts';
import { GraphApiMessaging } from './graph-client.ts';
import { sqsWhatsappInbound } from './sqs-inbound.ts';
import { s3WhatsappMedia } from './s3-media.ts';
import { createTranscriber } from '../models/model-providers.ts';
import type { Config } from '../platform/config.ts';

/** The runtime plus WhatsApp's numbers and the inbound queue: the numbers' routes and Meta's webhook. */
export type WhatsappRuntime = Runtime & WhatsappWebhookDeps;

/** What the inbound consumer needs besides: turns, and the Graph API to answer with. */
export type WhatsappConversationRuntime = ConversationRuntime & WhatsappConversationDeps;

/** Conversations a business starts (templates) and customers' media: the Graph API and the media bucket. */
export type WhatsappOutboundRuntime = Runtime & WhatsappOutboundDeps;

let processRuntime: WhatsappRuntime | undefined;
let processConversationRuntime: WhatsappConversationRuntime | undefined;
let processOutboundRuntime: WhatsappOutboundRuntime | undefined;

const whatsappStore = (base: Runtime) => new DynamoWhatsappStore(base.documentClient, base.config.TABLE_NAME, secretCipherFromConfig(base.config));
const mediaStore = (config: Config) => s3WhatsappMedia({ bucket: config.WHATSAPP_MEDIA_BUCKET, region: config.AWS_REGION, endpoint: config.S3_ENDPOINT });

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
    processConversationRuntime = {
      ...base,
      whatsapp: whatsappStore(base),
      messaging: new GraphApiMessaging(base.config.WHATSAPP_GRAPH_API_URL),
      media: mediaStore(base.config),
      transcriber: (model) => createTranscriber(model, base.config),
    };
  }
  return processConversationRuntime;
}

export function whatsappOutboundRuntime(): WhatsappOutboundRuntime {
  if (!processOutboundRuntime) {
    const base = runtime();
    processOutboundRuntime = { ...base, whatsapp: whatsappStore(base), messaging: new GraphApiMessaging(base.config.WHATSAPP_GRAPH_API_URL), media: mediaStore(base.config) };
  }
  return processOutboundRuntime;
}
