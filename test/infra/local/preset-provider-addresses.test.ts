/**
 * A local runtime pointed at another Twilio or Graph API (a real one through a tunnel, or another test double):
 * the addresses the environment names before the start win, and the simulator they would replace is not started.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../infra/local/free-port.ts';
import { startSpeechSimulators } from '../../../infra/local/speech-simulators.ts';
import { startTwilioSimulator } from '../../../infra/local/twilio-simulator.ts';
import { protocolEngines } from '../../support/speech.ts';
import { startLocalVoice } from '../../../infra/local/voice.ts';
import { simulatorDefaults, startLocalWhatsapp, startWhatsappSimulator } from '../../../infra/local/whatsapp-simulator.ts';
import { eventually } from '../../support/eventually.ts';
import { call, childEnv, startServer, stopEverything, tempDataDir } from '../../support/local-process.ts';

afterAll(stopEverything, 30_000);

const apiBaseUrl = 'http://127.0.0.1:3999';

describe('preset provider addresses', () => {
  it('Twilio: TWILIO_API_BASE_URL, PUBLIC_BASE_URL and VOICE_RELAY_URL set beforehand are kept, and no Twilio simulator starts', async () => {
    // Prepare
    const env: NodeJS.ProcessEnv = {
      TWILIO_API_BASE_URL: 'https://api.twilio.com',
      PUBLIC_BASE_URL: 'https://tunnel.example.com',
      VOICE_RELAY_URL: 'wss://relay-tunnel.example.com',
    };

    // Act
    const voice = await startLocalVoice(apiBaseUrl, env);
    await voice.stop();

    // Assess
    expect(voice.simulator).toBeUndefined();
    expect(env).toMatchObject({ TWILIO_API_BASE_URL: 'https://api.twilio.com', PUBLIC_BASE_URL: 'https://tunnel.example.com', VOICE_RELAY_URL: 'wss://relay-tunnel.example.com' });
    // The WebSocket API is this runtime's own: its management endpoint is always the local gateway.
    expect(env.VOICE_RELAY_MANAGEMENT_ENDPOINT).toBe(voice.gateway.managementEndpoint);
  });

  it('Twilio: with nothing preset, the simulator starts and the variables name it', async () => {
    const env: NodeJS.ProcessEnv = {};

    const voice = await startLocalVoice(apiBaseUrl, env);
    await voice.stop();

    expect(voice.simulator).toBeDefined();
    expect(env).toMatchObject({ TWILIO_API_BASE_URL: voice.simulator?.baseUrl, PUBLIC_BASE_URL: apiBaseUrl, VOICE_RELAY_URL: voice.gateway.url });
  });

  it('WhatsApp: WHATSAPP_GRAPH_API_URL and PUBLIC_BASE_URL set beforehand are kept, and no WhatsApp simulator starts', async () => {
    const env: NodeJS.ProcessEnv = { WHATSAPP_GRAPH_API_URL: 'https://graph.facebook.com/v23.0', PUBLIC_BASE_URL: 'https://tunnel.example.com' };

    const simulator = await startLocalWhatsapp(apiBaseUrl, env);
    await simulator?.stop();

    expect(simulator).toBeUndefined();
    expect(env).toEqual({ WHATSAPP_GRAPH_API_URL: 'https://graph.facebook.com/v23.0', PUBLIC_BASE_URL: 'https://tunnel.example.com' });
  });

  it('WhatsApp: with nothing preset, the simulator starts and the variables name it', async () => {
    const env: NodeJS.ProcessEnv = {};

    const simulator = await startLocalWhatsapp(apiBaseUrl, env);
    await simulator?.stop();

    expect(simulator).toBeDefined();
    expect(env).toMatchObject({ WHATSAPP_GRAPH_API_URL: simulator?.graphApiUrl, PUBLIC_BASE_URL: apiBaseUrl });
  });
});

describe('preset speech provider addresses', () => {
  it('a provider whose address is preset keeps it, with its key and models, and its simulator does not start; the others start and name themselves', async () => {
    const env: NodeJS.ProcessEnv = { CARTESIA_API_URL: 'https://api.cartesia.ai', CARTESIA_API_KEY: 'sk_car_real', CARTESIA_TTS_MODELS: 'sonic-2024-10-19', DEEPGRAM_API_KEY: 'dg-preset' };

    const speech = await startSpeechSimulators(protocolEngines(), env);
    await speech.stop();

    expect(Object.keys(speech.started).sort()).toEqual(['deepgram', 'elevenlabs', 'novaSonic', 'openaiRealtime', 'polly', 'rime', 'transcribe']);
    expect(env).toMatchObject({ CARTESIA_API_URL: 'https://api.cartesia.ai', CARTESIA_API_KEY: 'sk_car_real', CARTESIA_TTS_MODELS: 'sonic-2024-10-19' });
    // A preset key is the one the simulator then accepts.
    expect(env).toMatchObject({ DEEPGRAM_API_URL: speech.started.deepgram?.url, DEEPGRAM_API_KEY: 'dg-preset', RIME_API_URL: speech.started.rime?.url, RIME_API_KEY: 'local-rime-key', RIME_TTS_MODELS: 'mistv2' });
    expect(speech.started.deepgram?.apiKey).toBe('dg-preset');
    expect(env).toMatchObject({ OPENAI_COMPATIBLE_REALTIME_URL: `${speech.started.openaiRealtime?.url}/v1`, OPENAI_COMPATIBLE_API_KEY: 'local-openai-key', OPENAI_COMPATIBLE_REALTIME_MODELS: 'gpt-realtime' });
  });

  it('a preset OpenAI Realtime address is kept, and its simulator does not start', async () => {
    const env: NodeJS.ProcessEnv = { OPENAI_COMPATIBLE_REALTIME_URL: 'https://api.openai.com/v1', OPENAI_COMPATIBLE_REALTIME_MODELS: 'gpt-realtime-mini' };

    const speech = await startSpeechSimulators(protocolEngines(), env);
    await speech.stop();

    expect(speech.started.openaiRealtime).toBeUndefined();
    expect(env).toMatchObject({ OPENAI_COMPATIBLE_REALTIME_URL: 'https://api.openai.com/v1', OPENAI_COMPATIBLE_REALTIME_MODELS: 'gpt-realtime-mini' });
  });

  it('a preset Nova Sonic address is kept, and its simulator does not start', async () => {
    const env: NodeJS.ProcessEnv = { NOVA_SONIC_ENDPOINT: 'https://bedrock-runtime.us-east-1.amazonaws.com' };

    const speech = await startSpeechSimulators(protocolEngines(), env);
    await speech.stop();

    expect(speech.started.novaSonic).toBeUndefined();
    expect(env.NOVA_SONIC_ENDPOINT).toBe('https://bedrock-runtime.us-east-1.amazonaws.com');
  });
});

describe('npm start with preset provider addresses', () => {
  it('talks to the Twilio and the Graph API the environment names, and starts no simulator of its own', async () => {
    // Prepare: "another Twilio" and "another Graph API" of the test's own, both calling the runtime back.
    const port = await freePort();
    const apiBaseUrl = `http://127.0.0.1:${port}`;
    const otherTwilio = await startTwilioSimulator();
    const otherGraph = await startWhatsappSimulator({ apiBaseUrl });
    const dataDir = tempDataDir();
    const key = randomBytes(24).toString('base64url');
    const server = await startServer(
      childEnv({
        DATA_DIR: dataDir,
        PORT: String(port),
        INIT_ORG_ID: 'preset-providers',
        INIT_API_KEY: key,
        TWILIO_API_BASE_URL: otherTwilio.baseUrl,
        WHATSAPP_GRAPH_API_URL: otherGraph.graphApiUrl,
      }),
      port,
    );
    const running = JSON.parse(readFileSync(join(dataDir, 'running.json'), 'utf8')) as Record<string, unknown>;
    const agent = await call(server, 'POST', '/v2/chat/agents', {
      key,
      body: { fullName: 'Vox', description: 'Phone', role: 'You answer.', voiceEnabled: true, voicePipelineMode: 'pipeline' },
    });
    const account = { accountSid: `AC${'1'.repeat(32)}`, authToken: 'a'.repeat(32) };
    await call(server, 'PUT', '/v1/chat/telephony/twilio', { key, body: account });
    // Imported numbers are the account's at Twilio (here, the Twilio the environment names).
    otherTwilio.addIncomingNumber({ ...account, phoneNumber: '+15557770042' });
    const number = await call(server, 'POST', '/api/v1/phone-numbers', { key, body: { phone_number: '+15557770042' } });
    const whatsappNumber = await call(server, 'POST', '/v1/chat/whatsapp/numbers', {
      key,
      body: { phoneNumberId: '1234567042', displayPhoneNumber: '+1 555 010 0142', agentId: agent.body.id, ...simulatorDefaults },
    });

    // Act
    const started = await call(server, 'POST', `/api/v1/phone-numbers/${number.body.id}/calls/start`, { key, body: { to_phone_number: '+15550110', agent_id: agent.body.id } });
    const posted = await otherGraph.customerSays({ phoneNumberId: '1234567042', from: '15550001042', text: 'Hello from a preset Graph API' });

    // Assess
    expect(server.output().stdout).toContain(`TWILIO_API_BASE_URL=${otherTwilio.baseUrl} (preset: no simulator)`);
    expect(server.output().stdout).toContain(`WHATSAPP_GRAPH_API_URL=${otherGraph.graphApiUrl} (preset: no simulator)`);
    expect(running.twilioSimulator).toBeUndefined();
    expect(running.whatsappSimulator).toBeUndefined();
    expect([agent.status, number.status, whatsappNumber.status, started.status]).toEqual([201, 201, 201, 201]);
    expect(otherTwilio.outboundCalls().map((placed) => placed.to)).toEqual(['+15550110']);
    const ended = await eventually(
      async () => (await call(server, 'GET', `/api/v1/chat/sessions/${started.body.sessionId}`, { key })).body,
      (session) => session?.state === 'CLOSED',
      30_000,
    );
    // The conversation ran through the other Twilio: its callee heard the agent.
    expect(otherTwilio.heard(ended.metadata.roomName).length).toBeGreaterThan(0);
    expect(posted.status).toBe(200);
    await eventually(() => otherGraph.sent.filter((message) => message.to === '15550001042'), (sent) => sent.length === 1, 30_000);
    expect(existsSync(join(dataDir, 'running.json'))).toBe(true);
    await otherTwilio.stop();
    await otherGraph.stop();
  }, 180_000);
});
