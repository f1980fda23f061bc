/**
 * `npm install` hook: fauxqs listens on every interface (its `host` option only names queue URLs), so anyone on the
 * network could read and send every organization's queued events. This rewrites its one listen call to loopback.
 * It looks for that exact call: a fauxqs release that changes it fails the install, to be looked at again, rather
 * than leave the emulator open.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const openListen = 'app.listen({ port, host: "0.0.0.0" })';
const loopbackListen = 'app.listen({ port, host: "127.0.0.1" })';

// The package's entry point is the module that listens.
const appFile = fileURLToPath(import.meta.resolve('fauxqs'));
const source = readFileSync(appFile, 'utf8');
if (source.includes(openListen)) {
  writeFileSync(appFile, source.replace(openListen, loopbackListen));
  console.log('fauxqs now listens on 127.0.0.1 only');
} else if (!source.includes(loopbackListen)) {
  console.error(`${appFile} no longer has the listen call this hook rewrites to loopback; check how this fauxqs version binds.`);
  process.exit(1);
}
