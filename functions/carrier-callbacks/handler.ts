import { handleInboundCall, handleRecordingCallback, handleRelayEnded, handleStatusCallback } from '../../shared/domain/voice.ts';
import { createHttpHandler, RawBody } from '../../shared/http/handler.ts';
import { voiceRuntime } from '../../shared/voice-runtime.ts';
import { carrierCallbackRoutes } from './routes.ts';

const emptyTwiml = '<?xml version="1.0" encoding="UTF-8"?><Response/>';
const twiml = (document: string) => new RawBody(document, { 'content-type': 'text/xml; charset=utf-8' });

export const handler = createHttpHandler(
  carrierCallbackRoutes,
  {
    callStatus: async ({ deps, params, body, headers }) => {
      await handleStatusCallback(deps, params.orgId, params.sessionId, body, headers['x-twilio-signature']);
      return twiml(emptyTwiml);
    },
    relayEnded: async ({ deps, params, body, headers }) =>
      twiml(await handleRelayEnded(deps, params.orgId, params.sessionId, body, headers['x-twilio-signature'])),
    recording: async ({ deps, params, body, headers }) => {
      await handleRecordingCallback(deps, params.orgId, params.sessionId, body, headers['x-twilio-signature']);
      return twiml(emptyTwiml);
    },
    inboundCall: async ({ deps, body, headers }) => twiml(await handleInboundCall(deps, body, headers['x-twilio-signature'])),
  },
  voiceRuntime,
);
