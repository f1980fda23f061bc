import { readdirSync, readFileSync } from 'node:fs';

/**
 * Where the CPU went during a measurement (Linux /proc; undefined elsewhere): this process (server and load
 * worker), its child processes (DynamoDB Local, the init-time imports), and everything else on the machine, in cores.
 */
export interface CpuShare {
  cores: number;
  thisProcessCores: number;
  childProcessCores: number;
  otherProcessCores: number;
  /** The server's event loop (this process's main thread) busy fraction. */
  serverEventLoopUtilization: number;
}

interface Snapshot {
  machineBusy: number;
  machineTotal: number;
  self: number;
  children: number;
  elu: ReturnType<typeof performance.eventLoopUtilization>;
}

export function cpuSnapshot(): Snapshot | undefined {
  try {
    const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] as string).trim().split(/\s+/).slice(1).map(Number);
    const total = fields.slice(0, 8).reduce((sum, value) => sum + value, 0);
    const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
    return {
      machineBusy: total - idle,
      machineTotal: total,
      self: processTicks('self'),
      children: reapedChildTicks() + childPids().reduce((sum, pid) => sum + processTicks(String(pid)), 0),
      elu: performance.eventLoopUtilization(),
    };
  } catch {
    return undefined;
  }
}

export function cpuShare(from: Snapshot | undefined, to: Snapshot | undefined): CpuShare | undefined {
  if (!from || !to) return undefined;
  const total = to.machineTotal - from.machineTotal;
  if (total <= 0) return undefined;
  const cores = readFileSync('/proc/stat', 'utf8').split('\n').filter((line) => /^cpu\d+ /.test(line)).length;
  // /proc/stat's total counts every core, so total / cores is the wall time in ticks.
  const wallTicks = total / cores;
  const inCores = (ticks: number) => Math.round((ticks / wallTicks) * 100) / 100;
  const self = to.self - from.self;
  const children = to.children - from.children;
  return {
    cores,
    thisProcessCores: inCores(self),
    childProcessCores: inCores(children),
    otherProcessCores: inCores(Math.max(0, to.machineBusy - from.machineBusy - self - children)),
    serverEventLoopUtilization: Math.round(performance.eventLoopUtilization(to.elu, from.elu).utilization * 100) / 100,
  };
}

/** CPU milliseconds (user and system) a process has used so far; /proc counts in ticks of 10 ms. */
export function processCpuMs(pid: number): number {
  return (processTicks(String(pid)) * 1000) / 100;
}

function processTicks(pid: string): number {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return 0;
  }
  // Fields after the parenthesised command name; utime and stime are fields 14 and 15 of the whole line.
  const after = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(after[11]) + Number(after[12]);
}

/** CPU of this process's children that have already exited (cutime and cstime, fields 16 and 17). */
function reapedChildTicks(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const after = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(after[13]) + Number(after[14]);
}

/** A process and all its descendants (a process tree's CPU is the sum of theirs). */
export function processTree(pid: number): number[] {
  return [pid, ...childPids(String(pid)).flatMap(processTree)];
}

function childPids(pid = 'self'): number[] {
  const pids: number[] = [];
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return pids;
  }
  for (const task of tasks) {
    try {
      const listed = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
      if (listed) pids.push(...listed.split(/\s+/).map(Number));
    } catch {
      // The thread ended while we looked.
    }
  }
  return pids;
}
