import {
  buyPhoneNumber,
  deletePhoneNumber,
  deleteTwilioCredentials,
  getPhoneNumber,
  getTwilioCredentials,
  importPhoneNumber,
  listPhoneNumbers,
  putTwilioCredentials,
  recordingLink,
  searchAvailablePhoneNumbers,
  startOutboundCall,
  startVoiceSession,
  updatePhoneNumber,
} from '../../shared/voice/voice.ts';
import { createHttpHandler, RawBody } from '../../shared/platform/http/handler.ts';
import { voiceRuntime } from '../../shared/voice/voice-runtime.ts';
import { phoneNumberRoutes } from './routes.ts';

export const handler = createHttpHandler(
  phoneNumberRoutes,
  {
    listPhoneNumbers: ({ deps, principal, query }) => listPhoneNumbers(deps, principal.orgId, query.size),
    importPhoneNumber: ({ deps, principal, body }) => importPhoneNumber(deps, principal.orgId, body),
    searchAvailablePhoneNumbers: ({ deps, principal, query }) => searchAvailablePhoneNumbers(deps, principal.orgId, query),
    buyPhoneNumber: ({ deps, principal, body }) => buyPhoneNumber(deps, principal.orgId, body),
    getPhoneNumber: ({ deps, principal, params }) => getPhoneNumber(deps, principal.orgId, params.phone_number_id),
    updatePhoneNumber: ({ deps, principal, params, body }) => updatePhoneNumber(deps, principal.orgId, params.phone_number_id, body),
    deletePhoneNumber: ({ deps, principal, params, query }) => deletePhoneNumber(deps, principal.orgId, params.phone_number_id, query),
    startCall: ({ deps, principal, params, body }) => startOutboundCall(deps, principal.orgId, params.phone_number_id, body),
    startVoiceSession: ({ deps, principal, body }) => startVoiceSession(deps, principal.orgId, body),
    getRecording: async ({ deps, principal, params }) =>
      new RawBody('', { location: await recordingLink(deps, principal.orgId, params.id), 'cache-control': 'no-store' }, { statusCode: 302 }),
    putTwilioCredentials: ({ deps, principal, body }) => putTwilioCredentials(deps, principal.orgId, body),
    getTwilioCredentials: ({ deps, principal }) => getTwilioCredentials(deps, principal.orgId),
    deleteTwilioCredentials: ({ deps, principal }) => deleteTwilioCredentials(deps, principal.orgId),
  },
  voiceRuntime,
);
