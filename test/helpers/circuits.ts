/**
 * Several node processes on loopback for the circuit tests: own data directories, ports
 * and keys, short peer intervals, every node in every node's registry, and websocket
 * event clients.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import WebSocket from 'ws';
import { Signer } from '../../src/crypto/secp256k1.js';
import { makeCylinderJwt } from '../../src/auth/cylinder.js';
import { startChild, type ChildNode } from './child.js';
import { client, type Call } from './http-client.js';

export const FAST_ENV: Record<string, string> = {
  CAIRN_BCRYPT_COST: '4',
  CAIRN_HEARTBEAT_MS: '500',
  CAIRN_PEER_RETRY_MS: '200',
  CAIRN_PEER_RETRY_MAX_MS: '1000',
  CAIRN_ADMIN_TIMEOUT_MS: '8000',
  CAIRN_ADMIN_PARTICIPANT_TIMEOUT_MS: '12000',
};

export interface CircuitNode {
  id: string;
  dir: string;
  child: ChildNode;
  url: string;
  call: Call;
  /** `Cylinder:<jwt>` of the node's admin key. */
  auth: string;
  admin: Signer;
  /** Hex public key of the peering key. */
  peering: string;
  endpoint: string;
  restart(): Promise<void>;
}

/**
 * Deadlines of the waits below follow how long this machine took to start a node, not a
 * guess: a wait on a circuit's event is given at least WAIT_STARTS times the slowest node
 * start this process measured (a node start is the heaviest thing these tests do; on a quiet
 * 2-core machine about 3 s, under a CPU burner several times that), and never less than the
 * base a quiet machine needs with room to spare. Too short fails a correct test on a busy
 * machine; too long only delays the report of a real failure.
 */
const WAIT_STARTS = 10;
let slowestStartMs = 0;

/** `baseMs`, or more where node starts on this machine were slow. */
export function deadline(baseMs: number): number {
  return Math.max(baseMs, WAIT_STARTS * slowestStartMs);
}

function key(dir: string, name: string): Signer {
  return new Signer(readFileSync(join(dir, 'keys', name), 'utf8').trim());
}

/**
 * A start that failed may leave its process running: child.ts's deadline rejects without
 * stopping it (seen under a heavy load: three nodes still running after their file had
 * ended, and a later start in the same directory refused as "in use by another process").
 * Its pid is in the log the error carries (the node's first log lines); the process is
 * killed when it is still this process's child (its parent pid is ours), nothing else.
 */
function killStartedChild(err: unknown): void {
  const pid = Number(/"pid":(\d+)/.exec(String((err as Error)?.message))?.[1]);
  if (!pid) return;
  try {
    // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may hold spaces, so read after the last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid === process.pid) process.kill(pid, 'SIGKILL');
  } catch {
    // gone already, or no /proc: nothing to do
  }
}

async function boot(id: string, dir: string, networkPort = 0): Promise<ChildNode> {
  const t0 = Date.now();
  try {
    const child = await startChild(dir, { ...FAST_ENV, CAIRN_NODE_ID: id, CAIRN_NETWORK_BIND: `127.0.0.1:${networkPort}` });
    slowestStartMs = Math.max(slowestStartMs, Date.now() - t0);
    return child;
  } catch (err) {
    killStartedChild(err);
    throw err;
  }
}

/**
 * Starts one node per id, all at once (each start is mostly waiting on its own process, and
 * a file's nodes are independent until the registries name each other), then puts every
 * node in every node's registry. Every node whose start succeeded is stopped at the end of
 * the file (tap's teardown, registered before any start is waited on) even where the file
 * never reaches its own teardown; and where one start fails, the others are stopped before
 * the error is thrown, so no process outlives the file. `stop` may be called more than once.
 */
export async function startCircuitNodes(ids: string[]): Promise<{ nodes: CircuitNode[]; stop(): Promise<void> }> {
  const nodes: CircuitNode[] = [];
  const dirs: string[] = [];
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      await Promise.all(nodes.map((n) => n.child.stop()));
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    })());
  t.teardown(stop);
  const started = await Promise.allSettled(
    ids.map(async (id) => {
      const dir = mkdtempSync(join(tmpdir(), `cairn-circuit-${id}-`));
      dirs.push(dir);
      const child = await boot(id, dir);
      const admin = key(dir, 'admin.priv');
      const n: CircuitNode = {
        id,
        dir,
        child,
        url: `http://127.0.0.1:${child.ports.node}`,
        call: client(`http://127.0.0.1:${child.ports.node}`),
        auth: `Cylinder:${makeCylinderJwt(admin)}`,
        admin,
        peering: key(dir, 'peering.priv').publicKey,
        endpoint: `tcp://127.0.0.1:${child.ports.network}`,
        async restart(): Promise<void> {
          // Same data directory and the same peer port: the others dial the stored endpoint.
          // The process it replaces is gone first (a test stops or kills it; this makes sure).
          await n.child.kill9();
          n.child = await boot(id, dir, child.ports.network);
          n.url = `http://127.0.0.1:${n.child.ports.node}`;
          n.call = client(n.url);
        },
      };
      return n;
    }),
  );
  for (const s of started) if (s.status === 'fulfilled') nodes.push(s.value);
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) {
    await stop();
    throw failed.reason;
  }
  await Promise.all(
    nodes.map(async (n) => {
      for (const m of nodes) {
        const r = await n.call('POST', '/registry/nodes', {
          auth: n.auth,
          body: { identity: m.id, endpoints: [m.endpoint], display_name: `Node ${m.id}`, keys: [m.admin.publicKey], metadata: {} },
        });
        if (r.status !== 200) throw new Error(`registry on ${n.id}: ${r.status} ${r.text}`);
      }
    }),
  );
  return { nodes, stop };
}

export async function submit(n: CircuitNode, payload: Uint8Array, auth = n.auth): Promise<{ status: number; text: string; body: unknown }> {
  const res = await fetch(`${n.url}/admin/submit`, {
    method: 'POST',
    headers: { authorization: `Bearer ${auth}`, 'content-type': 'application/octet-stream' },
    body: Buffer.from(payload),
  });
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: res.status, text, body };
}

export interface AdminEvent {
  timestamp: number;
  eventType: string;
  message: unknown;
}

/** A websocket event client: the raw frames it received (registration result first). */
export class EventClient {
  readonly frames: string[] = [];
  readonly ws: WebSocket;
  readonly opened: Promise<void>;
  #waiters: Array<() => void> = [];

  constructor(n: CircuitNode, type: string, last?: number, version?: number) {
    const headers: Record<string, string> = { authorization: `Bearer ${n.auth}` };
    if (version) headers.nodeprotocolversion = String(version);
    this.ws = new WebSocket(`ws://127.0.0.1:${n.child.ports.node}/ws/admin/register/${type}${last !== undefined ? `?last=${last}` : ''}`, {
      headers,
    });
    this.opened = new Promise((resolve, reject) => {
      this.ws.on('open', () => resolve());
      this.ws.on('error', reject);
      this.ws.on('unexpected-response', (_q, res) => reject(new Error(`websocket refused: ${res.statusCode}`)));
    });
    this.ws.on('message', (d) => {
      this.frames.push(d.toString());
      for (const w of this.#waiters) w();
    });
  }

  get events(): AdminEvent[] {
    return this.frames.slice(1).map((f) => JSON.parse(f) as AdminEvent);
  }

  /** Waits until an event matches (by type and circuit id); returns it. The default deadline grows with measured node starts. */
  async waitFor(type: string, circuitId: string, also = '', timeoutMs = deadline(30_000)): Promise<AdminEvent> {
    const find = (): AdminEvent | undefined =>
      this.events.find(
        (e) => e.eventType === type && JSON.stringify(e.message).includes(`"circuit_id":"${circuitId}"`) && JSON.stringify(e.message).includes(also),
      );
    const until = Date.now() + timeoutMs;
    for (;;) {
      const e = find();
      if (e) return e;
      if (Date.now() > until)
        throw new Error(`no ${type} for ${circuitId} within ${timeoutMs} ms; got ${this.events.map((x) => x.eventType).join(', ')}`);
      await new Promise<void>((r) => {
        const timer = setTimeout(r, 200);
        this.#waiters.push(() => {
          clearTimeout(timer);
          r();
        });
      });
      this.#waiters = [];
    }
  }

  close(): void {
    this.ws.terminate();
  }
}
