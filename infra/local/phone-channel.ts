/**
 * The Twilio simulator's phone channel: a WebSocket at `phoneChannelPath?number=+1…` is a person's phone at that
 * number. `npm run call` connects to the simulator itself, the playground through the local API's origin. Nothing
 * here imports Node, so the playground's page can share it.
 */
export const phoneChannelPath = '/simulator/phone';

/**
 * What a person's phone sends: a line said (on a call), a hang-up, or a number to dial (an inbound call to it). On a
 * call through a Media Stream, also audio said (`play`: base64 μ-law, 8 kHz) and a wish to get the agent's audio as
 * played (`record`: `audio` events follow).
 */
export type PhoneMessage = { type: 'say'; text: string } | { type: 'hangup' } | { type: 'dial'; to: string } | { type: 'play'; audio: string } | { type: 'record' };

/**
 * What it is told: attached, the call dialled (its SID) and connected, the agent's tokens (on a Media Stream, each
 * reply as the phone's recogniser heard it), the agent's audio when asked (20 ms of base64 μ-law each), the end and why.
 */
export type PhoneEvent =
  | { type: 'ready'; number: string }
  | { type: 'dialled'; callSid: string }
  | { type: 'connected' }
  | { type: 'token'; token: string; last: boolean }
  | { type: 'audio'; payload: string }
  | { type: 'end'; reason: string };
