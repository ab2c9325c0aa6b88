/**
 * A Cairn cluster for tests: real etcd members (helpers/etcd.ts), `cairn cluster init` (run
 * in the test process, as every `cairn cluster` command of the tests), and real Cairn nodes as
 * child processes (helpers/child.ts) that share the chain. A start that fails stops whatever
 * it had started; each child is killed at exit if the test never stops it (helpers/procs.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runToExit, startChild, TS_ARGS, type ChildNode, type Exited } from './child.js';
import { getJson } from './batches.js';
import { startEtcdCluster, type EtcdCluster } from './etcd.js';
import { TIME_SCALE } from './procs.js';
import { run, runCommand, USAGE, wantsJson } from '../../src/cli/cairn.js';

export { TS_ARGS };

export interface TestCluster {
  etcd: EtcdCluster;
  dir: string;
  chainKey: string;
  nodes: Array<ChildNode | null>;
  /** Starts (or restarts) node i on its own data directory. */
  start(i: number, env?: Record<string, string>): Promise<ChildNode>;
  env(i: number): Record<string, string>;
  stop(): Promise<void>;
}

/** Stops a node with SIGTERM; SIGKILL if it has not exited after `ms`. */
export async function stopOrKill(node: ChildNode, ms = 20_000): Promise<void> {
  const timer = setTimeout(() => void node.kill9(), ms);
  await node.stop();
  clearTimeout(timer);
}

// One in-process command at a time: each takes this process's stdout and stderr while it runs.
let inProcessTurn: Promise<unknown> = Promise.resolve();

/**
 * `cairn cluster …` with the given arguments; resolves with its exit code and its output
 * (stdout and stderr, in the order written). It runs in this process, through the CLI's own
 * entry (run and runCommand of src/cli/cairn.ts, as test/cli.test.ts does): what a process
 * would print and exit with, without the second or two a process takes to load (the cairn
 * process itself is tested by test/cli.test.ts). With an `env` of its own it runs as a process.
 */
export function cairnCluster(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Exited> {
  if (env !== process.env) return runToExit(['src/cli/cairn.ts', 'cluster', ...args], env, 60_000);
  const argv = ['cluster', ...args];
  const turn = inProcessTurn.then(async (): Promise<Exited> => {
    let log = '';
    const out = process.stdout.write;
    const err = process.stderr.write;
    const exitCode = process.exitCode;
    const capture = ((c: string | Uint8Array) => {
      log += typeof c === 'string' ? c : Buffer.from(c).toString();
      return true;
    }) as typeof process.stdout.write;
    process.stdout.write = capture;
    process.stderr.write = capture;
    try {
      const code = await runCommand('cairn', USAGE, () => run(argv), wantsJson(argv));
      return { code, log };
    } finally {
      process.stdout.write = out;
      process.stderr.write = err;
      process.exitCode = exitCode;
    }
  });
  inProcessTurn = turn.catch(() => undefined);
  return turn;
}

export async function startCluster(
  n: number,
  opts: { etcdMembers?: number; init?: string[]; nodeEnv?: Record<string, string>; nodeEnvOf?: (i: number) => Record<string, string> } = {},
): Promise<TestCluster> {
  // The cluster command's modules load while etcd starts (cairn cluster init runs in this process).
  const [etcd] = await Promise.all([startEtcdCluster(opts.etcdMembers ?? 3), import('../../src/cli/cluster.js')]);
  const dir = mkdtempSync(join(tmpdir(), 'cairn-cluster-'));
  const chainKey = join(dir, 'chain.key');
  const init = await cairnCluster(['init', '--etcd', etcd.endpoints.join(','), '--chain-key', chainKey, ...(opts.init ?? [])]);
  if (init.code !== 0) {
    await etcd.stop();
    throw new Error(`cairn cluster init failed: ${init.log}`);
  }
  const nodes: Array<ChildNode | null> = Array.from({ length: n }, () => null);
  const env = (i: number): Record<string, string> => ({
    CAIRN_CLUSTER_ETCD: etcd.endpoints.join(','),
    CAIRN_CHAIN_KEY: chainKey,
    CAIRN_NODE_ID: `n${i}`,
    CAIRN_LOG_FORMAT: 'json',
    ...opts.nodeEnv,
    ...opts.nodeEnvOf?.(i),
  });
  const c: TestCluster = {
    etcd,
    dir,
    chainKey,
    nodes,
    env,
    async start(i, extra = {}) {
      const node = await startChild(join(dir, `n${i}`), { ...env(i), ...extra });
      nodes[i] = node;
      return node;
    },
    async stop() {
      // SIGTERM (a clean stop writes the coverage of the process), SIGKILL after 20 s.
      await Promise.all(nodes.map((x) => (x ? stopOrKill(x) : undefined)));
      await etcd.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await Promise.all(nodes.map((_, i) => c.start(i)));
  } catch (err) {
    await c.stop();
    throw err;
  }
  return c;
}

/** The head block (id, number, state root) of a node. */
export async function head(url: string): Promise<{ id: string; num: number; root: string }> {
  const r = await getJson(`${url}/blocks?limit=1`);
  const b = r.json.data[0];
  return { id: b.header_signature, num: Number(b.header.block_num), root: b.header.state_root_hash };
}

/** Waits until every url has the same head block at `minNum` or above; resolves with it. */
export async function sameHead(urls: string[], minNum = 0, seconds = 30 * TIME_SCALE): Promise<{ id: string; num: number; root: string }> {
  const until = Date.now() + seconds * 1000;
  let last: unknown;
  for (;;) {
    const heads = await Promise.all(urls.map((u) => head(u).catch(() => null)));
    const h0 = heads[0];
    if (h0 && h0.num >= minNum && heads.every((h) => h && h.id === h0.id && h.root === h0.root)) return h0;
    last = heads;
    if (Date.now() > until) throw new Error(`heads differ after ${seconds} s: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * sameHead over the cluster's running nodes; a failure also carries the last lines of each
 * node's log and its cluster view (/status), so that a run that fails under CI load says why.
 */
export async function sameHeadOf(c: TestCluster, minNum = 0, seconds = 30 * TIME_SCALE): Promise<{ id: string; num: number; root: string }> {
  const urls = c.nodes.map((n) => n?.ledgerUrl ?? '');
  try {
    return await sameHead(urls, minNum, seconds);
  } catch (err) {
    const parts = [(err as Error).message];
    for (const [i, n] of c.nodes.entries()) {
      if (!n) continue;
      const st = await getJson(`${n.ledgerUrl}/status`).catch(() => null);
      parts.push(`node ${i}: /status cluster ${JSON.stringify(st?.json?.data?.cluster ?? null)}`);
      parts.push(`node ${i}: last lines of its log:\n${n.log().split('\n').slice(-25).join('\n')}`);
    }
    throw new Error(parts.join('\n'));
  }
}
