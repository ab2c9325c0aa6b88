/**
 * A real etcd cluster on loopback for tests: n members of the `etcd` binary on PATH (Debian's
 * etcd-server 3.4), each on its own free ports with its own data dir under os.tmpdir(), short
 * raft timers so a failover takes about a second, and SIGKILL / restart of single members.
 * Every member is killed when the test process exits, however it exits. The cluster benchmark
 * (bench/cluster.ts) runs its etcd members with this launcher too, with etcd's own timers, its
 * directory of choice and each member's status (leader, raft term, member id); and it has its
 * other children (nodes) killed at exit the same way (killOnExit, through bench/lib/reaper.ts).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, closeSync, constants, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
// The cluster benchmark's core pinning (its launcher is this one).
import { pinned } from '../../bench/lib/pin.js';
import { freePorts } from './ports.js';
import { keepDir, killOnExit, removeOnExit, startDeadline, startTook } from './procs.js';

export interface EtcdMember {
  name: string;
  clientUrl: string;
  peerUrl: string;
  dataDir: string;
  /** etcd's own log (stdout and stderr, appended across restarts). */
  logFile: string;
  /** The running process's pid; undefined once it has exited. */
  pid: number | undefined;
  running: boolean;
}

export interface EtcdClusterOptions {
  /** --heartbeat-interval, ms (default 50). */
  heartbeatMs?: number;
  /** --election-timeout, ms (default 500; etcd wants at least 5 heartbeats). */
  electionMs?: number;
  /**
   * The directory that holds the members' directories (m0, m1, …, each with its data dir and
   * etcd.log), made if missing; the caller owns it: neither stop() nor the exit hook removes it. Default:
   * a fresh directory under os.tmpdir(), removed by stop() and at exit.
   */
  dir?: string;
  /** Member i runs on the cores cpus[i] (a `taskset -c` list; the cluster benchmark's PIN_CORES); default: unpinned. */
  cpus?: string[];
}

/** A member's view of the cluster (POST /v3/maintenance/status); the uint64 ids are decimal strings. */
export interface EtcdStatus {
  memberId: string;
  /** The leader this member knows of ('' while there is none). */
  leader: string;
  raftTerm: bigint;
}

const NOT_FOUND = "etcd not found on PATH: install Debian's etcd-server (apt-get install etcd-server)";

/** Whether an executable `etcd` is on PATH. */
export function etcdAvailable(): boolean {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    try {
      accessSync(join(dir, 'etcd'), constants.X_OK);
      return true;
    } catch {
      // not in this directory
    }
  }
  return false;
}

// The exit hook and watchdog that kill what a test process leaves running live in procs.ts;
// the cluster bench (bench/lib/reaper.ts) imports killOnExit from here.
export { killOnExit };

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function healthy(clientUrl: string): Promise<boolean> {
  try {
    const r = await fetch(`${clientUrl}/health`, { signal: AbortSignal.timeout(1000) });
    if (!r.ok) return false;
    return ((await r.json()) as { health?: unknown }).health === 'true';
  } catch {
    return false;
  }
}

/** One member's view through the gRPC gateway; undefined when it does not answer. */
export async function etcdStatus(clientUrl: string, timeoutMs = 1000): Promise<EtcdStatus | undefined> {
  try {
    const r = await fetch(`${clientUrl}/v3/maintenance/status`, { method: 'POST', body: '{}', signal: AbortSignal.timeout(timeoutMs) });
    if (!r.ok) return undefined;
    const b = (await r.json()) as { header?: { member_id?: string; raft_term?: string }; leader?: string };
    const memberId = b.header?.member_id;
    if (!memberId || !b.leader || b.leader === '0') return { memberId: memberId ?? '', leader: '', raftTerm: 0n };
    return { memberId, leader: b.leader, raftTerm: BigInt(b.header?.raft_term ?? '0') };
  } catch {
    return undefined;
  }
}

interface Proc {
  child: ChildProcess;
  exited: Promise<void>;
}

export class EtcdCluster {
  readonly members: EtcdMember[];
  readonly endpoints: string[];
  private readonly procs: (Proc | undefined)[];
  private readonly initialCluster: string;
  private stopped = false;

  constructor(
    private readonly root: string,
    members: EtcdMember[],
    private readonly token: string,
    private readonly opts: Required<Omit<EtcdClusterOptions, 'dir'>> & { ownsRoot: boolean },
  ) {
    this.members = members;
    this.endpoints = members.map((m) => m.clientUrl);
    this.procs = members.map(() => undefined);
    this.initialCluster = members.map((m) => `${m.name}=${m.peerUrl}`).join(',');
  }

  /** Spawns member i; `new` forms the cluster, `existing` rejoins it from the data dir. */
  spawn(i: number, state: 'new' | 'existing'): void {
    const m = this.member(i);
    if (m.running) throw new Error(`etcd member ${i} is already running`);
    const args = [
      ['--name', m.name],
      ['--data-dir', m.dataDir],
      ['--listen-client-urls', m.clientUrl],
      ['--advertise-client-urls', m.clientUrl],
      ['--listen-peer-urls', m.peerUrl],
      ['--initial-advertise-peer-urls', m.peerUrl],
      ['--initial-cluster', this.initialCluster],
      ['--initial-cluster-state', state],
      ['--initial-cluster-token', this.token],
      ['--heartbeat-interval', String(this.opts.heartbeatMs)],
      ['--election-timeout', String(this.opts.electionMs)],
      ['--logger', 'zap'],
    ].flat();
    // ETCD_* variables would configure etcd alongside the flags: the flags alone decide.
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('ETCD_')));
    const log = openSync(m.logFile, 'a');
    let child: ChildProcess;
    const spawnOpts = { stdio: ['ignore', log, log] as ['ignore', number, number], env, detached: false };
    try {
      const [cmd, argv] = pinned(this.opts.cpus[i], 'etcd', args);
      child = spawn(cmd, argv, spawnOpts);
    } finally {
      closeSync(log);
    }
    const exited = new Promise<void>((resolve) => {
      const done = (): void => {
        m.running = false;
        m.pid = undefined;
        resolve();
      };
      child.once('exit', done);
      child.once('error', () => {
        if (child.pid === undefined) done(); // spawn failed: no exit event follows
      });
    });
    m.pid = child.pid;
    m.running = child.pid !== undefined;
    if (m.running) killOnExit(child);
    this.procs[i] = { child, exited };
  }

  /** Sends signal to member i (SIGKILL by default); resolves once the process has exited. */
  async kill(i: number, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const m = this.member(i);
    const p = this.procs[i];
    if (!p) return;
    if (m.running) p.child.kill(signal);
    await p.exited;
  }

  /** Starts member i again on its ports and data dir, rejoining the cluster; resolves once it is healthy. */
  async restart(i: number, timeoutMs?: number): Promise<void> {
    this.spawn(i, 'existing');
    await this.waitHealthy(timeoutMs ?? startDeadline('etcd', 20_000), [i]);
  }

  /**
   * Index of the current leader among the running members: a member whose own status names
   * itself leader (of several, the one with the highest term). Retries until one is known.
   */
  async leader(timeoutMs = 10_000): Promise<number> {
    return (await this.leaderStatus(timeoutMs)).index;
  }

  /** As leader(), with the leader's own status (its member id, raft term); polls every `pollMs`. */
  async leaderStatus(timeoutMs = 10_000, pollMs = 50): Promise<EtcdStatus & { index: number }> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const views = await this.statuses();
      let best: number | undefined;
      views.forEach((v, i) => {
        if (v?.leader && v.leader === v.memberId && (best === undefined || v.raftTerm > (views[best]?.raftTerm ?? 0n))) best = i;
      });
      const v = best === undefined ? undefined : views[best];
      if (best !== undefined && v) return { ...v, index: best };
      if (Date.now() >= deadline) throw new Error(`no etcd leader among the running members within ${timeoutMs} ms`);
      await sleep(pollMs);
    }
  }

  /**
   * After the leader with member id `oldLeader` is gone: resolves with the id of the leader
   * that a running member names instead, polling every `pollMs`.
   */
  async newLeader(oldLeader: string, timeoutMs = 30_000, pollMs = 10): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const other = (await this.statuses()).find((v) => v?.leader && v.leader !== oldLeader);
      if (other) return other.leader;
      if (Date.now() > deadline) throw new Error(`no new etcd leader within ${timeoutMs} ms`);
      await sleep(pollMs);
    }
  }

  /** Each member's status (undefined for one down or silent). */
  statuses(): Promise<Array<EtcdStatus | undefined>> {
    return Promise.all(this.members.map((m) => (m.running ? etcdStatus(m.clientUrl) : undefined)));
  }

  /** Pids of the running members. */
  pids(): number[] {
    return this.members.flatMap((m) => (m.pid === undefined ? [] : [m.pid]));
  }

  /**
   * Resolves once every member in `which` (default: those running now) answers /health with
   * {"health":"true"}; rejects with the log's tail if one exits, or on timeout.
   */
  async waitHealthy(timeoutMs = 20_000, which?: number[]): Promise<void> {
    const wanted = which ?? this.members.flatMap((m, i) => (m.running ? [i] : []));
    const deadline = Date.now() + timeoutMs;
    const pending = new Set(wanted);
    while (pending.size > 0) {
      for (const i of pending) {
        if (!this.member(i).running) throw new Error(`etcd member ${i} exited:\n${this.logTail(i)}`);
      }
      const ok = await Promise.all([...pending].map(async (i) => [i, await healthy(this.member(i).clientUrl)] as const));
      for (const [i, h] of ok) if (h) pending.delete(i);
      if (pending.size === 0) return;
      if (Date.now() >= deadline) {
        const i = [...pending][0] ?? 0;
        throw new Error(`etcd members ${[...pending].join(', ')} not healthy within ${timeoutMs} ms; member ${i}:\n${this.logTail(i)}`);
      }
      await sleep(50);
    }
  }

  /** The last lines of member i's log, for failure messages. */
  logTail(i: number, lines = 20): string {
    try {
      return readFileSync(this.member(i).logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }

  /** SIGKILLs every member, waits for them to exit and removes the data dirs. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await Promise.all(this.members.map((_, i) => this.kill(i, 'SIGKILL')));
    if (!this.opts.ownsRoot) return;
    rmSync(this.root, { recursive: true, force: true });
    keepDir(this.root);
  }

  private member(i: number): EtcdMember {
    const m = this.members[i];
    if (!m) throw new Error(`no etcd member ${i} (cluster of ${this.members.length})`);
    return m;
  }
}

/** Starts an n-member cluster on loopback; resolves once every member is healthy. */
export async function startEtcdCluster(n = 3, opts: EtcdClusterOptions = {}): Promise<EtcdCluster> {
  if (!etcdAvailable()) throw new Error(NOT_FOUND);
  const ports = await freePorts(2 * n);
  const root = opts.dir ?? mkdtempSync(join(tmpdir(), 'cairn-etcd-'));
  if (opts.dir === undefined) removeOnExit(root);
  const members = Array.from({ length: n }, (_, i): EtcdMember => {
    const dir = join(root, `m${i}`);
    mkdirSync(dir, { recursive: true });
    return {
      name: `m${i}`,
      clientUrl: `http://127.0.0.1:${ports[2 * i]}`,
      peerUrl: `http://127.0.0.1:${ports[2 * i + 1]}`,
      dataDir: join(dir, 'data'),
      logFile: join(dir, 'etcd.log'),
      pid: undefined,
      running: false,
    };
  });
  const cluster = new EtcdCluster(root, members, `cairn-${randomBytes(6).toString('hex')}`, {
    heartbeatMs: opts.heartbeatMs ?? 50,
    electionMs: opts.electionMs ?? 500,
    cpus: opts.cpus ?? [],
    ownsRoot: opts.dir === undefined,
  });
  try {
    // Each member was registered for a kill at exit as it was spawned (spawn()): a start that
    // misses its deadline stops them here, and a test process that dies meanwhile kills them.
    const t0 = Date.now();
    for (let i = 0; i < n; i++) cluster.spawn(i, 'new');
    await cluster.waitHealthy(startDeadline('etcd', 30_000));
    startTook('etcd', Date.now() - t0);
  } catch (e) {
    await cluster.stop();
    throw e;
  }
  return cluster;
}
