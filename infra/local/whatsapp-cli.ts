/**
 * `npm run whatsapp -- --number <phone number id> [--from <your WhatsApp id>] [--user-id <BSUID>]`: chat with the
 * number's agent as a WhatsApp customer, from the terminal, against a running `npm start`; with `--user-id` alone
 * you are a user who shares only their business-scoped user id (a username user). Each line you type is a message;
 * `/image [file] [caption]`, `/document [file] [caption]`, `/audio [file]`, `/video [file] [caption]` and `/sticker
 * [file]` send a file (a small sample of the type without one), `/location` a location. The agent's messages print
 * as the simulator receives them. Ctrl-D ends. The WhatsApp simulator is the one of the `npm start` running on
 * DATA_DIR (the default `.data`), found through its running.json; connect the number with the simulator's secrets
 * first (docs/whatsapp.md#simulator).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, extname } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { dataDirectory, describeInstance, findRunningInstance, noRunningInstance } from './environment.ts';

const usage = 'usage: npm run whatsapp -- --number PHONE_NUMBER_ID [--from CUSTOMER_WA_ID] [--user-id BSUID]';

function fail(message: string): never {
  console.error(message);
  process.exit(2);
}

let values: { number?: string; from?: string; 'user-id'?: string };
try {
  ({ values } = parseArgs({ options: { number: { type: 'string' }, from: { type: 'string' }, 'user-id': { type: 'string' } } }));
} catch (error) {
  fail(`${(error as Error).message}\n${usage}`);
}
if (!values.number || !/^\d+$/.test(values.number)) fail(usage);
const userId = values['user-id'];
const from = values.from ?? (userId ? undefined : '15550001234');
const customer = [from && `wa_id=${encodeURIComponent(from)}`, userId && `user_id=${encodeURIComponent(userId)}`].filter(Boolean).join('&');
const dataDir = dataDirectory();
const running = findRunningInstance(dataDir);
if (!running) fail(noRunningInstance('whatsapp', dataDir));
const simulator = running.whatsappSimulator;
if (!simulator) fail(`The npm start on DATA_DIR ${dataDir} has no WhatsApp simulator in its running.json: restart it.`);
console.error(describeInstance(running, dataDir));

const media = new Set(['image', 'document', 'audio', 'video', 'sticker', 'location']);

/** The media type WhatsApp gives a file, by its extension (Meta's supported media types). */
const mimeTypes: Record<string, string> = {
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.png': 'image/png',
  '.webp': 'image/webp',
  '.ogg': 'audio/ogg; codecs=opus',
  '.opus': 'audio/ogg; codecs=opus',
  '.mp3': 'audio/mpeg',
  '.m4a': 'audio/mp4',
  '.aac': 'audio/aac',
  '.amr': 'audio/amr',
  '.mp4': 'video/mp4',
  '.3gp': 'video/3gpp',
  '.pdf': 'application/pdf',
  '.txt': 'text/plain',
  '.doc': 'application/msword',
  '.docx': 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  '.xls': 'application/vnd.ms-excel',
  '.xlsx': 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  '.ppt': 'application/vnd.ms-powerpoint',
  '.pptx': 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
};

/** `/image photo.jpg Is this covered?`: the type, the file (when the first word names one) and the caption. */
function mediaMessage(line: string): Record<string, unknown> | undefined {
  const [command = '', ...words] = line.trim().split(/\s+/);
  const type = command.slice(1);
  if (!line.startsWith('/') || !media.has(type)) return undefined;
  const path = words[0];
  const file = path && existsSync(path) && statSync(path).isFile() ? path : undefined;
  const caption = (file ? words.slice(1) : words).join(' ');
  return {
    type: 'say',
    media: type,
    ...(file ? { file: readFileSync(file).toString('base64'), mimeType: mimeTypes[extname(file).toLowerCase()] ?? 'application/octet-stream', filename: basename(file) } : {}),
    ...(caption ? { caption } : {}),
  };
}
const channel = new WebSocket(`${simulator.replace(/^http/, 'ws')}/simulator/customer?number=${encodeURIComponent(values.number)}&${customer}`);
const lines = createInterface({ input: process.stdin, output: process.stdout, terminal: process.stdin.isTTY });
const early: string[] = [];
let ready = false;

channel.on('error', (error) => fail(`Cannot reach the WhatsApp simulator at ${simulator}: ${error.message}`));
channel.on('message', (data) => {
  const message = JSON.parse(data.toString()) as { type: string; text?: string; status?: number };
  if (message.type === 'ready') {
    ready = true;
    console.log(`You are WhatsApp user ${from ?? userId} writing to number ${values.number}. Type a message; /image [file] [caption], /document, /audio, /video, /sticker and /location send media.`);
    lines.setPrompt('you> ');
    lines.prompt();
    for (const line of early.splice(0)) say(line);
  } else if (message.type === 'posted' && message.status !== 200) {
    console.log(`\n(the platform answered the webhook with ${message.status}: is the number connected with the simulator's app secret?)`);
    lines.prompt();
  } else if (message.type === 'message') {
    process.stdout.write(`\nagent> ${message.text}\n`);
    lines.prompt();
  }
});

function say(line: string): void {
  if (line.trim() === '') return lines.prompt();
  channel.send(JSON.stringify(mediaMessage(line) ?? { type: 'say', text: line }));
}

lines.on('line', (line) => (ready ? say(line) : early.push(line)));
lines.on('close', () => {
  channel.close();
  setTimeout(() => process.exit(0), 200).unref();
});
