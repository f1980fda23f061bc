/**
 * The Twilio simulator's phone channel: a WebSocket at `phoneChannelPath?number=+1…` is a person's phone at that
 * number. `npm run call` connects to the simulator itself, the playground through the local API's origin. Nothing
 * here imports Node, so the playground's page can share it.
 */
export const phoneChannelPath = '/simulator/phone';

/** What a person's phone sends: a line said (on a call), a hang-up, or a number to dial (an inbound call to it). */
export type PhoneMessage = { type: 'say'; text: string } | { type: 'hangup' } | { type: 'dial'; to: string };

/** What it is told: attached, the call dialled (its SID) and connected, the agent's tokens, the end and why. */
export type PhoneEvent =
  | { type: 'ready'; number: string }
  | { type: 'dialled'; callSid: string }
  | { type: 'connected' }
  | { type: 'token'; token: string; last: boolean }
  | { type: 'end'; reason: string };
