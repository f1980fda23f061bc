/**
 * The TCP sockets a process tree listens on, as the kernel lists them (Linux: /proc/net/tcp{,6} and each process's
 * file descriptors): what another host could try to connect to.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

export interface ListeningSocket {
  pid: number;
  /** `127.0.0.1`, `0.0.0.0`, `::`, `::1`, `::ffff:127.0.0.1`; any other IPv6 address uncompressed. */
  address: string;
  port: number;
}

/** `rootPid` and every process started beneath it, however deep (a detached child keeps its parent). */
export function processTree(rootPid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    // The command name, in parentheses, may hold spaces: the fields after its closing parenthesis are fixed.
    const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
  }
  const tree = [rootPid];
  for (let index = 0; index < tree.length; index += 1) tree.push(...(children.get(tree[index] as number) ?? []));
  return tree;
}

export function listeningSockets(rootPid: number): ListeningSocket[] {
  const ownerOfInode = new Map<string, number>();
  for (const pid of processTree(rootPid)) {
    let descriptors: string[];
    try {
      descriptors = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const descriptor of descriptors) {
      try {
        const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${descriptor}`))?.[1];
        if (inode) ownerOfInode.set(inode, pid);
      } catch {
        // Closed meanwhile.
      }
    }
  }
  const listening = '0A';
  const sockets: ListeningSocket[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const [, local, , state] = fields;
      const inode = fields[9];
      if (!local || state !== listening || !inode) continue;
      const pid = ownerOfInode.get(inode);
      if (pid === undefined) continue;
      const [hexAddress, hexPort] = local.split(':') as [string, string];
      sockets.push({ pid, address: kernelAddress(hexAddress), port: parseInt(hexPort, 16) });
    }
  }
  return sockets;
}

/** The kernel writes an address as 32-bit words in host order (little-endian here), in hex. */
function kernelAddress(hex: string): string {
  const bytes: number[] = [];
  for (let word = 0; word < hex.length; word += 8) {
    const wordBytes = hex.slice(word, word + 8).match(/../g) as string[];
    bytes.push(...wordBytes.reverse().map((pair) => parseInt(pair, 16)));
  }
  if (bytes.length === 4) return bytes.join('.');
  const isMappedV4 = bytes.slice(0, 10).every((byte) => byte === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
  if (isMappedV4) return `::ffff:${bytes.slice(12).join('.')}`;
  if (bytes.every((byte) => byte === 0)) return '::';
  if (bytes.slice(0, 15).every((byte) => byte === 0) && bytes[15] === 1) return '::1';
  // Any other address, uncompressed: only loopback needs to be recognized.
  return Array.from({ length: 8 }, (_, index) => (((bytes[index * 2] as number) << 8) | (bytes[index * 2 + 1] as number)).toString(16)).join(':');
}
