/**
 * Event delivery to subscribers with regular-expression filters: builds a chain of BLOCKS
 * blocks of TXNS intkey sets each, then SUBSCRIBERS ZeroMQ clients subscribe from genesis
 * (catch-up: every block's events are matched and sent as fast as the node can) with a
 * block-commit filter on block_id (`^[0-9a-f]{128}$`) and two state-delta subscriptions (a
 * one-byte address prefix of their own and `^1cf126[0-9a-f]{64}$`, which every change
 * passes). Measures the time until every subscriber has every block, the event lists
 * delivered per second, the CPU seconds of the HTTP thread (the node's main thread, where
 * matching ran before the event filter thread) and of the whole process per block, and
 * GET /status latency sampled every 20 ms meanwhile. One JSON line.
 *
 * A first subscriber gets every block before the clock starts (warming the node's code and
 * its event filter thread). BENCH_NODE_DIR runs another checkout (an older commit, built or
 * from sources) with this same script, for an A/B.
 */
import { createServer } from 'node:net';
import { startBenchNode } from './lib/node.js';
import { Client, percentile } from './lib/http.js';
import { generateBatches } from './lib/batches.js';
import { submitAll, waitAll } from './lib/load.js';
import { envInt } from './lib/env.js';
import { ZmqClient, pb } from '../test/helpers/zmq-client.js';

const SUBSCRIBERS = envInt('SUBSCRIBERS', 16, 1, 1000);
const BLOCKS = envInt('BLOCKS', 30, 1);
const TXNS = envInt('TXNS', 200, 1, 1000);
const F = pb.EventFilter.FilterType;

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });

function cpu(threads: Record<string, number>, pid: number): { main: number; all: number } {
  let main = 0;
  let all = 0;
  for (const [k, v] of Object.entries(threads)) {
    all += v;
    if (k.endsWith(`#${pid}`)) main = v;
  }
  return { main, all };
}

/** Subscribes from genesis with the bench's filters (`i` picks its address prefix) and waits for every block. */
async function subscribeAll(c: ZmqClient, i: number, head: number): Promise<void> {
  const r = await c.subscribe(
    [
      { eventType: 'sawtooth/block-commit', filters: [{ key: 'block_id', matchString: '^[0-9a-f]{128}$', filterType: F.REGEX_ANY }] },
      {
        eventType: 'sawtooth/state-delta',
        filters: [{ key: 'address', matchString: `^1cf126${(i % 256).toString(16).padStart(2, '0')}`, filterType: F.REGEX_ANY }],
      },
      { eventType: 'sawtooth/state-delta', filters: [{ key: 'address', matchString: '^1cf126[0-9a-f]{64}$', filterType: F.REGEX_ALL }] },
    ],
    ['0000000000000000'],
  );
  if (r.status !== 1) throw new Error(`subscribe answered ${r.status}: ${r.responseMessage}`);
  await c.waitEventLists(head + 1, 600_000);
}

const round = (x: number, d = 3): number => Math.round(x * 10 ** d) / 10 ** d;

export async function runEvents(): Promise<object> {
  const port = await freePort();
  const endpoint = `tcp://127.0.0.1:${port}`;
  const node = await startBenchNode({ CAIRN_COMPONENT_BIND: `127.0.0.1:${port}`, CAIRN_MAX_BATCHES_PER_BLOCK: '1' });
  const http = new Client(node.ledgerUrl, 64);
  const clients: ZmqClient[] = [];
  try {
    const batches = generateBatches({ batches: BLOCKS, txnsPerBatch: TXNS, signers: 4, keyspace: 0, incGap: 0 });
    await submitAll(http, batches, 16);
    const bad = await waitAll(
      http,
      batches.map((b) => b.id),
    );
    if (bad > 0) throw new Error(`${bad} batches not committed`);
    const head = Number(JSON.parse((await http.request('GET', '/blocks?limit=1')).body).data[0].header.block_num);

    // A first subscriber, not timed: the node's code paths (and its event filter thread, if it has one) warm.
    const warm = new ZmqClient(endpoint);
    clients.push(warm);
    await subscribeAll(warm, 255, head);

    let probing = true;
    const latencies: number[] = [];
    const probe = (async (): Promise<void> => {
      while (probing) {
        const t0 = performance.now();
        await http.request('GET', '/status');
        latencies.push(performance.now() - t0);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();

    const timed = Array.from({ length: SUBSCRIBERS }, () => new ZmqClient(endpoint));
    clients.push(...timed);
    const before = cpu(node.threadCpu(), node.pid);
    const t0 = performance.now();
    await Promise.all(timed.map((c, i) => subscribeAll(c, i, head)));
    const ms = performance.now() - t0;
    const after = cpu(node.threadCpu(), node.pid);
    probing = false;
    await probe;
    const lists = timed.reduce((sum, c) => sum + c.eventLists.length, 0);
    const events = timed.reduce((sum, c) => sum + c.eventLists.reduce((s, l) => s + l.length, 0), 0);
    latencies.sort((a, b) => a - b);
    return {
      bench: 'events',
      nodeDir: process.env.BENCH_NODE_DIR ?? '.',
      subscribers: SUBSCRIBERS,
      blocks: head + 1,
      txnsPerBlock: TXNS,
      deliverMs: Math.round(ms),
      eventListsPerSec: Math.round((lists / ms) * 1000),
      eventsPerSec: Math.round((events / ms) * 1000),
      httpThreadCpuMsPerBlock: round(((after.main - before.main) * 1000) / (head + 1), 1),
      processCpuMsPerBlock: round(((after.all - before.all) * 1000) / (head + 1), 1),
      statusSamples: latencies.length,
      statusP50Ms: round(percentile(latencies, 50), 1),
      statusP99Ms: round(percentile(latencies, 99), 1),
      statusMaxMs: round(latencies.at(-1) ?? 0, 1),
    };
  } finally {
    for (const c of clients) c.close();
    http.close();
    await node.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runEvents().then(
    (r) => process.stdout.write(`${JSON.stringify(r)}\n`),
    (err: unknown) => {
      process.stderr.write(`${String(err)}\n`);
      process.exit(1);
    },
  );
}
