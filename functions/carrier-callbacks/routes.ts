import * as z from 'zod';
import { orgIdPattern } from '../../shared/platform/http/principal.ts';
import { defineRouteGroup } from '../../shared/platform/http/route.ts';

const callParams = z.object({
  orgId: z.string().regex(orgIdPattern),
  sessionId: z.uuid(),
});

/** Twilio posts form fields; they are all signed, so all are kept as strings. */
const carrierForm = z.record(z.string(), z.string());

const twiml = z.string().startsWith('<?xml');

/**
 * What the carrier calls: public routes (no API key), each request verified with `X-Twilio-Signature` under the
 * organization's auth token (401 otherwise). Answers are TwiML.
 */
export const carrierCallbackRoutes = defineRouteGroup({
  name: 'carrier-callbacks',
  entry: 'functions/carrier-callbacks/handler.ts',
  // Opens the carrier's auth token to verify signatures, fetch recordings and hang up; writes recordings.
  opensSecrets: true,
  telephony: { recordings: 'write', schedulesBackstops: true },
  routes: {
    callStatus: {
      method: 'POST',
      path: '/twilio/calls/{orgId}/{sessionId}/status',
      internal: true,
      scope: 'public',
      summary: "Twilio's status callback of a call (every status; retried and possibly out of order)",
      successStatus: 200,
      params: callParams,
      body: carrierForm,
      bodyFormat: 'form',
      response: twiml,
    },
    relayEnded: {
      method: 'POST',
      path: '/twilio/calls/{orgId}/{sessionId}/relay-ended',
      internal: true,
      scope: 'public',
      summary: "The <Connect> action: the call's ConversationRelay ended; answers <Hangup/>, or <Dial> for a transfer",
      successStatus: 200,
      params: callParams,
      body: carrierForm,
      bodyFormat: 'form',
      response: twiml,
    },
    whisper: {
      method: 'POST',
      path: '/twilio/calls/{orgId}/{sessionId}/whisper',
      internal: true,
      scope: 'public',
      summary: "A warm transfer's <Number url>: what the destination hears before it is connected to the caller",
      successStatus: 200,
      params: callParams,
      body: carrierForm,
      bodyFormat: 'form',
      response: twiml,
    },
    recording: {
      method: 'POST',
      path: '/twilio/calls/{orgId}/{sessionId}/recording',
      internal: true,
      scope: 'public',
      summary: "Twilio's recording status callback: the recording is copied to our bucket, then deleted at Twilio",
      successStatus: 200,
      params: callParams,
      body: carrierForm,
      bodyFormat: 'form',
      response: twiml,
    },
    inboundCall: {
      method: 'POST',
      path: '/twilio/voice',
      internal: true,
      scope: 'public',
      summary: "Twilio's voice webhook for imported numbers: the number's inbound agent answers",
      successStatus: 200,
      body: carrierForm,
      bodyFormat: 'form',
      response: twiml,
    },
    inboundStatus: {
      method: 'POST',
      path: '/twilio/voice/status',
      internal: true,
      scope: 'public',
      summary: "The status callback of imported numbers: Twilio tells the end of each inbound call",
      successStatus: 200,
      body: carrierForm,
      bodyFormat: 'form',
      response: twiml,
    },
  },
});
