/**
 * Read benchmark: builds a realistic chain (CHAIN batches of intkey sets), then runs
 * autocannon against GET /state/{address}, GET /batch_statuses?id= and
 * GET /blocks?limit=100, each for DURATION seconds with CONNECTIONS connections, and
 * prints one JSON line with requests/s and latency percentiles per route. The chain is
 * loaded with a block at most every 300 ms, so blocks are large (up to the node's batches
 * per block); the block page line says how large (`pageBytes`, `batchesPerBlock`). Any
 * CAIRN_* variable is passed to the node; BENCH_NODE_DIR runs another checkout's build.
 */
import autocannon from 'autocannon';
import { startBenchNode } from './lib/node.js';
import { Client } from './lib/http.js';
import { generateBatches } from './lib/batches.js';
import { submitAll, waitAll } from './lib/load.js';
import { envInt } from './lib/env.js';

const env = (k: string, d: number): number => envInt(k, d, 1);
const CHAIN = env('CHAIN', 20000);
const DURATION = env('DURATION', 10);
const CONNECTIONS = env('CONNECTIONS', 64);
/** Connections for the block pages: each page of large blocks is tens of MB in flight. */
const PAGE_CONNECTIONS = env('PAGE_CONNECTIONS', 8);

function progress(msg: string): void {
  if (process.env.BENCH_QUIET !== '1') process.stderr.write(`[read] ${msg}\n`);
}

interface RouteResult {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  non2xx: number;
}

async function cannon(url: string, paths: string[], connections = CONNECTIONS): Promise<RouteResult> {
  let i = 0;
  const r = await autocannon({
    url,
    connections,
    duration: DURATION,
    requests: [
      {
        setupRequest: (req) => {
          req.path = paths[i++ % paths.length]!;
          return req;
        },
      },
    ],
  });
  return {
    rps: Math.round((r.requests.total / r.duration) * 10) / 10,
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
  };
}

export async function runRead(nodeEnv: Record<string, string> = {}): Promise<object> {
  progress(`generating and loading a chain of ${CHAIN} batches`);
  const batches = generateBatches({ batches: CHAIN, txnsPerBatch: 1, signers: 8, keyspace: 0, incGap: 0 });
  // Blocks wait this long to fill while the chain loads: large blocks (up to the node's
  // batches per block), as a busy chain has them.
  const node = await startBenchNode({ CAIRN_MIN_BLOCK_INTERVAL_MS: '300', ...nodeEnv });
  const client = new Client(node.ledgerUrl, 64);
  try {
    await submitAll(client, batches, 64);
    const bad = await waitAll(
      client,
      batches.map((b) => b.id),
    );
    if (bad) throw new Error(`${bad} batches did not commit`);
    const pick = (n: number): GenBatch[] => Array.from({ length: n }, (_, k) => batches[(k * 7919) % batches.length]!);
    const sample = pick(1000);
    progress(`state reads for ${DURATION} s`);
    const state = await cannon(
      node.ledgerUrl,
      sample.map((b) => `/state/${b.addresses[0]}`),
    );
    progress(`status reads for ${DURATION} s`);
    const statuses = await cannon(
      node.ledgerUrl,
      sample.map((b) => `/batch_statuses?id=${b.id}`),
    );
    progress(`block pages for ${DURATION} s`);
    const page = await client.request('GET', '/blocks?limit=100');
    const pageBlocks = (JSON.parse(page.body) as { data: Array<{ batches: unknown[] }> }).data;
    const blocks = {
      ...(await cannon(node.ledgerUrl, ['/blocks?limit=100'], PAGE_CONNECTIONS)),
      pageBytes: Buffer.byteLength(page.body),
      pageBlocks: pageBlocks.length,
      batchesPerBlock: Math.round(pageBlocks.reduce((a, b) => a + b.batches.length, 0) / Math.max(1, pageBlocks.length)),
    };
    return {
      bench: 'read',
      chainBatches: CHAIN,
      connections: CONNECTIONS,
      durationSec: DURATION,
      state,
      statuses,
      blocks100: blocks,
      peakRssMiB: Math.round(node.peakRssMiB()),
    };
  } finally {
    client.close();
    await node.stop();
  }
}

type GenBatch = ReturnType<typeof generateBatches>[number];

if (import.meta.url === `file://${process.argv[1]}`) {
  const nodeEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (k.startsWith('CAIRN_') && v) nodeEnv[k] = v;
  runRead(nodeEnv).then(
    (r) => process.stdout.write(`${JSON.stringify(r)}\n`),
    (err: unknown) => {
      process.stderr.write(`${String(err)}\n`);
      process.exit(1);
    },
  );
}
