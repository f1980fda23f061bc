/**
 * ConversationRelay's messages are read as Twilio documents them, and no message is dropped for a type detail
 * (decision 346): Twilio's own pages show the interrupt's duration as a string and as a number.
 */
import { describe, expect, it } from 'vitest';
import { conversationRelayTwiml, relayInbound } from '../../shared/voice/conversation-relay.ts';
import relayMessages from '../fixtures/twilio/conversation-relay-messages.json' with { type: 'json' };

const { messages: documented } = relayMessages;

describe("ConversationRelay's messages", () => {
  it.each(Object.entries(documented))('reads the documented %s message', (_, message) => {
    expect(relayInbound.safeParse(message).success).toBe(true);
  });

  it('reads the interrupt duration as a number whether Twilio sends "460" or 460', () => {
    expect(relayInbound.parse(documented.interruptWithStringDuration)).toMatchObject({ durationUntilInterruptMs: 460 });
    expect(relayInbound.parse(documented.interruptWithNumberDuration)).toMatchObject({ durationUntilInterruptMs: 460 });
  });

  it('keeps a message whose fields have another type than documented, leaving out what it cannot read', () => {
    expect(relayInbound.parse({ type: 'interrupt', utteranceUntilInterrupt: 'Life is', durationUntilInterruptMs: 'soon', extra: { any: 1 } })).toEqual({
      type: 'interrupt',
      utteranceUntilInterrupt: 'Life is',
      durationUntilInterruptMs: undefined,
    });
    expect(relayInbound.parse({ type: 'prompt', voicePrompt: 'Hi', lang: 7, last: 'false' })).toEqual({ type: 'prompt', voicePrompt: 'Hi', lang: undefined, last: false });
    expect(relayInbound.parse({ type: 'dtmf', digit: 5 })).toEqual({ type: 'dtmf', digit: '5' });
  });

  it('asks Twilio for key presses in the TwiML only when told to', () => {
    const settings = { url: 'wss://relay.example.com', language: 'en-US', interruptible: true, welcomeGreetingInterruptible: true };

    expect(conversationRelayTwiml({ ...settings, dtmfDetection: true })).toContain('dtmfDetection="true"');
    expect(conversationRelayTwiml({ ...settings, dtmfDetection: false })).toContain('dtmfDetection="false"');
  });
});
