/**
 * Egress guard: outbound HTTP(S) requests to customer-chosen URLs (API tools now, webhooks later) must never reach
 * loopback, private, link-local, cloud metadata, unspecified, multicast or reserved addresses unless the policy allows
 * that class.
 *
 * The check happens where the socket connects, not before: {@link createGuardedLookup} is a drop-in `lookup` for
 * node:net/node:http that resolves a name once (all addresses) and refuses if any answer is disallowed, so the
 * addresses that were checked are the only ones the socket can connect to (no DNS rebinding window between a check
 * and the connect). Node skips `lookup` for IP-literal hosts, so {@link guardedRequest} checks those itself first.
 *
 * Address ranges are matched with node's own `net.BlockList`; IPv6 forms that embed an IPv4 address (IPv4-mapped
 * `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`, SIIT `::ffff:0:a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`)
 * are judged by the IPv4 address they carry.
 */
import * as dns from 'node:dns';
import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';
import { Readable } from 'node:stream';
import { AppError } from '../errors.ts';

/** Ports as inclusive ranges: `[[8080, 8080], [9000, 9099]]`. */
export type PortRanges = readonly (readonly [number, number])[];

export interface EgressPolicy {
  /** Loopback (127/8, ::1): only where a deployment opts in (`LOOPBACK_EGRESS_PORTS`), and then only on `loopbackPorts`. */
  allowLoopback: boolean;
  /** The loopback ports allowed when `allowLoopback` is set; absent, any. */
  loopbackPorts?: PortRanges;
  /**
   * Ports no request may reach on any address: the platform's own services beside it (on the local runtime its
   * DynamoDB, its SQS emulator, the API itself), which speak for every tenant and must never answer one.
   */
  deniedPorts?: PortRanges;
  /** Private, shared (CGNAT), unique-local and link-local ranges. Cloud metadata addresses stay blocked regardless. */
  allowPrivate?: boolean;
}

export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'shared'
  | 'link-local'
  | 'metadata'
  | 'unspecified'
  | 'multicast'
  | 'reserved'
  | 'invalid';

/** An outbound request was refused because its target is (or resolves to) an address the policy does not allow. */
export class EgressBlockedError extends AppError {
  readonly code = 'EGRESS_BLOCKED';
  /** The host as the URL named it; safe to show. */
  readonly hostname: string;
  /** The class of the refused address (or a platform port), for logs; the address itself is kept out of the message. */
  readonly addressClass: AddressClass | 'platform-port';

  constructor(hostname: string, addressClass: AddressClass | 'platform-port') {
    super(
      addressClass === 'platform-port'
        ? `Outbound requests to ${hostname} are not allowed: the port belongs to the platform's own services.`
        : `Outbound requests to ${hostname} are not allowed: the address is not allowed for outbound requests.`,
    );
    this.hostname = hostname;
    this.addressClass = addressClass;
  }
}

/** The request (connect and the whole response) took longer than its total timeout. */
export class OutboundTimeoutError extends AppError {
  readonly code = 'OUTBOUND_TIMEOUT';
  readonly timeoutMs: number;

  constructor(hostname: string, timeoutMs: number) {
    super(`Request to ${hostname} timed out after ${timeoutMs} ms.`);
    this.timeoutMs = timeoutMs;
  }
}

/**
 * The request failed on the network (name not found, refused, reset, TLS, ...). `reason` is the system error code
 * (`ECONNREFUSED`, `ENOTFOUND`, ...); the message names the host and never a resolved address.
 */
export class OutboundNetworkError extends AppError {
  readonly code = 'OUTBOUND_NETWORK_ERROR';
  readonly hostname: string;
  readonly reason: string;

  constructor(hostname: string, reason: string, options?: ErrorOptions) {
    super(`Could not reach ${hostname}: ${describeReason(reason)}.`, options);
    this.hostname = hostname;
    this.reason = reason;
  }
}

const reasonText: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'name resolution failed temporarily',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  EPIPE: 'connection closed while sending',
  HPE_INVALID_CONSTANT: 'invalid HTTP response',
  ERR_INVALID_CHAR: 'invalid character in a request header',
  ERR_INVALID_HTTP_TOKEN: 'invalid request header name',
  ERR_UNSUPPORTED_PROTOCOL: 'only http and https URLs are supported',
};

function describeReason(reason: string): string {
  if (reasonText[reason]) return reasonText[reason];
  if (reason.startsWith('HPE_')) return `invalid HTTP response (${reason})`;
  if (/CERT|SSL|TLS/.test(reason)) return `TLS error (${reason})`;
  return `network error (${reason})`;
}

// ---------------------------------------------------------------------------------------------------------------
// Address classification

type Range = readonly [address: string, prefix: number];

/** Checked in this order; the first list that matches names the class. Anything unmatched is public. */
const ipv4Ranges: ReadonlyArray<readonly [AddressClass, readonly Range[]]> = [
  // AWS instance metadata (IMDS) and the ECS task credentials endpoint.
  ['metadata', [['169.254.169.254', 32], ['169.254.170.2', 32]]],
  ['unspecified', [['0.0.0.0', 8]]],
  ['loopback', [['127.0.0.0', 8]]],
  ['private', [['10.0.0.0', 8], ['172.16.0.0', 12], ['192.168.0.0', 16]]],
  ['shared', [['100.64.0.0', 10]]],
  ['link-local', [['169.254.0.0', 16]]],
  ['multicast', [['224.0.0.0', 4]]],
  [
    'reserved',
    [
      ['192.0.0.0', 24], // IETF protocol assignments
      ['192.0.2.0', 24], // TEST-NET-1
      ['192.88.99.0', 24], // 6to4 relay anycast (deprecated)
      ['198.18.0.0', 15], // benchmarking
      ['198.51.100.0', 24], // TEST-NET-2
      ['203.0.113.0', 24], // TEST-NET-3
      ['240.0.0.0', 4], // reserved, incl. 255.255.255.255 broadcast
    ],
  ],
];

const ipv6Ranges: ReadonlyArray<readonly [AddressClass, readonly Range[]]> = [
  // AWS instance metadata over IPv6 (Nitro), and the ECS task metadata IPv6 address.
  ['metadata', [['fd00:ec2::254', 128], ['fd00:ec2::23', 128]]],
  ['unspecified', [['::', 128]]],
  ['loopback', [['::1', 128]]],
  ['private', [['fc00::', 7], ['fec0::', 10], ['64:ff9b:1::', 48]]],
  ['link-local', [['fe80::', 10]]],
  ['multicast', [['ff00::', 8]]],
  [
    'reserved',
    [
      ['100::', 64], // discard-only
      ['2001::', 23], // IETF protocol assignments, incl. Teredo 2001::/32
      ['2001:db8::', 32], // documentation
      ['3fff::', 20], // documentation
      ['5f00::', 16], // SRv6 SIDs
    ],
  ],
];

function buildLists(type: 'ipv4' | 'ipv6', table: ReadonlyArray<readonly [AddressClass, readonly Range[]]>) {
  return table.map(([addressClass, ranges]) => {
    const list = new net.BlockList();
    for (const [address, prefix] of ranges) list.addSubnet(address, prefix, type);
    return [addressClass, list] as const;
  });
}

const ipv4Lists = buildLists('ipv4', ipv4Ranges);
const ipv6Lists = buildLists('ipv6', ipv6Ranges);
const globalUnicastV6 = new net.BlockList();
globalUnicastV6.addSubnet('2000::', 3, 'ipv6');

/** The eight 16-bit groups of a valid IPv6 address (zone id already removed), or undefined. */
function ipv6Groups(address: string): number[] | undefined {
  let text = address.toLowerCase();
  // A dotted IPv4 tail becomes two groups.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const octets = (dotted[1] as string).split('.').map(Number);
    const [a = 0, b = 0, c = 0, d = 0] = octets;
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const parse = (part: string | undefined) => (part ? part.split(':').map((group) => Number.parseInt(group, 16)) : []);
  const head = parse(halves[0]);
  const tail = parse(halves[1]);
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 0) return undefined;
  const groups = [...head, ...new Array<number>(halves.length === 2 ? missing : 0).fill(0), ...tail];
  return groups.length === 8 && groups.every((group) => Number.isInteger(group) && group >= 0 && group <= 0xffff) ? groups : undefined;
}

function ipv4FromGroups(high: number, low: number): string {
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
}

/** The IPv4 address an IPv6 address carries in a form that can route to it, if any. */
function embeddedIpv4(groups: number[]): string | undefined {
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = groups;
  const zeroPrefix = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0;
  // ::ffff:a.b.c.d (IPv4-mapped)
  if (zeroPrefix && g4 === 0 && g5 === 0xffff) return ipv4FromGroups(g6, g7);
  // ::ffff:0:a.b.c.d (SIIT, RFC 6145)
  if (zeroPrefix && g4 === 0xffff && g5 === 0) return ipv4FromGroups(g6, g7);
  // ::a.b.c.d (IPv4-compatible, deprecated); :: and ::1 are classified as themselves.
  if (zeroPrefix && g4 === 0 && g5 === 0 && (g6 !== 0 || g7 > 1)) return ipv4FromGroups(g6, g7);
  // 64:ff9b::a.b.c.d (NAT64 well-known prefix)
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return ipv4FromGroups(g6, g7);
  // 2002:AABB:CCDD::/48 (6to4)
  if (g0 === 0x2002) return ipv4FromGroups(g1, g2);
  return undefined;
}

/** The class of one IP address (IPv4 or IPv6, an optional `%zone` and `[brackets]` tolerated); not an IP → `invalid`. */
export function classifyAddress(address: string): AddressClass {
  let text = address.trim();
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1);
  const zone = text.indexOf('%');
  if (zone !== -1) text = text.slice(0, zone);
  const family = net.isIP(text);
  if (family === 4) {
    for (const [addressClass, list] of ipv4Lists) if (list.check(text, 'ipv4')) return addressClass;
    return 'public';
  }
  if (family === 6) {
    const groups = ipv6Groups(text);
    if (!groups) return 'invalid';
    const ipv4 = embeddedIpv4(groups);
    if (ipv4 !== undefined) return classifyAddress(ipv4);
    for (const [addressClass, list] of ipv6Lists) if (list.check(text, 'ipv6')) return addressClass;
    // Only 2000::/3 is allocated as global unicast; everything else is reserved.
    return globalUnicastV6.check(text, 'ipv6') ? 'public' : 'reserved';
  }
  return 'invalid';
}

/** Whether the policy lets a request connect to an address of this class. */
export function isClassAllowed(addressClass: AddressClass, policy: EgressPolicy): boolean {
  switch (addressClass) {
    case 'public':
      return true;
    case 'loopback':
      return policy.allowLoopback;
    case 'private':
    case 'shared':
    case 'link-local':
      return policy.allowPrivate === true;
    default:
      // metadata, unspecified, multicast, reserved, invalid: never.
      return false;
  }
}

export function isAddressAllowed(address: string, policy: EgressPolicy): boolean {
  return isClassAllowed(classifyAddress(address), policy);
}

/**
 * The policy of this deployment: loopback only on the ports `LOOPBACK_EGRESS_PORTS` lists (none by default), never
 * the ports `EGRESS_DENIED_PORTS` lists, never private ranges.
 */
export function egressPolicyFromConfig(config: { LOOPBACK_EGRESS_PORTS: PortRanges; EGRESS_DENIED_PORTS: PortRanges }): EgressPolicy {
  return {
    allowLoopback: config.LOOPBACK_EGRESS_PORTS.length > 0,
    loopbackPorts: config.LOOPBACK_EGRESS_PORTS,
    deniedPorts: config.EGRESS_DENIED_PORTS,
    allowPrivate: false,
  };
}

const inRanges = (ranges: PortRanges, port: number): boolean => ranges.some(([low, high]) => port >= low && port <= high);

/** The port a request to this URL connects to. */
export function portOf(url: URL): number {
  if (url.port) return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

/**
 * The policy for connections to one port: a denied port is refused outright (whatever the address), and loopback
 * holds only where the port is one of the allowed loopback ports.
 */
export function policyForPort(policy: EgressPolicy, port: number): EgressPolicy | 'denied' {
  if (policy.deniedPorts && inRanges(policy.deniedPorts, port)) return 'denied';
  const allowLoopback = policy.allowLoopback && (!policy.loopbackPorts || inRanges(policy.loopbackPorts, port));
  return { allowLoopback, allowPrivate: policy.allowPrivate === true };
}

// ---------------------------------------------------------------------------------------------------------------
// What the URL alone shows

/** Names that mean loopback whatever DNS says (RFC 6761), and the cloud metadata services' own names. */
const isLocalhostName = (hostname: string): boolean => hostname === 'localhost' || hostname.endsWith('.localhost');
const metadataHostnames: ReadonlySet<string> = new Set(['metadata.google.internal', 'metadata', 'instance-data', 'instance-data.ec2.internal']);

/**
 * The refusal a request to this URL gets before any name is resolved: a scheme other than http(s), a denied port,
 * an IP literal of a class the policy does not allow on that port, `localhost` (or `*.localhost`) where loopback is not
 * open on that port, a cloud metadata host name. Undefined when only resolution can tell; a name that resolves to a
 * disallowed address is refused where the socket connects ({@link createGuardedLookup}), since DNS answers change.
 */
export function staticEgressRefusal(url: URL, deploymentPolicy: EgressPolicy): EgressBlockedError | OutboundNetworkError | undefined {
  const hostname = bareHostname(url);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return new OutboundNetworkError(hostname, 'ERR_UNSUPPORTED_PROTOCOL');
  // No redirects are followed, so the URL's port is the only one a request to it can connect to.
  const policy = policyForPort(deploymentPolicy, portOf(url));
  if (policy === 'denied') return new EgressBlockedError(hostname, 'platform-port');
  const name = hostname.toLowerCase().replace(/\.$/, '');
  const addressClass = net.isIP(hostname) ? classifyAddress(hostname) : isLocalhostName(name) ? 'loopback' : metadataHostnames.has(name) ? 'metadata' : 'public';
  return isClassAllowed(addressClass, policy) ? undefined : new EgressBlockedError(hostname, addressClass);
}

// ---------------------------------------------------------------------------------------------------------------
// Guarded name resolution

/** `dns.lookup` with `all: true`, as the guard uses it; replaceable in tests. */
export type Resolver = (
  hostname: string,
  options: dns.LookupAllOptions,
  callback: (error: NodeJS.ErrnoException | null, addresses: dns.LookupAddress[]) => void,
) => void;

const systemResolver: Resolver = (hostname, options, callback) => dns.lookup(hostname, options, callback);

/** The host of a URL without IPv6 brackets. */
export function bareHostname(url: URL): string {
  const host = url.hostname;
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/**
 * A `lookup` for node:net/node:http/node:https (the `lookup` option of a request, agent or socket). It resolves with
 * `dns.lookup` (all addresses) and fails with {@link EgressBlockedError} if ANY resolved address is disallowed, so the
 * socket can only connect to addresses that were checked. Answers in the shape Node asked for (`all` or one address).
 */
export function createGuardedLookup(policy: EgressPolicy, resolve: Resolver = systemResolver): net.LookupFunction {
  return (hostname, options, callback) => {
    const done = callback as (error: NodeJS.ErrnoException | null, address?: string | dns.LookupAddress[], family?: number) => void;
    const literal = net.isIP(hostname);
    if (literal) {
      const addressClass = classifyAddress(hostname);
      if (!isClassAllowed(addressClass, policy)) return process.nextTick(done, new EgressBlockedError(hostname, addressClass));
      const address = { address: hostname, family: literal };
      return process.nextTick(() => (options.all ? done(null, [address]) : done(null, address.address, address.family)));
    }
    const lookupOptions: dns.LookupAllOptions = { all: true };
    if (options.family !== undefined) lookupOptions.family = options.family;
    if (options.hints !== undefined) lookupOptions.hints = options.hints;
    resolve(hostname, lookupOptions, (error, addresses) => {
      if (error) return done(error);
      if (!addresses || addresses.length === 0) {
        const notFound: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
        notFound.code = 'ENOTFOUND';
        return done(notFound);
      }
      for (const { address } of addresses) {
        const addressClass = classifyAddress(address);
        if (!isClassAllowed(addressClass, policy)) return done(new EgressBlockedError(hostname, addressClass));
      }
      const [first] = addresses as [dns.LookupAddress];
      if (options.all) done(null, addresses);
      else done(null, first.address, first.family);
    });
  };
}

/**
 * Resolves a URL's host (or takes an IP literal) and fails with {@link EgressBlockedError} if its port is denied or
 * any address is disallowed for that port, or with the resolver's error (`ETIMEOUT` after `timeoutMs`). Advisory
 * only — e.g. to reject a webhook or tool URL when it is registered; the connect-time check in
 * {@link guardedRequest} is the one that protects.
 */
export async function assertUrlAllowed(url: URL, policy: EgressPolicy, resolve: Resolver = systemResolver, timeoutMs?: number): Promise<void> {
  const host = bareHostname(url);
  const portPolicy = policyForPort(policy, portOf(url));
  if (portPolicy === 'denied') throw new EgressBlockedError(host, 'platform-port');
  const lookup = createGuardedLookup(portPolicy, resolve);
  let timer: NodeJS.Timeout | undefined;
  try {
    await new Promise<void>((fulfil, reject) => {
      if (timeoutMs !== undefined) timer = setTimeout(() => reject(Object.assign(new Error('name resolution timed out'), { code: 'ETIMEOUT' })), timeoutMs);
      lookup(host, { all: true }, (error) => (error ? reject(error) : fulfil()));
    });
  } finally {
    clearTimeout(timer);
  }
}

/**
 * What a refusal of loopback says about the setting that opens it, e.g. `LOOPBACK_EGRESS_PORTS opens 8080,9000-9099`
 * or `LOOPBACK_EGRESS_PORTS opens none`: on the local runtime the fix is that variable, so the message names it.
 */
export function describeLoopbackPorts(ports: PortRanges): string {
  const opened = ports.map(([low, high]) => (low === high ? String(low) : `${low}-${high}`)).join(',');
  return `LOOPBACK_EGRESS_PORTS opens ${opened || 'none'}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Guarded request

export interface GuardedRequestInit {
  method: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  /** Total time for connect, request and the whole response. */
  timeoutMs: number;
  /** Bytes of response body kept; beyond it the response is cut off and `truncated` is true. */
  maxResponseBytes: number;
  signal?: AbortSignal;
}

export interface GuardedResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  truncated: boolean;
}

/**
 * Keep-alive agents, one per policy and protocol, each resolving through the guarded lookup. Sockets are pooled by
 * host and port only, so a socket opened under one policy (or without the guard) must never serve another: hence
 * agents of our own, never the global ones.
 */
const agents = new Map<string, http.Agent>();

function agentFor(protocol: 'http:' | 'https:', policy: EgressPolicy): http.Agent {
  const key = `${protocol}|${policy.allowLoopback}|${policy.allowPrivate === true}`;
  let agent = agents.get(key);
  if (!agent) {
    const options = { keepAlive: true, lookup: createGuardedLookup(policy) };
    agent = protocol === 'https:' ? new https.Agent(options) : new http.Agent(options);
    agents.set(key, agent);
  }
  return agent;
}

function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code ? code : 'UNKNOWN';
}

/**
 * One HTTP(S) request to a customer URL under the egress policy. Redirects are not followed (a 3xx is returned as
 * is). Rejects with {@link EgressBlockedError} before any connection when the host is, or resolves to, a disallowed
 * address; with {@link OutboundTimeoutError} after `timeoutMs` in total; with {@link OutboundNetworkError} on network
 * failures; with `signal.reason` when aborted. A body beyond `maxResponseBytes` is cut there, `truncated: true`.
 */
export function guardedRequest(url: URL, init: GuardedRequestInit, deploymentPolicy: EgressPolicy): Promise<GuardedResponse> {
  return new Promise<GuardedResponse>((resolve, reject) => {
    const hostname = bareHostname(url);
    const { signal } = init;
    if (signal?.aborted) return reject(signal.reason);
    // Node connects to IP literals without calling `lookup`, so they are judged here, with the scheme and the port.
    const refusal = staticEgressRefusal(url, deploymentPolicy);
    if (refusal) return reject(refusal);
    // A denied port and any scheme but http(s) were refused just above.
    const policy = policyForPort(deploymentPolicy, portOf(url)) as EgressPolicy;
    const protocol = url.protocol as 'http:' | 'https:';

    let settled = false;
    let request: http.ClientRequest | undefined;
    const settle = (action: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      action();
    };
    const fail = (error: unknown): void =>
      settle(() =>
        reject(error instanceof AppError ? error : new OutboundNetworkError(hostname, errorCode(error), { cause: error })),
      );
    const onAbort = (): void => {
      settle(() => reject(signal?.reason));
      request?.destroy();
    };
    const timer = setTimeout(() => {
      const timeout = new OutboundTimeoutError(hostname, init.timeoutMs);
      settle(() => reject(timeout));
      request?.destroy(timeout);
    }, init.timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });

    const client = protocol === 'https:' ? https : http;
    try {
      request = client.request(
        url,
        { method: init.method, headers: init.headers, agent: agentFor(protocol, policy), lookup: createGuardedLookup(policy) },
        (response) => {
          const chunks: Buffer[] = [];
          let size = 0;
          let truncated = false;
          const complete = (): void =>
            settle(() => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks, size), truncated }));
          response.on('data', (chunk: Buffer) => {
            if (settled) return;
            const room = init.maxResponseBytes - size;
            if (chunk.length > room) {
              if (room > 0) chunks.push(chunk.subarray(0, room));
              size += Math.max(room, 0);
              truncated = true;
              complete();
              response.destroy();
              return;
            }
            chunks.push(chunk);
            size += chunk.length;
          });
          response.on('end', complete);
          response.on('error', fail);
          response.on('close', () => {
            if (!response.complete) fail(Object.assign(new Error('response ended early'), { code: 'ECONNRESET' }));
          });
        },
      );
    } catch (error) {
      // Invalid header names or values are refused synchronously by node:http.
      return fail(error);
    }
    request.on('error', fail);
    request.end(init.body);
  });
}

/**
 * A `fetch` whose requests go through the guard, for SDKs that take one (an organization's own model provider, whose
 * base URL it chose): the same checks as {@link guardedRequest}, but the response body streams as it arrives (a
 * model's server-sent events), and there is no total timeout (the caller's signal bounds it). Redirects are not
 * followed. Refusals and network failures reject as {@link guardedRequest}'s do; an abort rejects (or ends the body)
 * with the signal's reason.
 */
export function guardedFetch(deploymentPolicy: EgressPolicy): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    const refusal = staticEgressRefusal(url, deploymentPolicy);
    if (refusal) throw refusal;
    request.signal.throwIfAborted();
    const body = request.body ? Buffer.from(await request.arrayBuffer()) : undefined;
    const policy = policyForPort(deploymentPolicy, portOf(url)) as EgressPolicy;
    const protocol = url.protocol as 'http:' | 'https:';
    const hostname = bareHostname(url);
    return new Promise<Response>((resolve, reject) => {
      const client = protocol === 'https:' ? https : http;
      const outgoing = client.request(
        url,
        { method: request.method, headers: Object.fromEntries(request.headers), agent: agentFor(protocol, policy), lookup: createGuardedLookup(policy), signal: request.signal },
        (response) => {
          const headers = new Headers();
          for (const [name, value] of Object.entries(response.headers)) {
            for (const item of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, item);
          }
          const status = response.statusCode ?? 0;
          const empty = status === 204 || status === 304 || request.method === 'HEAD';
          if (empty) response.resume();
          resolve(new Response(empty ? null : (Readable.toWeb(response) as ReadableStream<Uint8Array>), { status, statusText: response.statusMessage ?? '', headers }));
        },
      );
      outgoing.on('error', (error) => {
        if (request.signal.aborted) reject(request.signal.reason);
        else reject(error instanceof AppError ? error : new OutboundNetworkError(hostname, errorCode(error), { cause: error }));
      });
      outgoing.end(body);
    });
  };
}
