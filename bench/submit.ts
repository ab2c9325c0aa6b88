/**
 * Submit benchmark: generates N pre-signed intkey batches (k transactions each, S signer
 * keys) before the clock starts, submits them over keep-alive HTTP at full speed (or a
 * fixed RATE), waits until every one is committed, and prints one JSON line.
 *
 * Env: BATCHES (20000), TXNS (1), SIGNERS (8), KEYSPACE (0 = every op sets a new key;
 * otherwise ops after the first KEYSPACE sets are incs of earlier keys), CONNECTIONS (32),
 * RATE (0 = full speed, else batches/s; `half` = two runs on fresh nodes: full speed first,
 * then at half of the committed rate it reached, which is the line printed, with the peak
 * in `peakCommittedBatchesPerSec`: the latency figures at half of peak), SAMPLE (1 in 50 batches gets a commit-latency
 * probe), WARMUP (2000 batches submitted and committed before the clock starts, so that
 * JIT compilation and the first blocks are not measured). Any CAIRN_* variable is passed
 * to the node.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { startBenchNode } from './lib/node.js';
import { Client, percentile } from './lib/http.js';
import { RawConnection } from './lib/raw.js';
import { cpuSeconds, dirtiedBytes, fileWriteBytes, ioField } from './lib/proc.js';
import { measureBounds } from './lib/bounds.js';
import { generateBatches } from './lib/batches.js';
import { submitAll, waitAll } from './lib/load.js';
import { envInt } from './lib/env.js';

const N = envInt('BATCHES', 20000, 1);
const K = envInt('TXNS', 1, 1, 1000);
const S = envInt('SIGNERS', 8, 1, 100_000);
const KEYSPACE = envInt('KEYSPACE', 0, 0);
const C = envInt('CONNECTIONS', 32, 1, 4096);
const RATE_MODE = process.env.RATE ?? '0';
if (RATE_MODE !== 'half') envInt('RATE', 0, 0, 1_000_000);
const SAMPLE = envInt('SAMPLE', 50, 1);
const WARMUP = envInt('WARMUP', 2000, 0);

function progress(msg: string): void {
  if (process.env.BENCH_QUIET !== '1') process.stderr.write(`[submit] ${msg}\n`);
}

export interface SubmitResult {
  bench: 'submit';
  batches: number;
  txnsPerBatch: number;
  connections: number;
  rate: number;
  committedBatchesPerSec: number;
  committedTxnsPerSec: number;
  submitP50Ms: number;
  submitP99Ms: number;
  commitP50Ms: number;
  commitP99Ms: number;
  maxResponseMs: number;
  http429: number;
  invalid: number;
  peakRssMiB: number;
  rssAnonMiB: number;
  signatureBound: number;
  signatureBoundFraction: number;
  merkleLeafBound: number;
  merkleBoundFraction: number;
  verifiesPerSecPerCore: number;
  nodeHashesPerSec: number;
  cores: number;
  /** Bytes the node process gave to write calls for files over the measured run, per committed batch (bench/lib/proc.ts). */
  diskBytesPerBatch: number;
  /** /proc/<pid>/io write_bytes per committed batch: several times the bytes written on this kernel (bench/lib/proc.ts); kept to compare with older runs. */
  dirtiedBytesPerBatch: number;
  /** CPU time of the node process (all threads, user + system) over the measured run, per committed batch: steadier than throughput on a busy machine. */
  nodeCpuUsPerBatch: number;
  /** Growth of the data directory's LMDB files (ledger.mdb, pending.mdb) over the measured run, per committed batch. */
  fileGrowthBytesPerBatch: number;
  /** The part of it that is pending.mdb: batches held until their block is durable (its pages are reused once it stops growing). */
  pendingFileGrowthBytesPerBatch: number;
}

/** Total size of the LMDB data files in a data directory. */
function dataFileBytes(dir: string, files = ['ledger.mdb', 'pending.mdb']): number {
  let n = 0;
  for (const f of files) {
    try {
      n += statSync(join(dir, f)).size;
    } catch {
      // not there (yet)
    }
  }
  return n;
}

/** write_bytes per thread name (BENCH_THREADS=1: where the bytes come from). */
function threadWrites(pid: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
    const w = ioField(`/proc/${pid}/task/${tid}/io`);
    if (w > 0) out[`${name}#${tid}`] = w;
  }
  return out;
}

export async function runSubmit(nodeEnv: Record<string, string> = {}, rate = RATE_MODE === 'half' ? 0 : Number(RATE_MODE)): Promise<SubmitResult> {
  progress(`generating ${N} batches × ${K} txns`);
  const batches = generateBatches({ batches: N, txnsPerBatch: K, signers: S, keyspace: KEYSPACE, incGap: 4 * C * K });
  const bounds = measureBounds(K);
  const node = await startBenchNode(nodeEnv);
  const probe = new Client(node.ledgerUrl, 256);
  try {
    if (WARMUP > 0) {
      progress(`warming up with ${WARMUP} batches`);
      const warm = generateBatches({ batches: WARMUP, txnsPerBatch: K, signers: S, keyspace: 0, incGap: 0, prefix: 'warm' });
      await submitAll(probe, warm, Math.min(C, 64));
      await waitAll(
        probe,
        warm.map((b) => b.id),
      );
    }
    const submitLat: number[] = [];
    const commitLat: number[] = [];
    const probes: Array<Promise<void>> = [];
    let maxResponse = 0;
    let n429 = 0;
    let next = 0;
    const dirtied0 = dirtiedBytes(node.pid);
    const written0 = fileWriteBytes(node.pid);
    const files0 = dataFileBytes(node.dataDir);
    const pending0 = dataFileBytes(node.dataDir, ['pending.mdb']);
    const cpu0 = cpuSeconds(node.pid);
    const t0 = performance.now();
    const interval = rate > 0 ? 1000 / rate : 0;
    progress(`submitting over ${C} connections${rate ? ` at ${rate}/s` : ''}`);
    const u = new URL(node.ledgerUrl);
    const hostHeader = `${u.hostname}:${u.port}`;
    const requests = batches.map((b) => RawConnection.request(hostHeader, 'POST', '/batches', b.body));
    const worker = async (): Promise<void> => {
      const conn = new RawConnection(u.hostname, Number(u.port));
      try {
        await work(conn);
      } finally {
        conn.close();
      }
    };
    const work = async (conn: RawConnection): Promise<void> => {
      for (;;) {
        const i = next++;
        if (i >= batches.length) return;
        if (interval) {
          const due = t0 + i * interval;
          const wait = due - performance.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        }
        const b = batches[i]!;
        for (;;) {
          const s = performance.now();
          const r = await conn.send(requests[i]!);
          const dt = performance.now() - s;
          if (dt > maxResponse) maxResponse = dt;
          if (r.status === 202) {
            submitLat.push(dt);
            if (i % SAMPLE === 0) {
              probes.push(
                probe.request('GET', `/batch_statuses?id=${b.id}&wait=60`).then(() => {
                  commitLat.push(performance.now() - s);
                }),
              );
            }
            break;
          }
          if (r.status === 429) {
            n429++;
            await new Promise((res) => setTimeout(res, 2));
            continue;
          }
          throw new Error(`submit failed: ${r.status} ${r.body}`);
        }
      }
    };
    await Promise.all(Array.from({ length: C }, () => worker()));
    const tSubmitted = performance.now();
    progress(`submitted in ${((tSubmitted - t0) / 1000).toFixed(1)} s, waiting for commits`);
    const submitOnly = process.env.BENCH_SUBMIT_ONLY === '1';
    if (submitOnly) probes.length = 0;
    const invalid = submitOnly
      ? 0
      : await waitAll(
          probe,
          batches.map((b) => b.id),
        );
    const tEnd = performance.now();
    if (!submitOnly && invalid >= N) throw new Error(`no batch was committed: all ${N} were invalid`);
    // Page cache write-back can lag the commits by a few seconds: sync the data directory's
    // file system before reading the counter so the figure holds what the run wrote.
    spawnSync('sync', ['-f', node.dataDir]);
    const cpuUsed = cpuSeconds(node.pid) - cpu0;
    const dirtied = dirtiedBytes(node.pid) - dirtied0;
    const written = fileWriteBytes(node.pid) - written0;
    const grown = dataFileBytes(node.dataDir) - files0;
    const pendingGrown = dataFileBytes(node.dataDir, ['pending.mdb']) - pending0;
    if (process.env.BENCH_THREADS === '1') progress(`bytes written by thread since start: ${JSON.stringify(threadWrites(node.pid))}`);
    await Promise.all(probes);
    const secs = (tEnd - t0) / 1000;
    if (process.env.BENCH_THREADS === '1') {
      progress(
        `node threads cpu s: ${JSON.stringify(node.threadCpu())}; bench process cpu s: ${(process.cpuUsage().user + process.cpuUsage().system) / 1e6}; wall ${secs.toFixed(1)} s`,
      );
    }
    submitLat.sort((a, b) => a - b);
    commitLat.sort((a, b) => a - b);
    const bps = N / secs;
    const leafBound = bounds.merkleLeafBound;
    const r2 = (x: number): number => Math.round(x * 100) / 100;
    return {
      bench: 'submit',
      batches: N,
      txnsPerBatch: K,
      connections: C,
      rate,
      committedBatchesPerSec: Math.round(bps),
      committedTxnsPerSec: Math.round(bps * K),
      submitP50Ms: r2(percentile(submitLat, 50)),
      submitP99Ms: r2(percentile(submitLat, 99)),
      commitP50Ms: r2(percentile(commitLat, 50)),
      commitP99Ms: r2(percentile(commitLat, 99)),
      maxResponseMs: r2(maxResponse),
      http429: n429,
      invalid,
      peakRssMiB: Math.round(node.peakRssMiB()),
      rssAnonMiB: Math.round(node.rssAnonMiB()),
      signatureBound: bounds.signatureBound,
      signatureBoundFraction: r2(bps / bounds.signatureBound),
      merkleLeafBound: leafBound,
      merkleBoundFraction: r2((bps * K) / leafBound),
      verifiesPerSecPerCore: bounds.verifiesPerSecPerCore,
      nodeHashesPerSec: bounds.nodeHashesPerSec,
      cores: bounds.cores,
      nodeCpuUsPerBatch: Math.round((cpuUsed * 1e6) / N),
      diskBytesPerBatch: Math.round(written / N),
      dirtiedBytesPerBatch: Math.round(dirtied / N),
      fileGrowthBytesPerBatch: Math.round(grown / N),
      pendingFileGrowthBytesPerBatch: Math.round(pendingGrown / N),
    };
  } finally {
    probe.close();
    await node.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const nodeEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (k.startsWith('CAIRN_') && v) nodeEnv[k] = v;
  const run = async (): Promise<object> => {
    if (RATE_MODE !== 'half') return runSubmit(nodeEnv);
    const peak = await runSubmit(nodeEnv, 0);
    progress(`peak ${peak.committedBatchesPerSec} batches/s; again at half of it`);
    const half = await runSubmit(nodeEnv, Math.max(1, Math.round(peak.committedBatchesPerSec / 2)));
    return {
      ...half,
      rateMode: 'half',
      peakCommittedBatchesPerSec: peak.committedBatchesPerSec,
      peakSignatureBoundFraction: peak.signatureBoundFraction,
    };
  };
  run().then(
    (r) => process.stdout.write(`${JSON.stringify(r)}\n`),
    (err: unknown) => {
      process.stderr.write(`submit: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
