/**
 * `npm run call -- --from <phone number id> --to +15550100 --agent <agent id>`: a phone call from the terminal
 * against the `npm start` running on DATA_DIR (the default `.data`), found through its running.json: its API and its
 * Twilio simulator. You are the callee: each line you type is what you say, the agent's tokens print as they
 * stream, an empty line (or Ctrl-D) hangs up. The API key comes from AGENT_PLATFORM_API_KEY (npm echoes a command
 * line, so not `--key`, which still works), or API_KEY.
 */
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { dataDirectory, describeInstance, findRunningInstance, noRunningInstance } from './environment.ts';

const usage = [
  'usage: AGENT_PLATFORM_API_KEY=apk_… npm run call -- --from PHONE_NUMBER_ID --to +15550100 --agent AGENT_ID [--ttl SECONDS] [--api URL]',
  'The npm start running on DATA_DIR (default .data) is called, at its address unless --api says otherwise.',
].join('\n');

function fail(message: string): never {
  console.error(message);
  process.exit(2);
}

let values: { from?: string; to?: string; agent?: string; ttl?: string; key?: string; api?: string };
try {
  ({ values } = parseArgs({
    options: { from: { type: 'string' }, to: { type: 'string' }, agent: { type: 'string' }, ttl: { type: 'string' }, key: { type: 'string' }, api: { type: 'string' } },
  }));
} catch (error) {
  fail(`${(error as Error).message}\n${usage}`);
}
const key = values.key ?? process.env.AGENT_PLATFORM_API_KEY ?? process.env.API_KEY;
if (!values.from || !values.to || !values.agent) fail(usage);
if (!key) fail(`No API key: set AGENT_PLATFORM_API_KEY (the key npm start printed, or one from npm run keys).\n${usage}`);
const dataDir = dataDirectory();
const running = findRunningInstance(dataDir);
if (!running) fail(noRunningInstance('call', dataDir));
const simulator = running.twilioSimulator;
const api = values.api ?? running.apiUrl;
if (!simulator || !api) fail(`The npm start on DATA_DIR ${dataDir} predates npm run call's needs (no Twilio simulator or API address in its running.json): restart it.`);
console.error(describeInstance(running, dataDir));

const to = values.to;
const channel = new WebSocket(`${simulator.replace(/^http/, 'ws')}/simulator/callee?number=${encodeURIComponent(to)}`);
const lines = createInterface({ input: process.stdin, output: process.stdout, terminal: process.stdin.isTTY });
let connected = false;
/** Lines typed (or piped) before the callee's phone is connected are said once it is. */
const early: string[] = [];

channel.on('error', (error) => fail(`Cannot reach the Twilio simulator at ${simulator}: ${error.message}`));
channel.on('message', async (data) => {
  const message = JSON.parse(data.toString()) as { type: string; token?: string; last?: boolean; reason?: string };
  if (message.type === 'ready') await dial();
  else if (message.type === 'connected') {
    connected = true;
    console.log('Connected. Say something (an empty line hangs up).');
    lines.setPrompt('you> ');
    lines.prompt();
    for (const line of early.splice(0)) say(line);
  } else if (message.type === 'token') {
    process.stdout.write(message.token ?? '');
    if (message.last) {
      process.stdout.write('\n');
      lines.prompt();
    }
  } else if (message.type === 'end') {
    console.log(`\n(${message.reason})`);
    channel.close();
    lines.close();
  }
});

function say(line: string): void {
  if (line.trim() === '') channel.send(JSON.stringify({ type: 'hangup' }));
  else {
    process.stdout.write('agent> ');
    channel.send(JSON.stringify({ type: 'say', text: line }));
  }
}

lines.on('line', (line) => (connected ? say(line) : early.push(line)));
lines.on('close', () => {
  if (channel.readyState === WebSocket.OPEN) channel.send(JSON.stringify({ type: 'hangup' }));
  setTimeout(() => process.exit(0), 200).unref();
});

async function dial(): Promise<void> {
  const response = await fetch(`${api}/api/v1/phone-numbers/${encodeURIComponent(values.from as string)}/calls/start`, {
    method: 'POST',
    headers: { 'x-api-key': key as string, 'content-type': 'application/json' },
    body: JSON.stringify({ to_phone_number: to, agent_id: values.agent, ...(values.ttl ? { ttl: Number(values.ttl) } : {}) }),
  });
  const body = (await response.json()) as { sessionId?: string; error?: { code: string; message: string } };
  if (!response.ok) fail(`${response.status} ${body.error?.code}: ${body.error?.message}`);
  console.log(`Calling ${to}: session ${body.sessionId} (transcript: GET /api/v1/chat/sessions/${body.sessionId}/messages)`);
}
