/**
 * A phone call from the terminal against the `npm start` running on DATA_DIR (the default `.data`), found through
 * its running.json: its API and its Twilio simulator.
 *
 * - `npm run call -- --from <phone number id> --to +15550100 --agent <agent id>`: the agent calls you; you are the
 *   callee at `--to`.
 * - `npm run call -- --inbound <number>`: you call one of the organization's numbers (as dialled, `+1…`, or its phone
 *   number id) from `--caller` (default +15550142), and the agent the number routes to answers.
 *
 * Each line you type is what you say, the agent's tokens print as they stream, an empty line (or Ctrl-D) hangs up.
 * On a call through the media worker (a Media Stream), `--play in.wav` says the file's audio once connected (after
 * the lines typed, as the callee's speech) and `--save out.wav` keeps what the agent said, as the phone played it.
 * The API key comes from AGENT_PLATFORM_API_KEY (npm echoes a command line, so not `--key`, which still works), or
 * API_KEY; an inbound call to a number given as dialled needs none (anyone may call a number).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { dataDirectory, describeInstance, findRunningInstance, noRunningInstance } from './environment.ts';
import { phoneChannelPath, type PhoneEvent, type PhoneMessage } from './phone-channel.ts';
import { muLawDecode, muLawEncode, readWav, resample, writeWav } from '../../shared/speech/telephone-audio.ts';

const usage = [
  'usage: AGENT_PLATFORM_API_KEY=apk_… npm run call -- --from PHONE_NUMBER_ID --to +15550100 --agent AGENT_ID [--ttl SECONDS] [--api URL] [--play in.wav] [--save out.wav]',
  '       npm run call -- --inbound NUMBER [--caller +15550142] [--play in.wav] [--save out.wav]   (NUMBER as dialled, +1…; or a phone number id, with the key)',
  '--play and --save work on calls through the media worker (docs/voice.md#which-path-a-call-takes): the file is said as your speech, the agent\'s audio saved.',
  'The npm start running on DATA_DIR (default .data) is called, at its address unless --api says otherwise.',
].join('\n');

function fail(message: string): never {
  console.error(message);
  process.exit(2);
}

let values: { from?: string; to?: string; agent?: string; ttl?: string; key?: string; api?: string; inbound?: string; caller?: string; play?: string; save?: string };
try {
  ({ values } = parseArgs({
    options: {
      from: { type: 'string' },
      to: { type: 'string' },
      agent: { type: 'string' },
      ttl: { type: 'string' },
      key: { type: 'string' },
      api: { type: 'string' },
      inbound: { type: 'string' },
      caller: { type: 'string', default: '+15550142' },
      play: { type: 'string' },
      save: { type: 'string' },
    },
  }));
} catch (error) {
  fail(`${(error as Error).message}\n${usage}`);
}
const key = values.key ?? process.env.AGENT_PLATFORM_API_KEY ?? process.env.API_KEY;
const inbound = values.inbound;
const dialled = inbound?.startsWith('+');
if (inbound === undefined ? !values.from || !values.to || !values.agent : values.from || values.to || values.agent) fail(usage);
if (!key && !dialled) fail(`No API key: set AGENT_PLATFORM_API_KEY (the key npm start printed, or one from npm run keys).\n${usage}`);
const dataDir = dataDirectory();
const running = findRunningInstance(dataDir);
if (!running) fail(noRunningInstance('call', dataDir));
const simulator = running.twilioSimulator;
const api = values.api ?? running.apiUrl;
if (!simulator || !api) fail(`The npm start on DATA_DIR ${dataDir} predates npm run call's needs (no Twilio simulator or API address in its running.json): restart it.`);
console.error(describeInstance(running, dataDir));
/** The file to say, as telephone audio (μ-law, 8 kHz), read before the call so that a bad file fails first. */
const playAudio = values.play === undefined ? undefined : telephoneAudioOf(values.play);
/** The agent's audio as played, 20 ms at a time. */
const saved: Buffer[] = [];

/** The person's own number: the callee of an outbound call, the caller of an inbound one. */
const own = inbound === undefined ? (values.to as string) : (values.caller as string);
const channel = new WebSocket(`${simulator.replace(/^http/, 'ws')}${phoneChannelPath}?number=${encodeURIComponent(own)}`);
const lines = createInterface({ input: process.stdin, output: process.stdout, terminal: process.stdin.isTTY });
let connected = false;
/** Whether the agent's current reply has begun printing (a welcome greeting comes unasked). */
let replying = false;
/** Lines typed (or piped) before the phone is connected are said once it is. */
const early: string[] = [];
const send = (message: PhoneMessage) => channel.send(JSON.stringify(message));
/** Piped input may end while the agent still speaks: readline refuses to prompt once closed. */
let inputClosed = false;
const prompt = () => {
  if (!inputClosed) lines.prompt();
};

channel.on('error', (error) => fail(`Cannot reach the Twilio simulator at ${simulator}: ${error.message}`));
channel.on('message', async (data) => {
  const message = JSON.parse(data.toString()) as PhoneEvent;
  if (message.type === 'ready') await (inbound === undefined ? dialOut() : dialIn(inbound));
  else if (message.type === 'dialled') console.log(`Call ${message.callSid} (its session's metadata.roomName).`);
  else if (message.type === 'connected') {
    connected = true;
    console.log('Connected. Say something (an empty line hangs up).');
    lines.setPrompt('you> ');
    prompt();
    for (const line of early.splice(0)) say(line);
    if (playAudio) send({ type: 'play', audio: Buffer.from(playAudio).toString('base64') });
    if (values.save) send({ type: 'record' });
  } else if (message.type === 'token') {
    if (!replying) process.stdout.write('agent> ');
    replying = true;
    process.stdout.write(message.token);
    if (message.last) {
      replying = false;
      process.stdout.write('\n');
      prompt();
    }
  } else if (message.type === 'audio') {
    saved.push(Buffer.from(message.payload, 'base64'));
  } else if (message.type === 'end') {
    console.log(`\n(${message.reason})`);
    if (values.save) {
      writeFileSync(values.save, writeWav(muLawDecode(Buffer.concat(saved)), 8_000));
      console.log(`The agent's audio (${(saved.length * 20) / 1000} s) is in ${values.save}.`);
    }
    channel.close();
    lines.close();
  }
});

function say(line: string): void {
  send(line.trim() === '' ? { type: 'hangup' } : { type: 'say', text: line });
}

lines.on('line', (line) => (connected ? say(line) : early.push(line)));
lines.on('close', () => {
  inputClosed = true;
  if (channel.readyState === WebSocket.OPEN) send({ type: 'hangup' });
  setTimeout(() => process.exit(0), 200).unref();
});

async function callApi<Body>(method: string, path: string, body?: object): Promise<Body> {
  const response = await fetch(`${api}${path}`, {
    method,
    headers: { 'x-api-key': key as string, 'content-type': 'application/json' },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const answer = (await response.json()) as Body & { error?: { code: string; message: string } };
  if (!response.ok) fail(`${response.status} ${answer.error?.code}: ${answer.error?.message}`);
  return answer;
}

async function dialOut(): Promise<void> {
  const path = `/api/v1/phone-numbers/${encodeURIComponent(values.from as string)}/calls/start`;
  const body = { to_phone_number: own, agent_id: values.agent, ...(values.ttl ? { ttl: Number(values.ttl) } : {}) };
  const { sessionId } = await callApi<{ sessionId: string }>('POST', path, body);
  console.log(`Calling ${own}: session ${sessionId} (transcript: GET /api/v1/chat/sessions/${sessionId}/messages)`);
}

/** Dials the number as a caller would: a phone number id is first looked up (with the key) for the number it is. */
async function dialIn(number: string): Promise<void> {
  const to = dialled ? number : (await callApi<{ phone_number: string }>('GET', `/api/v1/phone-numbers/${encodeURIComponent(number)}`)).phone_number;
  console.log(`Calling ${to} from ${own}: the agent the number routes to answers.`);
  send({ type: 'dial', to });
}

/** A WAV file (PCM16 or μ-law, any rate) as telephone audio. */
function telephoneAudioOf(file: string): Uint8Array {
  try {
    const wav = readWav(readFileSync(file));
    return muLawEncode(resample(wav.samples, wav.sampleRate, 8_000));
  } catch (error) {
    fail(`Cannot play ${file}: ${(error as Error).message}`);
  }
}
