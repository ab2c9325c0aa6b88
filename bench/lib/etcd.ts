/**
 * An etcd cluster on loopback for a benchmark: n members of the `etcd` binary on PATH
 * (Debian's etcd-server), each on free ports with its own data directory under `root`, its
 * log in `root/m<i>.log`; which member leads (each member's own status through the gRPC
 * gateway), SIGKILL and restart of one member. Every member is killed when the bench exits
 * (bench/lib/reaper.ts).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, closeSync, constants, mkdirSync, openSync, readFileSync } from 'node:fs';
import { type AddressInfo, createServer, type Server } from 'node:net';
import { delimiter, join } from 'node:path';
import { exited, kill9, reap } from './reaper.js';

export interface EtcdOptions {
  /** --heartbeat-interval, ms. */
  heartbeatMs: number;
  /** --election-timeout, ms. */
  electionMs: number;
}

interface Member {
  name: string;
  clientUrl: string;
  peerUrl: string;
  dataDir: string;
  logFile: string;
  child: ChildProcess | null;
}

/** A member's view of the cluster; the uint64 ids are decimal strings. */
export interface EtcdStatus {
  memberId: string;
  /** The leader this member knows of ('0' or '' while there is none). */
  leader: string;
  raftTerm: number;
}

async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<Server>((resolve, reject) => {
          const s = createServer();
          s.once('error', reject);
          s.listen(0, '127.0.0.1', () => resolve(s));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Whether an executable `etcd` is on PATH. */
export function etcdOnPath(): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      if (dir) accessSync(join(dir, 'etcd'), constants.X_OK);
      return dir !== '';
    } catch {
      return false;
    }
  });
}

/** POST /v3/maintenance/status on one member; undefined when it does not answer. */
export async function etcdStatus(clientUrl: string, timeoutMs = 1000): Promise<EtcdStatus | undefined> {
  try {
    const r = await fetch(`${clientUrl}/v3/maintenance/status`, { method: 'POST', body: '{}', signal: AbortSignal.timeout(timeoutMs) });
    if (!r.ok) return undefined;
    const b = (await r.json()) as { header?: { member_id?: string; raft_term?: string }; leader?: string };
    return { memberId: b.header?.member_id ?? '', leader: b.leader ?? '', raftTerm: Number(b.header?.raft_term ?? 0) };
  } catch {
    return undefined;
  }
}

async function healthy(clientUrl: string): Promise<boolean> {
  try {
    const r = await fetch(`${clientUrl}/health`, { signal: AbortSignal.timeout(1000) });
    return r.ok && ((await r.json()) as { health?: unknown }).health === 'true';
  } catch {
    return false;
  }
}

export class BenchEtcd {
  readonly endpoints: string[];
  readonly #members: Member[];
  readonly #token = `cairn-bench-${randomBytes(6).toString('hex')}`;
  readonly #o: EtcdOptions;

  private constructor(members: Member[], o: EtcdOptions) {
    this.#members = members;
    this.#o = o;
    this.endpoints = members.map((m) => m.clientUrl);
  }

  /** Starts an n-member cluster under `root`; resolves once every member is healthy. */
  static async start(root: string, n: number, o: EtcdOptions): Promise<BenchEtcd> {
    if (!etcdOnPath()) throw new Error("etcd is not on PATH: install Debian's etcd-server (apt-get install etcd-server)");
    const ports = await freePorts(2 * n);
    const members = Array.from({ length: n }, (_, i): Member => {
      const dataDir = join(root, `m${i}`);
      mkdirSync(dataDir, { recursive: true });
      return {
        name: `m${i}`,
        clientUrl: `http://127.0.0.1:${ports[2 * i]}`,
        peerUrl: `http://127.0.0.1:${ports[2 * i + 1]}`,
        dataDir,
        logFile: join(root, `m${i}.log`),
        child: null,
      };
    });
    const c = new BenchEtcd(members, o);
    try {
      for (let i = 0; i < n; i++) c.#spawn(i, 'new');
      await c.waitHealthy(members.map((_, i) => i));
    } catch (err) {
      await c.stop();
      throw err;
    }
    return c;
  }

  #member(i: number): Member {
    const m = this.#members[i];
    if (!m) throw new Error(`no etcd member ${i}`);
    return m;
  }

  #spawn(i: number, state: 'new' | 'existing'): void {
    const m = this.#member(i);
    const args = [
      ['--name', m.name],
      ['--data-dir', m.dataDir],
      ['--listen-client-urls', m.clientUrl],
      ['--advertise-client-urls', m.clientUrl],
      ['--listen-peer-urls', m.peerUrl],
      ['--initial-advertise-peer-urls', m.peerUrl],
      ['--initial-cluster', this.#members.map((x) => `${x.name}=${x.peerUrl}`).join(',')],
      ['--initial-cluster-state', state],
      ['--initial-cluster-token', this.#token],
      ['--heartbeat-interval', String(this.#o.heartbeatMs)],
      ['--election-timeout', String(this.#o.electionMs)],
      ['--logger', 'zap'],
    ].flat();
    // ETCD_* variables would configure etcd beside the flags: the flags alone decide.
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('ETCD_')));
    const log = openSync(m.logFile, 'a');
    try {
      m.child = spawn('etcd', args, { stdio: ['ignore', log, log], env });
    } finally {
      closeSync(log);
    }
    m.child.on('error', (err) => process.stderr.write(`etcd member ${i}: ${err.message}\n`));
    reap(m.child);
  }

  /** Pids of the running members. */
  pids(): number[] {
    return this.#members.flatMap((m, i) => (this.running(i) && m.child?.pid !== undefined ? [m.child.pid] : []));
  }

  running(i: number): boolean {
    const c = this.#member(i).child;
    return c !== null && c.pid !== undefined && !exited(c);
  }

  /** Resolves once the members `which` answer /health; rejects with a log tail if one exits or on timeout. */
  async waitHealthy(which: number[], timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const pending = new Set(which);
    while (pending.size > 0) {
      for (const i of pending) if (!this.running(i)) throw new Error(`etcd member ${i} exited:\n${this.logTail(i)}`);
      const ok = await Promise.all([...pending].map(async (i) => [i, await healthy(this.#member(i).clientUrl)] as const));
      for (const [i, h] of ok) if (h) pending.delete(i);
      if (pending.size === 0) return;
      if (Date.now() > deadline)
        throw new Error(`etcd members ${[...pending].join(', ')} not healthy in ${timeoutMs} ms:\n${this.logTail([...pending][0] ?? 0)}`);
      await sleep(50);
    }
  }

  /** Each running member's status (undefined for one down or silent). */
  statuses(): Promise<Array<EtcdStatus | undefined>> {
    return Promise.all(this.#members.map((m, i) => (this.running(i) ? etcdStatus(m.clientUrl) : Promise.resolve(undefined))));
  }

  /** Index of the member that names itself leader (of several, the highest term); retries until one does. */
  async leader(timeoutMs = 10_000): Promise<{ index: number; memberId: string }> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const views = await this.statuses();
      let best = -1;
      views.forEach((v, i) => {
        if (v && v.leader !== '' && v.leader !== '0' && v.leader === v.memberId && (best < 0 || v.raftTerm > (views[best]?.raftTerm ?? 0))) best = i;
      });
      const v = views[best];
      if (v) return { index: best, memberId: v.memberId };
      if (Date.now() > deadline) throw new Error(`no etcd leader within ${timeoutMs} ms`);
      await sleep(20);
    }
  }

  /**
   * After the leader `oldLeader` is gone: resolves with the ms until a running member names
   * another leader (polled every `pollMs`), measured from `since` (performance.now()).
   */
  async newLeaderAfter(oldLeader: string, since: number, pollMs = 10, timeoutMs = 30_000): Promise<number> {
    for (;;) {
      const views = await this.statuses();
      if (views.some((v) => v && v.leader !== '' && v.leader !== '0' && v.leader !== oldLeader)) return performance.now() - since;
      if (performance.now() - since > timeoutMs) throw new Error(`no new etcd leader within ${timeoutMs} ms`);
      await sleep(pollMs);
    }
  }

  /** SIGKILLs member i; resolves once it has exited. */
  async kill(i: number): Promise<void> {
    const c = this.#member(i).child;
    if (c) await kill9(c);
  }

  /** Starts member i again on its ports and data directory; resolves once it is healthy. */
  async restart(i: number): Promise<void> {
    if (this.running(i)) throw new Error(`etcd member ${i} is running`);
    this.#spawn(i, 'existing');
    await this.waitHealthy([i]);
  }

  logTail(i: number, lines = 15): string {
    try {
      return readFileSync(this.#member(i).logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }

  /** SIGKILLs every member; resolves once all have exited. */
  async stop(): Promise<void> {
    await Promise.all(this.#members.map((_, i) => this.kill(i)));
  }
}
