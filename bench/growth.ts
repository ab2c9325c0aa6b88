/**
 * Growth benchmark: throughput and Merkle update cost as the chain and the state grow.
 * Submits TOTAL single-transaction intkey batches (each a set of a new key, so the state
 * grows to TOTAL keys) in SEGMENT-sized rounds; each round's batches are signed before its
 * clock starts. Prints one JSON line with the per-round throughput and block build cost,
 * and the slope of the cost per batch against chain length (flat = independent of length).
 *
 * Also per round: the node's anonymous RSS and the bytes it wrote to disk per batch; at the
 * end, the change of the cost per batch over the run relative to its mean (flatness), and
 * the anonymous memory added per key.
 *
 * Env: TOTAL (1000000), SEGMENT (50000), CONNECTIONS (64). Any CAIRN_* variable is passed
 * to the node.
 */
import { startBenchNode } from './lib/node.js';
import { Client } from './lib/http.js';
import { generateBatches } from './lib/batches.js';
import { submitAll, waitAll } from './lib/load.js';
import { fileWriteBytes } from './lib/proc.js';
import { envInt } from './lib/env.js';

const env = (k: string, d: number): number => envInt(k, d, 1);
const TOTAL = env('TOTAL', 1_000_000);
const SEGMENT = env('SEGMENT', 50_000);
const CONNECTIONS = env('CONNECTIONS', 64);

function progress(msg: string): void {
  if (process.env.BENCH_QUIET !== '1') process.stderr.write(`[growth] ${msg}\n`);
}

/** Least-squares slope of y over x. */
function slope(xs: number[], ys: number[]): number {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i]! - mx) * (ys[i]! - my);
    den += (xs[i]! - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

export async function runGrowth(nodeEnv: Record<string, string> = {}): Promise<object> {
  const node = await startBenchNode({ ...nodeEnv, CAIRN_LOG_LEVEL: 'debug' });
  // A client per round: signing a round takes longer than the server keeps idle keep-alive
  // connections open, and reusing one it just closed fails with "socket hang up".
  let client = new Client(node.ledgerUrl, CONNECTIONS);
  const rounds: Array<{
    chainBatches: number;
    batchesPerSec: number;
    usPerBatch: number;
    buildUsPerBatch: number;
    rssMiB: number;
    rssAnonMiB: number;
    diskBytesPerBatch: number;
  }> = [];
  let buildMs = 0;
  let buildBatches = 0;
  // The node logs one debug line per block: "block N: B batches, ... build X ms, write Y ms".
  node.child.stderr!.on('data', (d: Buffer) => {
    for (const m of d.toString().matchAll(/block \d+: (\d+) batches, \d+ invalid, build ([\d.]+) ms/g)) {
      buildBatches += Number(m[1]);
      buildMs += Number(m[2]);
    }
  });
  try {
    for (let done = 0, seg = 0; done < TOTAL; seg++) {
      const n = Math.min(SEGMENT, TOTAL - done);
      const batches = generateBatches({ batches: n, txnsPerBatch: 1, signers: 8, keyspace: 0, incGap: 0, prefix: `s${seg}_` });
      buildMs = 0;
      buildBatches = 0;
      client.close();
      client = new Client(node.ledgerUrl, CONNECTIONS);
      const w0 = fileWriteBytes(node.pid);
      const t0 = performance.now();
      await submitAll(client, batches, CONNECTIONS);
      const bad = await waitAll(
        client,
        batches.map((b) => b.id),
      );
      if (bad) throw new Error(`${bad} batches did not commit`);
      const secs = (performance.now() - t0) / 1000;
      done += n;
      const r = {
        chainBatches: done,
        batchesPerSec: Math.round(n / secs),
        usPerBatch: Math.round((secs * 1e6) / n),
        buildUsPerBatch: buildBatches ? Math.round((buildMs * 1000) / buildBatches) : 0,
        rssMiB: Math.round(node.rssMiB()),
        rssAnonMiB: Math.round(node.rssAnonMiB()),
        diskBytesPerBatch: Math.round((fileWriteBytes(node.pid) - w0) / n),
      };
      rounds.push(r);
      progress(JSON.stringify(r));
    }
    const xs = rounds.map((r) => r.chainBatches / 1e6);
    const us = rounds.map((r) => r.usPerBatch);
    const meanUs = us.reduce((a, b) => a + b, 0) / us.length;
    const first = rounds[0];
    const last = rounds.at(-1);
    return {
      bench: 'growth',
      totalBatches: TOTAL,
      segment: SEGMENT,
      rounds,
      // Microseconds per batch added per million batches of chain: ~0 means flat.
      slopeUsPerBatchPerMillion: Math.round(
        slope(
          xs,
          rounds.map((r) => r.usPerBatch),
        ),
      ),
      slopeBuildUsPerBatchPerMillion: Math.round(
        slope(
          xs,
          rounds.map((r) => r.buildUsPerBatch),
        ),
      ),
      // The fitted change of the cost per batch from the first round to the last, relative to
      // its mean: within ±0.05 is flat to ±5%.
      relativeSlope: Math.round(((slope(xs, us) * ((xs.at(-1) ?? 0) - (xs[0] ?? 0))) / meanUs) * 1000) / 1000,
      // Anonymous memory the node added per key from the first round to the last.
      anonBytesPerKey:
        first && last && last !== first
          ? Math.round(((last.rssAnonMiB - first.rssAnonMiB) * 1024 * 1024) / (last.chainBatches - first.chainBatches))
          : 0,
      firstBatchesPerSec: rounds[0]?.batchesPerSec,
      lastBatchesPerSec: rounds.at(-1)?.batchesPerSec,
      peakRssMiB: Math.round(node.peakRssMiB()),
    };
  } finally {
    client.close();
    await node.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const nodeEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (k.startsWith('CAIRN_') && v) nodeEnv[k] = v;
  runGrowth(nodeEnv).then(
    (r) => process.stdout.write(`${JSON.stringify(r)}\n`),
    (err: unknown) => {
      process.stderr.write(`${String(err)}\n`);
      process.exit(1);
    },
  );
}
