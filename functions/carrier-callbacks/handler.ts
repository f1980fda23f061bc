import { handleInboundCall, handleInboundStatusCallback, handleRecordingCallback, handleRelayEnded, handleStatusCallback, handleWhisper } from '../../shared/voice/voice.ts';
import { createHttpHandler, RawBody } from '../../shared/platform/http/handler.ts';
import { voiceRuntime } from '../../shared/voice/voice-runtime.ts';
import { carrierCallbackRoutes } from './routes.ts';

const emptyTwiml = '<?xml version="1.0" encoding="UTF-8"?><Response/>';
const twiml = (document: string) => new RawBody(document, { 'content-type': 'text/xml; charset=utf-8' });
const signedWith = (headers: Readonly<Record<string, string | undefined>>, rawQueryString: string) => ({ signature: headers['x-twilio-signature'], query: rawQueryString });

export const handler = createHttpHandler(
  carrierCallbackRoutes,
  {
    callStatus: async ({ deps, params, body, headers, rawQueryString }) => {
      await handleStatusCallback(deps, params.orgId, params.sessionId, body, signedWith(headers, rawQueryString));
      return twiml(emptyTwiml);
    },
    relayEnded: async ({ deps, params, body, headers, rawQueryString }) =>
      twiml(await handleRelayEnded(deps, params.orgId, params.sessionId, body, signedWith(headers, rawQueryString))),
    whisper: async ({ deps, params, body, headers, rawQueryString }) =>
      twiml(await handleWhisper(deps, params.orgId, params.sessionId, body, signedWith(headers, rawQueryString))),
    recording: async ({ deps, params, body, headers, rawQueryString }) => {
      await handleRecordingCallback(deps, params.orgId, params.sessionId, body, signedWith(headers, rawQueryString));
      return twiml(emptyTwiml);
    },
    inboundCall: async ({ deps, body, headers, rawQueryString }) => twiml(await handleInboundCall(deps, body, signedWith(headers, rawQueryString))),
    inboundStatus: async ({ deps, body, headers, rawQueryString }) => {
      await handleInboundStatusCallback(deps, body, signedWith(headers, rawQueryString));
      return twiml(emptyTwiml);
    },
  },
  voiceRuntime,
);
