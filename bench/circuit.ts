/**
 * Circuits on three nodes on loopback, one JSON line:
 *
 * - agreement: for each of CIRCUITS circuits, the time from POST /admin/submit of the
 *   create on alpha to CircuitReady on all three nodes (beta and gamma vote as soon as
 *   their ProposalSubmitted arrives); the median.
 * - state service (`scabbard*` fields; SCABBARD_BATCHES=0 leaves it out): on the first
 *   circuit, after the one-step Sabre setup, SCABBARD_BATCHES single-transaction Sabre
 *   intkey batches, signed before the clock starts, are posted to /scabbard/…/batches over
 *   SCABBARD_CONNECTIONS keep-alive connections spread over the three members (a 429 is
 *   retried after 2 ms). SCABBARD_WARMUP batches go first, outside the clock: three fresh
 *   node processes on two cores keep V8's optimizing compiler busy for seconds (a profile of
 *   a 600-batch warm-up showed its threads at ~15% of a core per node through a 6 s run),
 *   so the defaults (3,000 then 12,000) measure the warm service, as a node runs for hours. Committed batches/s is counted until the coordinator reports every
 *   batch Committed; submit-to-commit p50/p99 comes from a long-polled status of one batch
 *   in SCABBARD_SAMPLE, measured from its first POST. Afterwards every batch is checked
 *   Committed on all three and their state roots equal.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';
import { Signer, randomPrivateKey } from '../src/crypto/secp256k1.js';
import { makeCylinderJwt } from '../src/auth/cylinder.js';
import { createPayload, votePayload, type CircuitSpec } from '../src/circuits/payloads.js';
import { buildBatch, buildBatchList } from '../src/ledger/build.js';
import { intkeyAddress, intkeyPayload } from '../src/families/intkey.js';
import { executeContractTxn } from '../src/scabbard/payloads.js';
import { sabreSetup } from '../src/cli/sabre-setup.js';
import { startBenchNode, type BenchNode } from './lib/node.js';
import { percentile } from './lib/http.js';
import { RawConnection } from './lib/raw.js';
import { envInt } from './lib/env.js';

const CIRCUITS = envInt('CIRCUITS', 20, 1);
const SCABBARD_BATCHES = envInt('SCABBARD_BATCHES', 12000, 1);
const SCABBARD_WARMUP = envInt('SCABBARD_WARMUP', 3000, 0);
const SCABBARD_CONNECTIONS = envInt('SCABBARD_CONNECTIONS', 32, 1);
const SCABBARD_SAMPLE = envInt('SCABBARD_SAMPLE', 20, 1);

function progress(msg: string): void {
  if (process.env.BENCH_QUIET !== '1') process.stderr.write(`[circuit] ${msg}\n`);
}
const IDS = ['alpha', 'beta', 'gamma'];

interface Member {
  id: string;
  node: BenchNode;
  admin: Signer;
  auth: string;
  endpoint: string;
}

async function post(m: Member, path: string, body: Uint8Array | string, json = false): Promise<number> {
  const res = await fetch(m.node.nodeUrl + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${m.auth}`, 'content-type': json ? 'application/json' : 'application/octet-stream' },
    body: typeof body === 'string' ? body : Buffer.from(body),
  });
  await res.text();
  return res.status;
}

/** The node's main-thread event-loop delay p99 since its last scrape (ms). */
async function loopDelayP99Ms(node: BenchNode): Promise<number> {
  const text = await (await fetch(`${node.ledgerUrl}/metrics`)).text();
  const m = /^cairn_nodejs_eventloop_lag_p99_seconds (\S+)$/m.exec(text);
  if (!m) throw new Error('no event-loop delay in /metrics (metrics off?)');
  return r1(Number(m[1]) * 1000);
}

export async function runCircuit(): Promise<object> {
  const members: Member[] = [];
  try {
    for (const id of IDS) {
      // Metrics on: the HTTP thread's event-loop delay (prom-client's monitorEventLoopDelay
      // percentiles, reset at every scrape) is read before and after the measured load.
      const node = await startBenchNode({ CAIRN_NODE_ID: id, CAIRN_PEER_RETRY_MS: '200', CAIRN_PEER_RETRY_MAX_MS: '2000', CAIRN_METRICS: 'on' });
      const admin = new Signer(readFileSync(join(node.dataDir, 'keys', 'admin.priv'), 'utf8').trim());
      members.push({ id, node, admin, auth: `Cylinder:${makeCylinderJwt(admin)}`, endpoint: `tcp://127.0.0.1:${node.networkPort}` });
    }
    for (const m of members) {
      for (const o of members) {
        const s = await post(
          m,
          '/registry/nodes',
          JSON.stringify({ identity: o.id, endpoints: [o.endpoint], display_name: o.id, keys: [o.admin.publicKey], metadata: {} }),
          true,
        );
        if (s !== 200) throw new Error(`registry: ${s}`);
      }
    }
    const ready = new Map<string, number>();
    const sockets = members.map((m) => {
      const ws = new WebSocket(`ws://${new URL(m.node.nodeUrl).host}/ws/admin/register/bench`, { headers: { authorization: `Bearer ${m.auth}` } });
      ws.on('message', (d: Buffer) => {
        const e = JSON.parse(d.toString()) as { eventType?: string; message?: unknown };
        if (!e.eventType) return;
        const p = (Array.isArray(e.message) ? e.message[0] : e.message) as { circuit_id: string; circuit_hash: string };
        if (e.eventType === 'ProposalSubmitted' && m.id !== 'alpha')
          void post(m, '/admin/submit', votePayload(m.admin, m.id, p.circuit_id, p.circuit_hash, true));
        if (e.eventType === 'CircuitReady') ready.set(p.circuit_id, (ready.get(p.circuit_id) ?? 0) + 1);
      });
      return new Promise<WebSocket>((resolve, reject) => {
        ws.on('open', () => resolve(ws));
        ws.on('error', reject);
      });
    });
    const open = await Promise.all(sockets);
    const times: number[] = [];
    for (let i = 0; i < CIRCUITS; i++) {
      const id = `bench-${String(i).padStart(5, '0')}`;
      const svc = ['sA00', 'sB00', 'sC00'];
      const spec: CircuitSpec = {
        circuit_id: id,
        members: members.map((m) => ({ node_id: m.id, endpoints: [m.endpoint] })),
        roster: members.map((m, j) => ({
          service_id: svc[j]!,
          service_type: 'scabbard',
          node_id: m.id,
          arguments: [
            ['peer_services', JSON.stringify(svc.filter((_, k) => k !== j))],
            ['admin_keys', JSON.stringify([members[0]!.admin.publicKey])],
          ],
        })),
        management_type: 'bench',
      };
      const t0 = performance.now();
      const s = await post(members[0]!, '/admin/submit', createPayload(members[0]!.admin, 'alpha', spec));
      if (s !== 202) throw new Error(`submit: ${s}`);
      const until = Date.now() + 60_000;
      while ((ready.get(id) ?? 0) < 3) {
        if (Date.now() > until) throw new Error(`circuit ${id} not ready on all three nodes within 60 s`);
        await new Promise((r) => setTimeout(r, 2));
      }
      times.push(performance.now() - t0);
    }
    for (const ws of open) ws.terminate();
    const scabbard = SCABBARD_BATCHES > 0 ? await runScabbard(members, 'bench-00000', ['sA00', 'sB00', 'sC00']) : {};
    times.sort((a, b) => a - b);
    const median = times.length % 2 ? times[(times.length - 1) / 2]! : (times[times.length / 2 - 1]! + times[times.length / 2]!) / 2;
    return {
      bench: 'circuit',
      circuits: CIRCUITS,
      nodes: 3,
      medianSubmitToReadyMs: Math.round(median * 10) / 10,
      minMs: Math.round(times[0]! * 10) / 10,
      maxMs: Math.round(times.at(-1)! * 10) / 10,
      ...scabbard,
    };
  } finally {
    await Promise.all(members.map((m) => m.node.stop()));
  }
}

const r1 = (x: number): number => Math.round(x * 10) / 10;

/** A raw keep-alive request with the member's credentials. */
function rawRequest(m: Member, method: string, path: string, body?: Uint8Array): Buffer {
  const u = new URL(m.node.nodeUrl);
  const head =
    `${method} ${path} HTTP/1.1\r\nHost: ${u.host}\r\nConnection: keep-alive\r\nAuthorization: Bearer ${m.auth}\r\n` +
    (body ? `Content-Type: application/octet-stream\r\nContent-Length: ${body.length}\r\n` : '') +
    '\r\n';
  return body ? Buffer.concat([Buffer.from(head), body]) : Buffer.from(head);
}

async function statusesOf(m: Member, base: string, ids: string[], wait: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < ids.length; i += 60) {
    const chunk = ids.slice(i, i + 60);
    const res = await fetch(`${m.node.nodeUrl}${base}/batch_statuses?ids=${chunk.join(',')}&wait=${wait}`, {
      headers: { authorization: `Bearer ${m.auth}` },
    });
    if (!res.ok) throw new Error(`batch_statuses: ${res.status} ${await res.text()}`);
    for (const e of (await res.json()) as Array<{ status: { statusType: string } }>) out.push(e.status.statusType);
  }
  return out;
}

/** The state service's throughput and submit-to-commit latency (see the header). */
async function runScabbard(members: Member[], circuitId: string, svc: string[]): Promise<Record<string, unknown>> {
  const [alpha] = members as [Member];
  const base = (j: number): string => `/scabbard/${circuitId}/${svc[j]}`;
  // Every member runs its service before anything is posted.
  for (const [j, m] of members.entries()) {
    for (let i = 0; ; i++) {
      const res = await fetch(`${m.node.nodeUrl}${base(j)}/state_root`, { headers: { authorization: `Bearer ${m.auth}` } });
      await res.text();
      if (res.ok) break;
      if (i > 600) throw new Error(`${m.id}: state service not running`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  const setup = await sabreSetup({ url: alpha.node.nodeUrl, auth: `Bearer ${alpha.auth}`, signer: alpha.admin, circuitId, serviceId: svc[0] ?? '' });
  if (!setup.ok) throw new Error(`sabre setup: ${setup.message}`);
  const signers = Array.from({ length: 8 }, () => new Signer(randomPrivateKey()));
  const run = randomBytes(4).toString('hex');
  const make = (n: number, tag: string): Array<{ id: string; body: Uint8Array }> =>
    Array.from({ length: n }, (_, i) => {
      const s = signers[i % signers.length] as Signer;
      const name = `${tag}${run}${i}`.slice(0, 20);
      const a = intkeyAddress(name);
      const b = buildBatch(s, [executeContractTxn(s, 'intkey', '1.0', [a], [a], intkeyPayload('set', name, i))]);
      return { id: b.id, body: buildBatchList([b]) };
    });
  progress(`state service: signing ${SCABBARD_WARMUP} + ${SCABBARD_BATCHES} batches`);
  const warm = make(SCABBARD_WARMUP, 'w');
  const batches = make(SCABBARD_BATCHES, 'b');

  /** Posts `list` over the connections; resolves once every batch got its 202. */
  const submit = async (list: Array<{ id: string; body: Uint8Array }>, sample: number) => {
    const commitLat: number[] = [];
    const probes: Array<Promise<void>> = [];
    let n429 = 0;
    // Member j takes batches j, j+3, …; connection c posts to member c % 3.
    const shares = members.map((_, j) =>
      list.filter((_, i) => i % 3 === j).map((b) => ({ ...b, req: rawRequest(members[j] as Member, 'POST', `${base(j)}/batches`, b.body) })),
    );
    const nextOf = members.map(() => 0);
    let sampled = 0;
    const worker = async (c: number): Promise<void> => {
      const j = c % 3;
      const m = members[j] as Member;
      const share = shares[j] ?? [];
      const u = new URL(m.node.nodeUrl);
      const conn = new RawConnection(u.hostname, Number(u.port));
      try {
        for (;;) {
          const k = nextOf[j]!++;
          const b = share[k];
          if (!b) return;
          const started = performance.now();
          for (;;) {
            const r = await conn.send(b.req);
            if (r.status === 202) break;
            if (r.status === 429) {
              n429++;
              await new Promise((res) => setTimeout(res, 2));
              continue;
            }
            throw new Error(`submit to ${m.id}: ${r.status} ${r.body}`);
          }
          if (sample > 0 && sampled++ % sample === 0) {
            probes.push(
              statusesOf(m, base(j), [b.id], 120).then(() => {
                commitLat.push(performance.now() - started);
              }),
            );
          }
        }
      } finally {
        conn.close();
      }
    };
    await Promise.all(Array.from({ length: SCABBARD_CONNECTIONS }, (_, c) => worker(c)));
    return { commitLat, probes, n429 };
  };
  const allCommitted = async (list: Array<{ id: string }>): Promise<number> => {
    const st = await statusesOf(
      alpha,
      base(0),
      list.map((b) => b.id),
      120,
    );
    return st.filter((x) => x === 'Committed').length;
  };

  progress('state service: warming up');
  await submit(warm, 0);
  await allCommitted(warm);
  progress(`state service: ${SCABBARD_BATCHES} batches over ${SCABBARD_CONNECTIONS} connections`);
  await Promise.all(members.map((m) => loopDelayP99Ms(m.node))); // resets the window
  const t0 = performance.now();
  const { commitLat, probes, n429 } = await submit(batches, SCABBARD_SAMPLE);
  const tSubmitted = performance.now();
  const committed = await allCommitted(batches);
  const tEnd = performance.now();
  const loopP99 = await Promise.all(members.map((m) => loopDelayP99Ms(m.node)));
  await Promise.all(probes);
  const secs = (tEnd - t0) / 1000;
  // Outside the clock: the other members have every batch and the same root.
  const onOthers = await Promise.all(
    members.slice(1).map(
      async (m, k) =>
        (
          await statusesOf(
            m,
            base(k + 1),
            batches.map((b) => b.id),
            60,
          )
        ).filter((x) => x === 'Committed').length,
    ),
  );
  const roots = await Promise.all(
    members.map(async (m, j) => {
      const res = await fetch(`${m.node.nodeUrl}${base(j)}/state_root`, { headers: { authorization: `Bearer ${m.auth}` } });
      return (await res.json()) as string;
    }),
  );
  commitLat.sort((a, b) => a - b);
  return {
    scabbardBatches: SCABBARD_BATCHES,
    scabbardConnections: SCABBARD_CONNECTIONS,
    scabbardRoundMax: Number(process.env.CAIRN_SCABBARD_ROUND_MAX ?? 200),
    scabbardCommittedBatchesPerSec: Math.round(committed / secs),
    scabbardSubmitSecs: r1((tSubmitted - t0) / 1000),
    scabbardCommitP50Ms: r1(percentile(commitLat, 50)),
    scabbardCommitP99Ms: r1(percentile(commitLat, 99)),
    scabbardHttp429: n429,
    // The HTTP (main) thread's event-loop delay p99 over the measured window, per member
    // (the first is the coordinator).
    scabbardEventLoopP99Ms: loopP99,
    scabbardCommittedOnAll: committed === SCABBARD_BATCHES && onOthers.every((n) => n === SCABBARD_BATCHES),
    scabbardRootsEqual: roots.every((r) => r === roots[0]),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runCircuit().then(
    (r) => process.stdout.write(`${JSON.stringify(r)}\n`),
    (err: unknown) => {
      process.stderr.write(`${String(err)}\n`);
      process.exit(1);
    },
  );
}
