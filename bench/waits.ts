/**
 * `GET /status` while many batch-status waits are held: a node is started, a few batches
 * that cannot commit (each depends on a transaction that does not exist, so it stays
 * PENDING) are submitted, and then
 * - WAITS=rest: COUNT long-polls `GET /batch_statuses?id=…&wait=…`, one connection each;
 * - WAITS=zmq: COUNT `ClientBatchStatusRequest`s with `wait` from one ZeroMQ socket on the
 *   component endpoint (what upstream's REST API process sends);
 * - WAITS=none: nothing held (the baseline);
 * are held for them while a modest batch load commits (RATE batches/s of one intkey
 * transaction). Meanwhile `GET /status` is asked every 20 ms (on time, whether or not the
 * ones before were answered, from a thread of its own) for SECONDS; its latencies give
 * p50/p99/max. One JSON line, about SECONDS + 10 s.
 * `BENCH_NODE_DIR` runs another checkout's node (an interleaved before/after).
 *
 *   npx tsx bench/waits.ts                     # WAITS=rest COUNT=1000
 *   WAITS=zmq COUNT=20000 npx tsx bench/waits.ts
 */
import http from 'node:http';
import net from 'node:net';
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { Dealer } from 'zeromq';
import { startBenchNode } from './lib/node.js';
import { envInt } from './lib/env.js';
import { Signer, randomPrivateKey } from '../src/crypto/secp256k1.js';
import { buildBatch, buildBatchList, buildTransaction } from '../src/ledger/build.js';
import { intkeyAddress, intkeyPayload } from '../src/families/intkey.js';

const require = createRequire(import.meta.url);
// biome-ignore lint/suspicious/noExplicitAny: the sawtooth-sdk package's generated protobuf module has no types
const pb: any = require('sawtooth-sdk/protobuf');

const MODE = process.env.WAITS ?? 'rest';
const COUNT = envInt('COUNT', MODE === 'zmq' ? 20_000 : 1000, 0);
const SECONDS = envInt('SECONDS', 20, 1, 600);
const RATE = envInt('RATE', 20, 0, 1000);
/** Batches that stay pending, the waits spread over them. */
const STUCK = envInt('STUCK', 8, 1, 1000);
/** Seconds each wait asks for (`wait`, `timeout`). */
const WAIT_S = envInt('WAIT_S', 30, 1, 300);
/** Seconds until the pending batches become INVALID, waking their waits (CAIRN_DEPENDENCY_WAIT). */
const DEPENDENCY_WAIT = envInt('DEPENDENCY_WAIT', 10, 1, 3600);

/** The sampler thread: GET `url` every `periodMs` until told to stop, then posts the latencies (ms) of the 200s and the count of the rest. */
const SAMPLER = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
// Idle sockets are dropped well before uWS's 10-s idle close, which a reuse could meet.
const agent = new http.Agent({ keepAlive: true, maxSockets: 256, timeout: 4000 });
const lat = [];
let errors = 0;
const begin = performance.now();
let stop = false;
const asked = [];
parentPort.on('message', () => (stop = true));
const get = () =>
  new Promise((resolve) => {
    const a = performance.now();
    const req = http.get(workerData.url, { agent }, (res) => {
      res.resume();
      res.on('end', () => {
        if (res.statusCode === 200) lat.push([performance.now() - a, a - begin]);
        else errors++;
        resolve();
      });
    });
    req.on('error', () => {
      errors++;
      resolve();
    });
  });
(async () => {
  for (let i = 0; !stop; i++) {
    const wait = begin + i * workerData.periodMs - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    asked.push(get());
  }
  await Promise.all(asked);
  agent.destroy();
  parentPort.postMessage({ lat, errors });
})();
`;

/** A sample slower than this (ms) is slow: the bound of the REST hardening. */
const SLOW_MS = 500;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

function intkeyBatchBody(signer: Signer, name: string, dependencies: string[] = []): { id: string; body: Buffer } {
  const address = intkeyAddress(name);
  const txn = buildTransaction(signer, {
    familyName: 'intkey',
    familyVersion: '1.0',
    inputs: [address],
    outputs: [address],
    payload: intkeyPayload('set', name, 1),
    dependencies,
  });
  const b = buildBatch(signer, [txn]);
  return { id: b.id, body: Buffer.from(buildBatchList([b])) };
}

function request(
  agent: http.Agent,
  url: string,
  method: string,
  path: string,
  body?: Buffer,
  type = 'application/octet-stream',
): Promise<{ status: number; text: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: u.hostname, port: u.port, method, path, agent, headers: body ? { 'content-type': type, 'content-length': body.length } : {} },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const pct = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
const ms = (x: number): number => Math.round(x * 10) / 10;

export async function runWaits(): Promise<object> {
  const componentPort = MODE === 'zmq' ? await freePort() : 0;
  const node = await startBenchNode({
    CAIRN_DEPENDENCY_WAIT: String(DEPENDENCY_WAIT),
    ...(MODE === 'zmq' ? { CAIRN_COMPONENT_BIND: `127.0.0.1:${componentPort}` } : {}),
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const held: Array<() => void> = [];
  try {
    const signer = new Signer(randomPrivateKey());
    // Pre-signed, before any clock starts.
    const missing = randomBytes(64).toString('hex');
    const stuck = Array.from({ length: STUCK }, (_, i) => intkeyBatchBody(signer, `stuck${i}`, [missing]));
    const stuckId = (i: number): string => (stuck[i % STUCK] as { id: string }).id;
    const load = Array.from({ length: Math.ceil(RATE * (SECONDS + 5)) }, (_, i) => intkeyBatchBody(signer, `l${i}`));
    const requests =
      MODE === 'zmq'
        ? Array.from({ length: COUNT }, (_, i) => {
            const content = pb.ClientBatchStatusRequest.encode({ batchIds: [stuckId(i)], wait: true, timeout: WAIT_S }).finish();
            return pb.Message.encode({
              messageType: pb.Message.MessageType.CLIENT_BATCH_STATUS_REQUEST,
              correlationId: String(i),
              content,
            }).finish() as Uint8Array;
          })
        : [];

    let stop = false;
    // GET /status every 20 ms from the start to the end, each on time whether or not the
    // ones before were answered (a stall shows in every request it holds, not in one), from
    // a thread of its own: this thread's work (a thousand connections opened, twenty
    // thousand messages sent) would otherwise delay the samples and count as the node's.
    const sampler = new Worker(SAMPLER, { eval: true, workerData: { url: `${node.ledgerUrl}/status`, periodMs: 20 } });
    const sampled = new Promise<{ lat: Array<[number, number]>; errors: number }>((resolve, reject) => {
      sampler.once('message', resolve);
      sampler.once('error', reject);
    });
    // The modest load, from the start.
    let committed = 0;
    const loader = (async () => {
      if (RATE === 0) return;
      const loadAgent = new http.Agent({ keepAlive: true, maxSockets: 2 });
      const ids: string[] = [];
      const begin = performance.now();
      for (const [i, b] of load.entries()) {
        if (stop) break;
        const wait = begin + (i * 1000) / RATE - performance.now();
        if (wait > 0) await sleep(wait);
        ids.push(b.id);
        void request(loadAgent, node.ledgerUrl, 'POST', '/batches', b.body).catch(() => undefined);
      }
      for (let i = 0; i < ids.length; i += 100) {
        const r = await request(
          loadAgent,
          node.ledgerUrl,
          'POST',
          '/batch_statuses?wait=10',
          Buffer.from(JSON.stringify(ids.slice(i, i + 100))),
          'application/json',
        );
        const data = (JSON.parse(r.text) as { data?: Array<{ status: string }> }).data;
        if (!data) throw new Error(`POST /batch_statuses answered ${r.status} ${r.text.slice(0, 200)}`);
        committed += data.filter((x) => x.status === 'COMMITTED').length;
      }
      loadAgent.destroy();
    })();
    const t0 = performance.now();
    await sleep(1000);
    const tStuck = performance.now() - t0;

    // The batches the waits wait for: PENDING until the dependency wait makes them INVALID
    // (every wait for them is then woken at once), unless the waits time out first.
    for (const b of stuck) {
      const r = await request(agent, node.ledgerUrl, 'POST', '/batches', b.body);
      if (r.status !== 202) throw new Error(`a stuck batch was refused: ${r.status} ${r.text}`);
    }
    let answered = 0;
    let refused = 0;
    const th = performance.now();
    if (MODE === 'rest') {
      const u = new URL(node.ledgerUrl);
      await Promise.all(
        Array.from(
          { length: COUNT },
          (_, i) =>
            new Promise<void>((resolve) => {
              const sock = net.connect(Number(u.port), u.hostname, () => {
                sock.write(`GET /batch_statuses?id=${stuckId(i)}&wait=${WAIT_S} HTTP/1.1\r\nHost: x\r\n\r\n`);
                resolve();
              });
              sock.on('data', (d) => {
                answered++;
                if (!d.toString('latin1').startsWith('HTTP/1.1 200')) refused++;
              });
              sock.on('error', () => resolve());
              held.push(() => sock.destroy());
            }),
        ),
      );
    } else if (MODE === 'zmq') {
      const sock = new Dealer({ linger: 0, sendHighWaterMark: 0, receiveHighWaterMark: 0 });
      sock.connect(`tcp://127.0.0.1:${componentPort}`);
      held.push(() => sock.close());
      void (async () => {
        try {
          for await (const [frame] of sock) {
            if (!frame) continue;
            answered++;
            const m = pb.Message.decode(frame);
            if (m.messageType !== pb.Message.MessageType.CLIENT_BATCH_STATUS_RESPONSE || pb.ClientBatchStatusResponse.decode(m.content).status !== 1)
              refused++;
          }
        } catch {
          // closed
        }
      })();
      for (const r of requests) await sock.send(r);
    }
    const holdMs = performance.now() - th;
    const heldAtS = Math.round((performance.now() - t0) / 100) / 10;
    await sleep(Math.max(0, SECONDS * 1000 - (performance.now() - t0)));
    stop = true;
    sampler.postMessage('stop');
    const [{ lat: samples, errors: statusErrors }] = await Promise.all([sampled, loader]);
    await sampler.terminate();
    const lat = samples.map(([l]) => l).sort((x, y) => x - y);
    // When the slow samples were asked (s from the start), in whole seconds: which phase stalled.
    const slowAt = [...new Set(samples.filter(([l]) => l > SLOW_MS).map(([, at]) => Math.floor(at / 1000)))];
    return {
      bench: 'waits',
      mode: MODE,
      waits: MODE === 'none' ? 0 : COUNT,
      waitS: WAIT_S,
      dependencyWaitS: DEPENDENCY_WAIT,
      stuckAtS: Math.round(tStuck / 100) / 10,
      holdMs: Math.round(holdMs),
      heldAtS,
      waitsAnswered: answered,
      waitsRefused: refused,
      loadRate: RATE,
      loadCommitted: committed,
      samples: lat.length,
      statusErrors,
      statusP50Ms: ms(pct(lat, 50)),
      statusP99Ms: ms(pct(lat, 99)),
      statusMaxMs: ms(lat[lat.length - 1] ?? Number.NaN),
      slowSecond: slowAt,
      rssMiB: Math.round(node.rssMiB()),
      node: process.env.BENCH_NODE_DIR ?? process.cwd(),
    };
  } finally {
    for (const h of held) h();
    agent.destroy();
    await node.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runWaits().then(
    (r) => {
      process.stdout.write(`${JSON.stringify(r)}\n`);
      process.exit(0);
    },
    (err: unknown) => {
      process.stderr.write(`${String(err)}\n`);
      process.exit(1);
    },
  );
}
