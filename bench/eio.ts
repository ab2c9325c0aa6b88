/**
 * Recovery from one transient write error, run after run: a node under submit load meets
 * exactly one failed write on its ledger file (test/helpers/fault-shim.c, an LD_PRELOAD
 * library: `EIO ledger.mdb count=1 call=pwrite skip=<random>`, the next write after a random
 * number of them fails once, as a device that fails once would), and the bench measures how
 * long the node stays read-only: from the `alarm raised` line to the `alarm cleared` line, by
 * the node's own clock (its JSON log). Each run then checks that a batch submitted after the
 * recovery commits, that every acknowledged batch committed, and counts the committer's
 * stops (`committer stopped` lines): one per run is the injected error; a second is an error
 * taken for a new one.
 *
 * `node --import tsx bench/eio.ts` (needs `cc` to build the shim; runs the node from the build,
 * dist/, when there is one, as the other benches do: `npm run build` first, BENCH_FROM_SOURCE=1
 * for the sources, BENCH_NODE_DIR=<checkout> for another checkout's build, and
 * BENCH_NODE_DIRS=<a>,<b> for two or more in turn, each run's fault position the same for
 * each: A, B, A, B, one summary line each). RUNS (20 a checkout),
 * LOAD_MS (2500: the load's length), FAULT_AT_MS (800: when the rule is set), CALL (pwrite),
 * LIMIT_MS (15000: a run still read-only this long after the load ends counts as not
 * recovered), SEED, EIO_LOG_DIR (a folder: the node's log of each run read-only over 2 s or
 * stopped twice is written there, named by run and process id). The whole bench stops after
 * RUNS × 30 s a checkout at the latest. Prints one line a run on stderr and one JSON line a
 * checkout on stdout: min, median and max read-only time (ms), runs over 2 s, runs not
 * recovered, runs with a second stop, acknowledged batches not confirmed COMMITTED afterwards
 * (a node that died confirms none: run `cairn check` or restart it to see them commit), nodes
 * that died.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { logMessage } from '../test/helpers/child.js';
import { faultShim } from '../test/helpers/fault-shim.js';
import { generateBatches } from './lib/batches.js';
import { Client } from './lib/http.js';
import { envInt } from './lib/env.js';
import { startBenchNode, type BenchNode } from './lib/node.js';

const RUNS = envInt('RUNS', 20, 1);
const LOAD_MS = envInt('LOAD_MS', 2500, 100);
const FAULT_AT_MS = envInt('FAULT_AT_MS', 800, 0);
const LIMIT_MS = envInt('LIMIT_MS', 15_000, 1000);
const CALL = process.env.CALL ?? 'pwrite';
/** Concurrent submitters, each posting one batch a request. */
const CONNECTIONS = 8;
/** Matching writes let pass before the one that fails, drawn in [0, SKIP_SPAN): the error lands at a random point of a commit. */
const SKIP_SPAN = 24;

let seed = envInt('SEED', Date.now() % 100_000, 0);
const random = (): number => {
  // mulberry32: a seeded draw, so a run's fault position can be repeated.
  seed = (seed + 0x6d2b79f5) | 0;
  let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
  return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
};

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The node's time (ms) of the first log line whose message matches `re`, after `after`. */
function lineTime(node: BenchNode, re: RegExp, after = 0): number | null {
  for (const line of node.log().split('\n')) {
    if (!line.startsWith('{') || !re.test(logMessage(line))) continue;
    const t = Date.parse(String((JSON.parse(line) as { time?: unknown }).time));
    if (t >= after) return t;
  }
  return null;
}

const count = (node: BenchNode, re: RegExp): number =>
  node
    .log()
    .split('\n')
    .filter((l) => re.test(logMessage(l))).length;

interface RunResult {
  skip: number;
  fired: number;
  /** Read-only time (ms), null when it never cleared within the limit. */
  recoveryMs: number | null;
  /** Time from the load's end to the alarm's clearing (ms, 0 when it cleared during the load). */
  afterLoadMs: number | null;
  stops: number;
  /** How the node ended before it was told to stop (a signal: it crashed), or null while it ran. */
  died: string | null;
  acked: number;
  lost: number;
  probeCommitted: boolean;
}

async function statuses(client: Client, ids: string[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (let i = 0; i < ids.length; i += 500) {
    const r = await client.request('POST', '/batch_statuses?wait=20', Buffer.from(JSON.stringify(ids.slice(i, i + 500))), 'application/json');
    const data = r.status === 200 ? (JSON.parse(r.body) as { data: Array<{ status: string }> }).data : [];
    // Not answered (the node still read-only, say): counted as not committed.
    if (r.status !== 200) out[`HTTP ${r.status}`] = (out[`HTTP ${r.status}`] ?? 0) + Math.min(500, ids.length - i);
    for (const s of data) out[s.status] = (out[s.status] ?? 0) + 1;
  }
  return out;
}

async function oneRun(n: number, skip: number, shim: Exclude<ReturnType<typeof faultShim>, string>, deadline: number): Promise<RunResult> {
  shim.set('');
  const firedBefore = shim.fired().length;
  const fired = (): number => shim.fired().length - firedBefore;
  const node = await startBenchNode({ ...shim.env, CAIRN_LOG_FORMAT: 'json', CAIRN_POOL_THREADS: '1' });
  try {
    const client = new Client(node.ledgerUrl, CONNECTIONS + 2);
    const batches = generateBatches({ batches: 3000, txnsPerBatch: 1, signers: 4, keyspace: 0, incGap: 0, prefix: `r${n}` });
    const acked: string[] = [];
    let next = 0;
    const loadStart = Date.now();
    const loadEnd = loadStart + LOAD_MS;
    const faultTimer = setTimeout(() => shim.set(`EIO ledger.mdb count=1 call=${CALL} skip=${skip}`), FAULT_AT_MS);
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (Date.now() < loadEnd && next < batches.length) {
          const b = batches[next++];
          if (!b) break;
          const r = await client.request('POST', '/batches', b.body).catch(() => ({ status: 0 }));
          if (r.status === 202) acked.push(b.id);
          // Refused while read-only: the submitter backs off as a client told Retry-After would, a little.
          else if (r.status === 503) await sleep(20);
        }
      }),
    );
    clearTimeout(faultTimer);
    const loadEndedAt = Date.now();
    // Read-only until the alarm clears (or the limit).
    const limit = Math.min(deadline, loadEndedAt + LIMIT_MS);
    let raised = lineTime(node, /^alarm raised: /);
    let cleared = raised === null ? null : lineTime(node, /^alarm cleared: /, raised);
    while (Date.now() < limit && (fired() === 0 || raised === null || cleared === null)) {
      await sleep(20);
      raised = lineTime(node, /^alarm raised: /);
      cleared = raised === null ? null : lineTime(node, /^alarm cleared: /, raised);
      // The fault never met a write (the load ended first): nothing to measure.
      if (fired() === 0 && Date.now() > loadEndedAt + 2000) break;
    }
    const met = fired();
    shim.set('');
    const recoveryMs = raised !== null && cleared !== null ? cleared - raised : null;
    const afterLoadMs = cleared !== null ? Math.max(0, cleared - loadEndedAt) : null;
    // After the recovery, a new batch commits, and so did every acknowledged one.
    let probeCommitted = false;
    let lost = 0;
    if (cleared !== null || raised === null) {
      try {
        const probe = batches[batches.length - 1];
        if (probe) {
          const r = await client.request('POST', '/batches', probe.body);
          if (r.status === 202) probeCommitted = (await statuses(client, [probe.id])).COMMITTED === 1;
        }
        const s = await statuses(client, acked);
        lost = acked.length - (s.COMMITTED ?? 0);
      } catch {
        lost = acked.length; // the node no longer answers (it died): none is known committed
      }
    }
    client.agent.destroy();
    const stops = count(node, /^committer stopped /);
    // EIO_LOG_DIR: the node's log of each run that was slow, stuck or stopped twice, for a look.
    const logDir = process.env.EIO_LOG_DIR;
    if (logDir && (recoveryMs === null || recoveryMs > 2000 || stops > 1)) writeFileSync(join(logDir, `eio-run-${n}-${node.pid}.log`), node.log());
    const { exitCode, signalCode } = node.child;
    const died = signalCode ?? (exitCode !== null ? `exit ${exitCode}` : null);
    return { skip, fired: met, recoveryMs, afterLoadMs, stops, died, acked: acked.length, lost, probeCommitted };
  } finally {
    await node.stop();
  }
}

const shim = faultShim();
if (typeof shim === 'string') {
  process.stderr.write(`[eio] skipped: ${shim}\n`);
  process.exit(0);
}
/** The checkouts to measure, in turn on each run (BENCH_NODE_DIRS, comma-separated; this one by default). */
const dirs = (process.env.BENCH_NODE_DIRS ?? '').split(',').filter(Boolean);
const sides = dirs.length ? dirs : [process.env.BENCH_NODE_DIR ?? ''];
process.stderr.write(`[eio] seed ${seed}, ${RUNS} runs, load ${LOAD_MS} ms, fault at ${FAULT_AT_MS} ms (${CALL})\n`);
const deadline = Date.now() + RUNS * sides.length * 30_000;
const results: RunResult[][] = sides.map(() => []);
for (let i = 0; i < RUNS && Date.now() < deadline; i++) {
  // One fault position a run, the same for every checkout: A, B, A, B on the same draws.
  const skip = Math.floor(random() * SKIP_SPAN);
  for (const [k, dir] of sides.entries()) {
    if (dir) process.env.BENCH_NODE_DIR = dir;
    const r = await oneRun(i + 1, skip, shim, deadline);
    results[k]?.push(r);
    process.stderr.write(
      `[eio] ${dir || '.'} run ${i + 1}: skip ${r.skip}, fired ${r.fired}, read-only ${r.recoveryMs ?? `>${LIMIT_MS}`} ms, ` +
        `cleared ${r.afterLoadMs ?? '-'} ms after the load, ${r.stops} committer stop(s), ${r.acked} acked, ${r.lost} unconfirmed, ` +
        `probe ${r.probeCommitted ? 'committed' : 'NOT committed'}${r.died ? `, NODE DIED (${r.died})` : ''}\n`,
    );
  }
}

function summary(rs: RunResult[]): Record<string, unknown> {
  const measured = rs.filter((r) => r.fired > 0);
  const times = measured.map((r) => r.recoveryMs ?? Number.POSITIVE_INFINITY).sort((a, b) => a - b);
  const median = times.length ? ((times[Math.floor((times.length - 1) / 2)] ?? 0) + (times[Math.ceil((times.length - 1) / 2)] ?? 0)) / 2 : null;
  const shown = (x: number | null | undefined): number | string | null =>
    x === undefined || x === null ? null : Number.isFinite(x) ? x : `>${LIMIT_MS}`;
  return {
    runs: rs.length,
    faultMet: measured.length,
    recoveryMs: { min: shown(times[0]), median: shown(median), max: shown(times.at(-1)) },
    over2s: times.filter((x) => x > 2000).length,
    notRecovered: measured.filter((r) => r.recoveryMs === null).length,
    secondStop: measured.filter((r) => r.stops > 1).length,
    unconfirmed: rs.reduce((n, r) => n + r.lost, 0),
    probeNotCommitted: rs.filter((r) => !r.probeCommitted).length,
    died: rs.filter((r) => r.died !== null).length,
  };
}
for (const [k, dir] of sides.entries()) process.stdout.write(`${JSON.stringify({ node: dir || '.', ...summary(results[k] ?? []) })}\n`);
