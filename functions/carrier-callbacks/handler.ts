import { handleInboundCall, handleRecordingCallback, handleRelayEnded, handleStatusCallback } from '../../shared/domain/voice.ts';
import { createHttpHandler, TextBody } from '../../shared/http/handler.ts';
import { voiceRuntime } from '../../shared/voice-runtime.ts';
import { carrierCallbackRoutes } from './routes.ts';

const twimlType = 'text/xml; charset=utf-8';
const emptyTwiml = '<?xml version="1.0" encoding="UTF-8"?><Response/>';

export const handler = createHttpHandler(
  carrierCallbackRoutes,
  {
    callStatus: async ({ deps, params, body, headers }) => {
      await handleStatusCallback(deps, params.orgId, params.sessionId, body, headers['x-twilio-signature']);
      return new TextBody(twimlType, emptyTwiml);
    },
    relayEnded: async ({ deps, params, body, headers }) =>
      new TextBody(twimlType, await handleRelayEnded(deps, params.orgId, params.sessionId, body, headers['x-twilio-signature'])),
    recording: async ({ deps, params, body, headers }) => {
      await handleRecordingCallback(deps, params.orgId, params.sessionId, body, headers['x-twilio-signature']);
      return new TextBody(twimlType, emptyTwiml);
    },
    inboundCall: async ({ deps, body, headers }) => new TextBody(twimlType, await handleInboundCall(deps, body, headers['x-twilio-signature'])),
  },
  voiceRuntime,
);
