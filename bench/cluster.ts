/**
 * Cluster benchmark: three etcd members and three Cairn nodes (the build, run as `npm start`
 * runs it, on loopback) sharing one chain, then one single node for comparison, in one
 * sitting. The load is `cairn bench`'s (src/bench: intkey batches signed by its worker threads
 * before each phase's clock, a closed loop over CONNECTIONS keep-alive connections spread
 * round-robin over the phase's nodes, commits tracked on each node with /batch_statuses?wait).
 * Phases, each on fresh batches:
 *
 * 0. warm-up over the three nodes (CLUSTER_WARMUP s, not counted: long enough for V8 to have
 *    optimized the hot code of every node). Each node runs that code a third as often as a
 *    single node does, so the cluster warms up three times as long as the single node: on a
 *    fast 2-core machine the three nodes still spent 11.7% of a core compiling after 3 s and
 *    4.5% after 25 s; on a slower one the cluster's rate rose from about 250 to 750 batches/s
 *    over its first 30 s (the single node's was flat after 3 s), and four runs with 40 s of
 *    warm-up committed 1.2 to 1.5 times as many batches/s as four with 15, interleaved;
 * 1. throughput: DURATION s over the three nodes: committed batches/s, submit p50/p99 (POST
 *    to 202, 429 retries included, as `cairn bench` counts it) and, for 1 batch in SAMPLE,
 *    submit-to-committed on ALL three (bench/lib/probe.ts). Then the three heads
 *    (GET /blocks?limit=1) must be the same block;
 * 2. CPU: CPU_BATCHES batches to node n0 only: CPU seconds (user + system, all threads, from
 *    /proc/<pid>/stat) of n0, which ingests (HTTP, verification, etcd appends) and applies, and
 *    of n1 and n2, which only apply, from the first batch until all three have the last one,
 *    each divided by the batches committed;
 * 3. etcd leader SIGKILL: KILL_DURATION s over the three nodes, plus an open loop of TRICKLE
 *    batches/s (so that new batches keep coming while the closed loop's connections all wait);
 *    KILL_AT s in, the etcd leader (each member's POST /v3/maintenance/status) is SIGKILLed:
 *    the time until another member names itself leader, and the longest gap between
 *    consecutive new head blocks on each node (bench/lib/heads.ts, polled every POLL_MS ms)
 *    from the last block before the kill on. The member is restarted afterwards, and the next
 *    phase waits until every node accepts batches again;
 * 4. node SIGKILL: the same with the load on two nodes and the third (the one with the lowest
 *    node key, which trims the log) SIGKILLed; the gaps on the two others;
 * 5. single node (no cluster), the same pool threads, generator and connections: WARMUP s,
 *    then DURATION s: committed batches/s and CPU per batch.
 *
 * The run fails (exit status 1, after the report) when the heads differ after a phase, an
 * accepted batch is not committed, or a sampled batch is not committed on all three.
 * Every etcd member and node is killed at the end, on failure too (bench/lib/reaper.ts; the etcd
 * members are test/helpers/etcd.ts's, the launcher the tests use).
 *
 * Env: DURATION (10), CONNECTIONS (48; 384 pinned), WARMUP (15: the single node's warm-up, s),
 * CLUSTER_WARMUP (3 × WARMUP: the cluster's), CPU_BATCHES (6000),
 * KILL_DURATION (8), KILL_AT (3), TRICKLE (20; 0: none), SAMPLE (20; 200 pinned),
 * POOL_THREADS (1: each node's --pool-threads, the single node's too), HEARTBEAT_MS (100) and
 * ELECTION_MS (1000: etcd's defaults), POLL_MS (10), PIN_CORES (0: none; k: each node on k cores of its own, each etcd
 * member on one, the bench on the rest, bench/lib/pin.ts; for a many-core machine),
 * REPORT_JSON (a file for the full report), KEEP=1 (keep the temp directory with the etcd and
 * node logs; kept anyway when the run fails), BENCH_QUIET=1. The nodes get this environment:
 * CAIRN_CLUSTER_APPEND_SPACING_MS=16 runs the members at that append spacing.
 * Prints a table on stderr and one JSON line on stdout.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { randomPrivateKey } from '../src/crypto/secp256k1.js';
import { Generator, SignerPool, type BatchSource } from '../src/bench/generator.js';
import { runLoad, type RunStats, type Tick } from '../src/bench/run.js';
import { Target } from '../src/bench/target.js';
import { startBenchNode, type BenchNode } from './lib/node.js';
import { cpuSeconds } from './lib/proc.js';
import { percentile } from './lib/http.js';
import { envInt } from './lib/env.js';
import { HeadWatcher, firstHeadAfter, headOf, longestGap, type Gaps } from './lib/heads.js';
import { type AllCommitted, type Answer, MarkingSource, Recorder, RecordingTarget } from './lib/probe.js';
import { type PinLayout, pinLayout, pinSelf } from './lib/pin.js';
import { keepDir, kill9, reap, removeOnExit, terminate } from './lib/reaper.js';
// The tests' etcd launcher, shared with the bench (bench/ importing test/helpers/ is intended:
// one launcher, one exit hook and watchdog, for both).
import { type EtcdCluster, startEtcdCluster } from '../test/helpers/etcd.js';

const DURATION = envInt('DURATION', 10, 1, 3600);
// Cores per node (bench/lib/pin.ts: nodes, etcd members and the load each on cores of their
// own); 0: no pinning. A pinned run is one on a many-core machine, where the nodes have cores
// to spare: its defaults put 384 batches in flight (a cluster's submit takes about 23 ms, so 48
// connections carry about 2,100 batches/s whatever the cores) and follow 1 batch in 200 (at 1
// in 20 the probe doubled the generator's CPU, and its one thread was the bound).
const PIN_CORES = envInt('PIN_CORES', 0, 0, 64);
const CONNECTIONS = envInt('CONNECTIONS', PIN_CORES > 0 ? 384 : 48, 1, 4096);
const WARMUP = envInt('WARMUP', 15, 0, 600);
const CLUSTER_WARMUP = envInt('CLUSTER_WARMUP', 3 * WARMUP, 0, 1800);
const CPU_BATCHES = envInt('CPU_BATCHES', 6000, 100);
const KILL_DURATION = envInt('KILL_DURATION', 8, 2, 3600);
const KILL_AT = envInt('KILL_AT', 3, 1, KILL_DURATION - 1);
const SAMPLE = envInt('SAMPLE', PIN_CORES > 0 ? 200 : 20, 1);
const POOL_THREADS = envInt('POOL_THREADS', 1, 1, 64);
const HEARTBEAT_MS = envInt('HEARTBEAT_MS', 100, 10, 10_000);
const ELECTION_MS = envInt('ELECTION_MS', 1000, 5 * HEARTBEAT_MS, 50_000);
const POLL_MS = envInt('POLL_MS', 10, 1, 1000);
const TRICKLE = envInt('TRICKLE', 20, 0, 10_000);
const COMMIT_TIMEOUT_MS = 30_000;
const QUIET = process.env.BENCH_QUIET === '1';

function progress(msg: string): void {
  if (!QUIET) process.stderr.write(`[cluster] ${msg}\n`);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const r1 = (x: number): number => Math.round(x * 10) / 10;
const r2 = (x: number): number => Math.round(x * 100) / 100;

interface Check {
  name: string;
  ok: boolean;
  detail: string;
}
const checks: Check[] = [];
function check(name: string, ok: boolean, detail: string): void {
  checks.push({ name, ok, detail });
  if (!ok) process.stderr.write(`[cluster] CHECK FAILED: ${name}: ${detail}\n`);
}

// ---------------------------------------------------------------------------------------
// Load: cairn bench's generator and load loop.

let pool: SignerPool | undefined;
const runTag = randomBytes(3).toString('hex');
let phaseNo = 0;

/** A generator of `total` fresh batches, all signed before it is returned (no signing under the clock). */
async function signed(total: number): Promise<Generator> {
  pool ??= new SignerPool(0);
  const gen = new Generator(
    {
      prefix: `c${runTag}p${phaseNo++}_`,
      txns: 1,
      signerKeys: Array.from({ length: 16 }, () => randomPrivateKey()),
      keyspace: 0,
      incGap: 0,
      invalidEvery: 0,
    },
    total,
    0,
    pool,
  );
  await gen.fill(total);
  return gen;
}

interface LoadOptions {
  /** Nodes on which 1 batch in SAMPLE is followed until committed on all of them. */
  follow?: string[];
  /** Called as the load starts (performance.now()). */
  onStart?: (t0: number) => void;
  /** A progress line every second (else every 3 s). */
  everyTick?: boolean;
  /** An open loop of this many batches/s beside the closed loop (up to 256 in flight). */
  trickle?: number;
  /** A fixed number of batches (the loop ends when they are all committed) instead of a timed loop. */
  batches?: number;
  /** CPU seconds of the processes measured, read as the load starts (LoadRun.meterStart). */
  meter?: () => number[];
}

interface LoadRun {
  stats: RunStats;
  trickle: RunStats | null;
  /** performance.now() when the load started. */
  t0: number;
  /** The signed batches ran out before the end (the rate is over the time they lasted). */
  ranOut: boolean;
  /** `meter()` as the load started. */
  meterStart: number[];
  /** Every POST /batches answer of both loops. */
  answers: Answer[];
  /** The followed batches. */
  all: AllCommitted[];
}

/**
 * A closed loop of CONNECTIONS connections for `secs` s over `urls` (round-robin), on
 * batches signed before the clock: `expectedRate` × secs × 1.5 (+ 2,000) of them (the loop
 * stops early, and says so, if they run out).
 */
async function load(name: string, urls: string[], secs: number, expectedRate: number, o: LoadOptions = {}): Promise<LoadRun> {
  const total = o.batches ?? Math.ceil(expectedRate * secs * 1.5) + 2000;
  const ts = performance.now();
  const gen = await signed(total);
  const trickleGen = o.trickle ? await signed(Math.ceil(o.trickle * secs) + 10) : null;
  progress(
    `${name}: ${total.toLocaleString('en-US')} batches signed in ${r1((performance.now() - ts) / 1000)} s; ` +
      `${o.batches ? 'all of them' : `${secs} s`} over ${urls.length} node(s)` +
      (o.trickle ? ` (+ ${o.trickle}/s open loop)` : ''),
  );
  const rec = new Recorder(o.follow ?? [], COMMIT_TIMEOUT_MS);
  const source: BatchSource = o.follow ? new MarkingSource(gen, SAMPLE, rec) : gen;
  const targets = urls.map((u) => new RecordingTarget(u, CONNECTIONS, rec));
  const trickleTargets = trickleGen ? urls.map((u) => new RecordingTarget(u, 256, rec)) : [];
  let last = 0;
  const tick = (t: Tick): void => {
    if (QUIET || (!o.everyTick && t.t - last < 3)) return;
    last = t.t;
    progress(
      `  ${name} ${t.t.toFixed(0).padStart(3)} s: committed ${t.committed}/s, pending ${t.pending}, errors ${t.errors}, submit p99 ${t.submitP99Ms} ms`,
    );
  };
  const meterStart = o.meter?.() ?? [];
  const t0 = performance.now();
  o.onStart?.(t0);
  try {
    const [stats, trickle] = await Promise.all([
      runLoad(
        targets,
        source,
        { connections: CONNECTIONS, rates: [], durationMs: o.batches ? 0 : secs * 1000, txnsPerBatch: 1, commitTimeoutMs: COMMIT_TIMEOUT_MS },
        { tick },
      ),
      trickleGen && o.trickle
        ? runLoad(trickleTargets, trickleGen, {
            connections: 256,
            rates: [o.trickle],
            durationMs: secs * 1000,
            txnsPerBatch: 1,
            commitTimeoutMs: COMMIT_TIMEOUT_MS,
          })
        : Promise.resolve(null),
    ]);
    const all = await Promise.all(rec.probes);
    const ranOut = !o.batches && stats.sendSeconds < secs - 0.5;
    if (ranOut) progress(`${name}: the ${total} signed batches ran out after ${stats.sendSeconds} s (the rate is over that time)`);
    return { stats, trickle, t0, ranOut, meterStart, answers: rec.answers, all };
  } finally {
    await source.close();
    await trickleGen?.close();
    for (const t of [...targets, ...trickleTargets]) t.close();
    rec.close();
  }
}

/** Best whole second's committed rate of a run (to size a later phase's batches); the timeline's last, partial second is left out. */
const peakRate = (s: RunStats): number => Math.max(s.committedBatchesPerSec, ...s.timeline.slice(0, -1).map((t) => t.committed));

/** Accepted batches must all commit (none lost, none left pending). */
function checkCommitted(phase: string, s: RunStats): void {
  check(
    `${phase}: every accepted batch committed`,
    s.committed === s.accepted && s.uncommitted === 0 && s.invalid === 0,
    `${s.accepted} accepted, ${s.committed} committed, ${s.invalid} invalid, ${s.uncommitted} not committed in ${COMMIT_TIMEOUT_MS / 1000} s`,
  );
}

/**
 * Sends fresh batches one at a time to each node until it accepts `inARow` in a row (202);
 * resolves with the ms that took, or -1 when a node still refuses after `timeoutMs`.
 */
async function untilAccepting(urls: string[], inARow = 3, timeoutMs = 30_000): Promise<number> {
  const gen = await signed(urls.length * 400);
  const t0 = performance.now();
  try {
    const ok = await Promise.all(
      urls.map(async (u) => {
        const t = new Target(u, 1);
        try {
          for (let row = 0; row < inARow; ) {
            if (performance.now() - t0 > timeoutMs) return false;
            const b = gen.take();
            if (!b) return false;
            const r = await t.request('POST', '/batches', b.body).catch(() => ({ status: 0 }));
            if (r.status === 202) row++;
            else {
              row = 0;
              await sleep(50);
            }
          }
          return true;
        } finally {
          t.close();
        }
      }),
    );
    return ok.every(Boolean) ? Math.round(performance.now() - t0) : -1;
  } finally {
    await gen.close();
  }
}

/** POST /batches answers other than 202 and 429 at or after `from`: how many, and the last one's time after `from` (ms). */
function refusalsAfter(answers: Answer[], from: number): { count: number; lastMs: number; statuses: Record<string, number> } {
  const bad = answers.filter((a) => a.t >= from && a.status !== 202 && a.status !== 429);
  const statuses: Record<string, number> = {};
  for (const a of bad) statuses[String(a.status)] = (statuses[String(a.status)] ?? 0) + 1;
  const lastT = Math.max(from, ...bad.map((a) => a.t));
  return { count: bad.length, lastMs: bad.length ? Math.round(lastT - from) : 0, statuses };
}

// ---------------------------------------------------------------------------------------
// Heads.

async function headNow(url: string): Promise<{ id: string; num: number }> {
  const t = new Target(url, 1);
  try {
    return await headOf(t);
  } finally {
    t.close();
  }
}

/** Waits until every node's head is the same block (the load has stopped); a fork or a node that does not catch up fails the check. */
async function sameHeads(phase: string, urls: string[], timeoutMs = 30_000): Promise<{ num: number; id: string } | null> {
  const targets = urls.map((u) => new Target(u, 2));
  const deadline = performance.now() + timeoutMs;
  try {
    for (;;) {
      const heads = await Promise.all(targets.map((t) => headOf(t).catch((err: Error) => ({ id: `error: ${err.message}`, num: -1 }))));
      const h0 = heads[0] as { id: string; num: number };
      if (heads.every((h) => h.id === h0.id)) {
        check(`${phase}: same head on ${urls.length} nodes`, true, `block ${h0.num} ${h0.id.slice(0, 16)}…`);
        return h0;
      }
      const desc = heads.map((h, i) => `${urls[i]}: ${h.num} ${h.id.slice(0, 16)}…`).join('; ');
      if (heads.every((h) => h.num === h0.num && h.num >= 0)) {
        // Same height, other blocks: a second look first (a head read between two commits).
        await sleep(500);
        const again = await Promise.all(targets.map((t) => headOf(t).catch(() => ({ id: '', num: -1 }))));
        if (again.every((h, i) => h.id === heads[i]?.id)) {
          check(`${phase}: same head on ${urls.length} nodes`, false, `different blocks at the same height: ${desc}`);
          return null;
        }
        continue;
      }
      if (performance.now() > deadline) {
        check(`${phase}: same head on ${urls.length} nodes`, false, `heads still differ ${timeoutMs / 1000} s after the load: ${desc}`);
        return null;
      }
      await sleep(100);
    }
  } finally {
    for (const t of targets) t.close();
  }
}

// ---------------------------------------------------------------------------------------
// Processes.

let pin: PinLayout | undefined;

function startNode(name: string, env: Record<string, string>, dir: string, logDir: string, slot = 0): Promise<BenchNode> {
  // The node's log to a file of its own (bench/lib/node.ts appends to BENCH_NODE_LOG, read when it spawns).
  const before = process.env.BENCH_NODE_LOG;
  if (before === undefined) process.env.BENCH_NODE_LOG = join(logDir, `${name}.log`);
  const p = startBenchNode({ CAIRN_POOL_THREADS: String(POOL_THREADS), ...env }, dir, pin?.node(slot));
  if (before === undefined) delete process.env.BENCH_NODE_LOG;
  return p.then((n) => {
    reap(n.child);
    return n;
  });
}

/** `cairn cluster init` (the package's cairn command) against the etcd cluster. */
function clusterInit(endpoints: string[], chainKey: string): Promise<void> {
  const cwd = process.env.BENCH_NODE_DIR ?? process.cwd();
  const child = spawn(
    process.execPath,
    [
      '--initial-old-space-size=64',
      join(cwd, 'scripts/cairn.mjs'),
      'cluster',
      'init',
      '--etcd',
      endpoints.join(','),
      '--chain-key',
      chainKey,
      '--json',
    ],
    { cwd, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  reap(child);
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`cairn cluster init exited with ${code}: ${out.trim()}`));
    });
  });
}

interface GapReport {
  node: string;
  /** Longest gap between new heads before the kill (from 1 s into the load), ms. */
  beforeMaxGapMs: number;
  /** Longest gap between new heads from the last one before the kill to the end of the load, ms. */
  maxGapMs: number;
  /** When that gap began, ms after the kill (negative: before it). */
  maxGapFromKillMs: number;
  /** First new head after the kill, ms. */
  firstHeadAfterKillMs: number;
}

function gapReport(names: string[], w: HeadWatcher, t0: number, tKill: number, tEnd: number): GapReport[] {
  return names.map((node, i) => {
    const changes = w.changes[i] ?? [];
    // From the last new head at or before the kill: the gap that spans it counts whole, after the kill.
    const lastBefore = [...changes].reverse().find((c) => c.t <= tKill)?.t ?? tKill;
    const before: Gaps = longestGap(
      changes.filter((c) => c.t <= lastBefore),
      t0 + 1000,
      lastBefore,
      tKill,
    );
    const after: Gaps = longestGap(changes, lastBefore + 0.001, tEnd, tKill);
    return {
      node,
      beforeMaxGapMs: before.maxGapMs,
      maxGapMs: after.maxGapMs,
      maxGapFromKillMs: after.maxGapStartMs,
      firstHeadAfterKillMs: firstHeadAfter(changes, tKill),
    };
  });
}

// ---------------------------------------------------------------------------------------
// The run.

interface Pair {
  p50: number;
  p99: number;
}

interface KillResult {
  /** What was killed: an etcd member (m0…) or a node (n0…). */
  killed: string;
  killedAtS: number;
  /** etcd only: ms from the kill until a surviving member named another leader. */
  newLeaderMs?: number;
  /** Longest gap between consecutive new heads from the last one before the kill to the end of the load, ms (the largest over the nodes watched). */
  maxGapMs: number;
  /** The same before the kill (from 1 s into the load): the gaps of normal operation. */
  beforeMaxGapMs: number;
  nodes: GapReport[];
  committedBatchesPerSec: number;
  accepted: number;
  committed: number;
  /** POST /batches answered neither 202 nor 429 (or failed) before the kill. */
  refusedBeforeKill: number;
  /** … after the kill, and when the last of them came (ms after the kill). */
  refusedAfterKill: number;
  lastRefusalAfterKillMs: number;
  refusalStatuses: Record<string, number>;
  errorSamples: string[];
  http429: number;
  /** Longest submit (POST to 202) of the closed loop, ms. */
  submitMaxMs: number;
  /** The open loop beside it: accepted, committed and errors. */
  trickle: { rate: number; accepted: number; committed: number; errors: number; commitMaxMs: number } | null;
  /** Per second: committed batches/s and errors (cumulative) of the closed loop. */
  timeline: Array<{ t: number; committed: number; errors: number }>;
}

export interface ClusterResult {
  bench: 'cluster';
  ok: boolean;
  settings: Record<string, number>;
  /** PIN_CORES > 0: the cores of each process (bench/lib/pin.ts). */
  pinned?: Record<string, string>;
  throughput: {
    committedBatchesPerSec: number;
    accepted: number;
    committed: number;
    errors: number;
    http429: number;
    ranOut: boolean;
    /** Blocks made in the phase, and batches per block. */
    blocks: number;
    batchesPerBlock: number;
    submitMs: Pair;
    /** Submit to COMMITTED on the node that took the batch (the load loop's tracking). */
    commitOnIngestingNodeMs: Pair;
    /** Submit to COMMITTED on all three, for 1 batch in SAMPLE. */
    commitOnAllMs: Pair & { max: number; samples: number };
    /** CPU per committed batch: the three nodes together, the three etcd members together, the bench process (load generator). */
    nodesCpuUsPerBatch: number;
    etcdCpuUsPerBatch: number;
    benchCpuUsPerBatch: number;
    /** Cores that other processes on the machine used meanwhile (0: the bench had the machine to itself). */
    otherCores: number;
    /** Per second: committed batches/s and 429 answers (cumulative). */
    timeline: Array<{ t: number; committed: number; http429: number }>;
  };
  cpu: {
    committedBatchesPerSec: number;
    committed: number;
    http429: number;
    batchesPerBlock: number;
    submitMs: Pair;
    ingestUsPerBatch: number;
    applyUsPerBatch: [number, number];
    etcdUsPerBatch: number;
    otherCores: number;
  };
  etcdKill: KillResult;
  /** ms after the restart of the killed etcd member until every node accepted 3 batches in a row (-1: not within 30 s). */
  acceptingAfterEtcdRestartMs: number;
  nodeKill: KillResult;
  single: {
    committedBatchesPerSec: number;
    committed: number;
    ranOut: boolean;
    http429: number;
    batchesPerBlock: number;
    submitMs: Pair;
    commitMs: Pair;
    cpuUsPerBatch: number;
    benchCpuUsPerBatch: number;
    otherCores: number;
  };
  ratios: { clusterToSingleThroughput: number; applyOnlyToSingleCpu: number; ingestToSingleCpu: number };
  checks: Check[];
  wallS: number;
}

const pair = (l: { p50: number; p99: number }): Pair => ({ p50: r1(l.p50), p99: r1(l.p99) });
const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
const benchCpu = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

/** CPU seconds the whole machine has been busy (every process), from /proc/stat; NaN without it. */
function machineCpu(): number {
  try {
    const f = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal …: all but idle and iowait, in clock ticks (100 a second).
    return ((f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0) + (f[7] ?? 0)) / 100;
  } catch {
    return Number.NaN;
  }
}

/**
 * Cores used by processes that are not this bench's (another job on the machine) over a phase:
 * the machine's busy CPU less ours, per second of the phase.
 */
const foreignCores = (machine: number, ours: number, secs: number): number => r2(Math.max(0, machine - ours) / Math.max(secs, 1e-3));

function killResult(killed: string, run: LoadRun, tKill: number, gaps: GapReport[], newLeaderMs?: number): KillResult {
  const refused = refusalsAfter(run.answers, tKill);
  const all = refusalsAfter(run.answers, run.t0);
  const s = run.stats;
  return {
    killed,
    killedAtS: r1((tKill - run.t0) / 1000),
    ...(newLeaderMs !== undefined ? { newLeaderMs } : {}),
    maxGapMs: Math.max(...gaps.map((g) => g.maxGapMs)),
    beforeMaxGapMs: Math.max(...gaps.map((g) => g.beforeMaxGapMs)),
    nodes: gaps,
    committedBatchesPerSec: s.committedBatchesPerSec,
    accepted: s.accepted,
    committed: s.committed,
    refusedBeforeKill: all.count - refused.count,
    refusedAfterKill: refused.count,
    lastRefusalAfterKillMs: refused.lastMs,
    refusalStatuses: refused.statuses,
    errorSamples: s.errorSamples.map((e) => e.slice(0, 300)),
    http429: s.http429,
    submitMaxMs: r1(s.submitLatencyMs.max),
    trickle: run.trickle
      ? {
          rate: run.trickle.offeredRate,
          accepted: run.trickle.accepted,
          committed: run.trickle.committed,
          errors: run.trickle.errors,
          commitMaxMs: r1(run.trickle.commitLatencyMs.max),
        }
      : null,
    timeline: s.timeline.map((t) => ({ t: t.t, committed: t.committed, errors: t.errors })),
  };
}

export async function runCluster(): Promise<ClusterResult> {
  const started = performance.now();
  const root = mkdtempSync(join(tmpdir(), 'cairn-bench-cluster-'));
  const logDir = join(root, 'logs');
  mkdirSync(logDir);
  removeOnExit(root);
  let etcd: EtcdCluster | undefined;
  const nodes: BenchNode[] = [];
  let single: BenchNode | undefined;
  let failed = false;
  try {
    if (PIN_CORES > 0) {
      pin = pinLayout(PIN_CORES);
      pinSelf(pin.bench);
      progress(`pinned: ${JSON.stringify(pin.describe())}`);
    }
    progress(`3 etcd members (heartbeat ${HEARTBEAT_MS} ms, election ${ELECTION_MS} ms), temp dir ${root}`);
    // Its members' data and logs under root/etcd (m0, m1, m2), kept with the rest when the run fails.
    const e = await startEtcdCluster(3, {
      heartbeatMs: HEARTBEAT_MS,
      electionMs: ELECTION_MS,
      dir: join(root, 'etcd'),
      ...(pin ? { cpus: [0, 1, 2].map((j) => (pin as PinLayout).etcd(j)) } : {}),
    });
    etcd = e;
    const chainKey = join(root, 'chain.key');
    await clusterInit(e.endpoints, chainKey);
    progress(`chain made; starting 3 nodes (pool threads ${POOL_THREADS})`);
    const names = ['n0', 'n1', 'n2'];
    const starting = await Promise.allSettled(
      names.map((id, i) =>
        startNode(id, { CAIRN_CLUSTER_ETCD: e.endpoints.join(','), CAIRN_CHAIN_KEY: chainKey, CAIRN_NODE_ID: id }, join(root, id), logDir, i),
      ),
    );
    for (const s of starting) if (s.status === 'fulfilled') nodes.push(s.value);
    for (const s of starting) if (s.status === 'rejected') throw s.reason;
    const urls = nodes.map((n) => n.ledgerUrl);
    const nodesCpu = (): number => sum(nodes.map((n) => cpuSeconds(n.pid)));
    const etcdCpu = (): number => sum(e.pids().map(cpuSeconds));

    // 0. Warm-up.
    let rate = 500;
    if (CLUSTER_WARMUP > 0) {
      const w = await load('warm-up', urls, CLUSTER_WARMUP, rate * 2);
      rate = peakRate(w.stats);
      progress(`warm-up: ${w.stats.committedBatchesPerSec} batches/s (best second ${rate})`);
    }

    // 1. Throughput and latency, load over the three nodes.
    const meterA = (): number[] => [nodesCpu(), etcdCpu(), benchCpu(), machineCpu()];
    const headA0 = await headNow(urls[0] as string);
    const a = await load('throughput', urls, DURATION, rate, { follow: urls, meter: meterA });
    const usedA = meterA().map((x, i) => x - (a.meterStart[i] as number));
    const secsA = (performance.now() - a.t0) / 1000;
    checkCommitted('throughput', a.stats);
    const allMs = a.all
      .map((p) => p.ms)
      .filter((x) => !Number.isNaN(x))
      .sort((x, y) => x - y);
    const notAll = a.all.find((p) => Number.isNaN(p.ms));
    check(
      'throughput: sampled batches committed on all three',
      notAll === undefined,
      `${allMs.length} of ${a.all.length}${notAll ? `; ${notAll.why}` : ''}`,
    );
    const headA = await sameHeads('throughput', urls);
    const blocksA = headA ? headA.num - headA0.num : 0;
    rate = Math.max(rate, peakRate(a.stats));
    const perA = (s: number | undefined): number => Math.round(((s ?? 0) * 1e6) / Math.max(1, a.stats.committed));
    const throughput: ClusterResult['throughput'] = {
      committedBatchesPerSec: a.stats.committedBatchesPerSec,
      accepted: a.stats.accepted,
      committed: a.stats.committed,
      errors: a.stats.errors,
      http429: a.stats.http429,
      ranOut: a.ranOut,
      blocks: blocksA,
      batchesPerBlock: r1(a.stats.committed / Math.max(1, blocksA)),
      submitMs: pair(a.stats.submitLatencyMs),
      commitOnIngestingNodeMs: pair(a.stats.commitLatencyMs),
      commitOnAllMs: { p50: r1(percentile(allMs, 50)), p99: r1(percentile(allMs, 99)), max: r1(allMs.at(-1) ?? 0), samples: allMs.length },
      nodesCpuUsPerBatch: perA(usedA[0]),
      etcdCpuUsPerBatch: perA(usedA[1]),
      benchCpuUsPerBatch: perA(usedA[2]),
      otherCores: foreignCores(usedA[3] ?? 0, (usedA[0] ?? 0) + (usedA[1] ?? 0) + (usedA[2] ?? 0), secsA),
      timeline: a.stats.timeline.map((t) => ({ t: t.t, committed: t.committed, http429: t.http429 })),
    };
    progress(
      `throughput: ${throughput.committedBatchesPerSec} batches/s; submit p50/p99 ${throughput.submitMs.p50}/${throughput.submitMs.p99} ms; ` +
        `on all three p50/p99 ${throughput.commitOnAllMs.p50}/${throughput.commitOnAllMs.p99} ms`,
    );

    // 2. CPU per batch: load on n0 only; n1 and n2 apply.
    const meterB = (): number[] => [...nodes.map((n) => cpuSeconds(n.pid)), etcdCpu(), benchCpu(), machineCpu()];
    const headB0 = await headNow(urls[0] as string);
    const b = await load('cpu (load on n0 only)', [urls[0] as string], 0, 0, { batches: CPU_BATCHES, meter: meterB });
    // Until n1 and n2 have applied every batch too.
    const headB = await sameHeads('cpu', urls);
    const usedB = meterB().map((x, i) => x - (b.meterStart[i] as number));
    const secsB = (performance.now() - b.t0) / 1000;
    checkCommitted('cpu', b.stats);
    const perB = (s: number | undefined): number => Math.round(((s ?? 0) * 1e6) / Math.max(1, b.stats.committed));
    const cpu: ClusterResult['cpu'] = {
      committedBatchesPerSec: b.stats.committedBatchesPerSec,
      committed: b.stats.committed,
      http429: b.stats.http429,
      batchesPerBlock: r1(b.stats.committed / Math.max(1, headB ? headB.num - headB0.num : 0)),
      submitMs: pair(b.stats.submitLatencyMs),
      ingestUsPerBatch: perB(usedB[0]),
      applyUsPerBatch: [perB(usedB[1]), perB(usedB[2])],
      etcdUsPerBatch: perB(usedB[3]),
      otherCores: foreignCores(usedB[5] ?? 0, sum(usedB.slice(0, 5)), secsB),
    };
    progress(`cpu: ingesting n0 ${cpu.ingestUsPerBatch} µs/batch, apply-only n1 ${cpu.applyUsPerBatch[0]}, n2 ${cpu.applyUsPerBatch[1]} µs/batch`);
    // The kill phases: batches for the faster of the two loads seen (two nodes take more than three).
    rate = Math.max(rate, Math.round(0.75 * b.stats.committedBatchesPerSec));

    // 3. The etcd leader SIGKILLed mid-run, load over the three nodes.
    const wC = new HeadWatcher(urls, POLL_MS);
    let killC: Promise<{ tKill: number; member: number; newLeaderMs: number }> | undefined;
    const c = await load('etcd leader kill', urls, KILL_DURATION, rate, {
      everyTick: true,
      trickle: TRICKLE,
      onStart: (t0) => {
        killC = (async () => {
          await sleep(Math.max(0, t0 + KILL_AT * 1000 - performance.now()));
          const leader = await e.leaderStatus(10_000, 20);
          const tKill = performance.now();
          await e.kill(leader.index);
          progress(`  etcd leader m${leader.index} SIGKILLed at ${r1((tKill - t0) / 1000)} s`);
          await e.newLeader(leader.memberId, 30_000, 10);
          const newLeaderMs = Math.round(performance.now() - tKill);
          progress(`  another etcd member leads ${newLeaderMs} ms after the kill`);
          return { tKill, member: leader.index, newLeaderMs };
        })();
      },
    });
    if (!killC) throw new Error('the etcd leader was not killed');
    const kc = await killC;
    await wC.stop();
    checkCommitted('etcd leader kill', c.stats);
    if (c.trickle) checkCommitted('etcd leader kill (open loop)', c.trickle);
    await sameHeads('etcd leader kill', urls);
    const etcdKill = killResult(`m${kc.member}`, c, kc.tKill, gapReport(names, wC, c.t0, kc.tKill, c.t0 + KILL_DURATION * 1000), kc.newLeaderMs);
    progress(
      `etcd leader kill: longest commit gap ${etcdKill.maxGapMs} ms (before the kill ${etcdKill.beforeMaxGapMs} ms); restarting m${kc.member}`,
    );
    await e.restart(kc.member, 30_000);
    const acceptingAfterEtcdRestartMs = await untilAccepting(urls);
    check(
      'every node accepts batches again after the etcd member restarted',
      acceptingAfterEtcdRestartMs >= 0,
      acceptingAfterEtcdRestartMs >= 0 ? `after ${acceptingAfterEtcdRestartMs} ms` : 'not within 30 s',
    );

    // 4. A node SIGKILLed mid-run: the one with the lowest node key (it trims the log); load on the two others.
    const st = (await (await fetch(`${urls[0]}/status`)).json()) as {
      data: { cluster: { members: Array<{ node_id: string; public_key: string }> } };
    };
    const lowest = [...st.data.cluster.members].sort((x, y) => (x.public_key < y.public_key ? -1 : 1))[0]?.node_id ?? 'n2';
    const vi = names.includes(lowest) ? names.indexOf(lowest) : 2;
    const victim = nodes[vi] as BenchNode;
    const others = [0, 1, 2].filter((i) => i !== vi);
    const otherUrls = others.map((i) => urls[i] as string);
    const wD = new HeadWatcher(otherUrls, POLL_MS);
    let killD: Promise<number> | undefined;
    const d = await load(`node ${names[vi]} kill`, otherUrls, KILL_DURATION, rate, {
      everyTick: true,
      trickle: TRICKLE,
      onStart: (t0) => {
        killD = (async () => {
          await sleep(Math.max(0, t0 + KILL_AT * 1000 - performance.now()));
          const tKill = performance.now();
          await kill9(victim.child);
          progress(`  node ${names[vi]} SIGKILLed at ${r1((tKill - t0) / 1000)} s`);
          return tKill;
        })();
      },
    });
    if (!killD) throw new Error('the node was not killed');
    const tKillD = await killD;
    await wD.stop();
    checkCommitted('node kill', d.stats);
    if (d.trickle) checkCommitted('node kill (open loop)', d.trickle);
    await sameHeads('node kill', otherUrls);
    const nodeKill = killResult(
      names[vi] as string,
      d,
      tKillD,
      gapReport(
        others.map((i) => names[i] as string),
        wD,
        d.t0,
        tKillD,
        d.t0 + KILL_DURATION * 1000,
      ),
    );
    progress(`node ${names[vi]} kill: longest commit gap ${nodeKill.maxGapMs} ms (before the kill ${nodeKill.beforeMaxGapMs} ms)`);

    // The cluster goes before the single node runs.
    await Promise.all(nodes.map((n) => terminate(n.child)));
    await e.stop();

    // 5. One node, no cluster, the same generator and connections.
    progress('single node (no cluster)');
    const one = await startNode('single', {}, join(root, 'single'), logDir);
    single = one;
    let singleRate = rate;
    if (WARMUP > 0) {
      const w = await load('single warm-up', [one.ledgerUrl], WARMUP, rate * 2);
      singleRate = Math.max(rate, peakRate(w.stats));
    }
    const headS0 = await headNow(one.ledgerUrl);
    const meterS = (): number[] => [cpuSeconds(one.pid), benchCpu(), machineCpu()];
    const s = await load('single', [one.ledgerUrl], DURATION, singleRate, { meter: meterS });
    const sCpu = meterS().map((x, i) => x - (s.meterStart[i] as number));
    const secsS = (performance.now() - s.t0) / 1000;
    const headS = await headNow(one.ledgerUrl);
    checkCommitted('single', s.stats);
    const singleNode: ClusterResult['single'] = {
      committedBatchesPerSec: s.stats.committedBatchesPerSec,
      committed: s.stats.committed,
      ranOut: s.ranOut,
      http429: s.stats.http429,
      batchesPerBlock: r1(s.stats.committed / Math.max(1, headS.num - headS0.num)),
      submitMs: pair(s.stats.submitLatencyMs),
      commitMs: pair(s.stats.commitLatencyMs),
      cpuUsPerBatch: Math.round(((sCpu[0] ?? 0) * 1e6) / Math.max(1, s.stats.committed)),
      benchCpuUsPerBatch: Math.round(((sCpu[1] ?? 0) * 1e6) / Math.max(1, s.stats.committed)),
      otherCores: foreignCores(sCpu[2] ?? 0, (sCpu[0] ?? 0) + (sCpu[1] ?? 0), secsS),
    };
    await terminate(one.child);
    const applyMean = (cpu.applyUsPerBatch[0] + cpu.applyUsPerBatch[1]) / 2;
    const result: ClusterResult = {
      bench: 'cluster',
      ok: checks.every((x) => x.ok),
      settings: {
        durationS: DURATION,
        connections: CONNECTIONS,
        warmupS: WARMUP,
        clusterWarmupS: CLUSTER_WARMUP,
        cpuBatches: CPU_BATCHES,
        killDurationS: KILL_DURATION,
        killAtS: KILL_AT,
        trickle: TRICKLE,
        sample: SAMPLE,
        poolThreads: POOL_THREADS,
        etcdHeartbeatMs: HEARTBEAT_MS,
        etcdElectionMs: ELECTION_MS,
        pollMs: POLL_MS,
        cores: cpus().length,
        benchCores: availableParallelism(),
        pinCores: PIN_CORES,
      },
      ...(pin ? { pinned: pin.describe() } : {}),
      throughput,
      cpu,
      etcdKill,
      acceptingAfterEtcdRestartMs,
      nodeKill,
      single: singleNode,
      ratios: {
        clusterToSingleThroughput: r2(throughput.committedBatchesPerSec / singleNode.committedBatchesPerSec),
        applyOnlyToSingleCpu: r2(applyMean / singleNode.cpuUsPerBatch),
        ingestToSingleCpu: r2(cpu.ingestUsPerBatch / singleNode.cpuUsPerBatch),
      },
      checks,
      wallS: r1((performance.now() - started) / 1000),
    };
    failed = !result.ok;
    return result;
  } catch (err) {
    failed = true;
    throw err;
  } finally {
    await Promise.all(nodes.map((n) => kill9(n.child)));
    if (single) await kill9(single.child);
    await etcd?.stop();
    await pool?.close();
    if (failed || process.env.KEEP === '1') {
      keepDir(root);
      process.stderr.write(`[cluster] etcd and node logs and data kept in ${root}\n`);
    }
  }
}

/** The compact table (stderr). */
export function table(x: ClusterResult): string {
  const row = (a: string, b: string, c = '', d = ''): string => `  ${a.padEnd(46)}${b.padStart(18)}${c.padStart(14)}${d.padStart(8)}`;
  const t = x.throughput;
  const lat = (p: Pair): string => `${p.p50} / ${p.p99}`;
  const kill = (k: KillResult, what: string): string[] => [
    row(`${what} @${k.killedAtS} s: longest commit gap`, `${k.maxGapMs} ms`, `(${k.beforeMaxGapMs} before)`),
    ...(k.newLeaderMs !== undefined ? [row('  another etcd member leads after', `${k.newLeaderMs} ms`)] : []),
    row('  longest submit of the closed loop', `${k.submitMaxMs} ms`),
    row(
      '  refused POSTs before / after the kill',
      `${k.refusedBeforeKill} / ${k.refusedAfterKill}`,
      k.refusedAfterKill ? `last +${k.lastRefusalAfterKillMs} ms` : '',
    ),
    row('  committed batches/s over the phase', String(k.committedBatchesPerSec)),
  ];
  const lines = [
    `cluster bench: 3 etcd (heartbeat ${x.settings.etcdHeartbeatMs} ms, election ${x.settings.etcdElectionMs} ms) + 3 nodes (pool threads ${x.settings.poolThreads}), ` +
      `closed loop of ${x.settings.connections} connections, ${x.settings.cores} cores`,
    ...(x.pinned
      ? [
          `pinned (PIN_CORES=${x.settings.pinCores}): ${Object.entries(x.pinned)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ')}`,
        ]
      : []),
    row('', 'cluster', 'single', 'ratio'),
    row('warm-up s (not counted)', String(x.settings.clusterWarmupS), String(x.settings.warmupS), ''),
    row(
      'committed batches/s (load on all 3)',
      String(t.committedBatchesPerSec),
      String(x.single.committedBatchesPerSec),
      String(x.ratios.clusterToSingleThroughput),
    ),
    row('  batches per block / 429 answers', `${t.batchesPerBlock} / ${t.http429}`, `${x.single.batchesPerBlock} / ${x.single.http429}`),
    row('submit p50 / p99 ms', lat(t.submitMs), lat(x.single.submitMs)),
    row('commit on the ingesting node p50 / p99 ms', lat(t.commitOnIngestingNodeMs), lat(x.single.commitMs)),
    row(`commit on all 3 p50 / p99 ms (${t.commitOnAllMs.samples} samples)`, lat(t.commitOnAllMs)),
    row(
      'CPU µs/batch 3 nodes / 3 etcd / bench',
      `${t.nodesCpuUsPerBatch} / ${t.etcdCpuUsPerBatch} / ${t.benchCpuUsPerBatch}`,
      `${x.single.cpuUsPerBatch} / - / ${x.single.benchCpuUsPerBatch}`,
    ),
    row(`load on n0 only: committed batches/s`, String(x.cpu.committedBatchesPerSec)),
    row('  batches per block / 429 answers', `${x.cpu.batchesPerBlock} / ${x.cpu.http429}`),
    row('  submit p50 / p99 ms', lat(x.cpu.submitMs)),
    row('  CPU µs/batch ingesting n0', String(x.cpu.ingestUsPerBatch), String(x.single.cpuUsPerBatch), String(x.ratios.ingestToSingleCpu)),
    row('  CPU µs/batch apply-only n1, n2', x.cpu.applyUsPerBatch.join(', '), String(x.single.cpuUsPerBatch), String(x.ratios.applyOnlyToSingleCpu)),
    row('  CPU µs/batch 3 etcd', String(x.cpu.etcdUsPerBatch)),
    ...kill(x.etcdKill, `etcd leader ${x.etcdKill.killed} SIGKILL`),
    row('  every node accepts again after its restart', `${x.acceptingAfterEtcdRestartMs} ms`),
    ...kill(x.nodeKill, `node ${x.nodeKill.killed} SIGKILL`),
    row('cores used by other processes meanwhile', `${t.otherCores} (n0 only ${x.cpu.otherCores})`, String(x.single.otherCores)),
    ...x.checks.map((c) => `  ${c.ok ? 'ok  ' : 'FAIL'} ${c.name}: ${c.detail}`),
    `  ${x.ok ? 'all checks passed' : 'CHECKS FAILED'}; ${x.wallS} s in all`,
  ];
  return `${lines.join('\n')}\n`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runCluster().then(
    (r) => {
      process.stderr.write(table(r));
      if (process.env.REPORT_JSON) writeFileSync(process.env.REPORT_JSON, `${JSON.stringify(r, null, 1)}\n`);
      process.stdout.write(`${JSON.stringify(r)}\n`);
      process.exit(r.ok ? 0 : 1);
    },
    (err: unknown) => {
      process.stderr.write(`cluster: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    },
  );
}
