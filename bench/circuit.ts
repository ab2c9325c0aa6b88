/**
 * Circuit agreement latency: three nodes on loopback; for each of CIRCUITS circuits, the
 * time from POST /admin/submit of the create on alpha to CircuitReady on all three nodes
 * (beta and gamma vote as soon as their ProposalSubmitted arrives). Prints the median.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';
import { Signer } from '../src/crypto/secp256k1.js';
import { makeCylinderJwt } from '../src/node-api/cylinder.js';
import { createPayload, votePayload, type CircuitSpec } from '../src/circuits/payloads.js';
import { startBenchNode, type BenchNode } from './lib/node.js';

const CIRCUITS = Number(process.env.CIRCUITS ?? 20);
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

export async function runCircuit(): Promise<object> {
  const members: Member[] = [];
  try {
    for (const id of IDS) {
      const node = await startBenchNode({ CAIRN_NODE_ID: id, CAIRN_PEER_RETRY_MS: '200', CAIRN_PEER_RETRY_MAX_MS: '2000' });
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
    times.sort((a, b) => a - b);
    const median = times.length % 2 ? times[(times.length - 1) / 2]! : (times[times.length / 2 - 1]! + times[times.length / 2]!) / 2;
    return {
      bench: 'circuit',
      circuits: CIRCUITS,
      nodes: 3,
      medianSubmitToReadyMs: Math.round(median * 10) / 10,
      minMs: Math.round(times[0]! * 10) / 10,
      maxMs: Math.round(times.at(-1)! * 10) / 10,
    };
  } finally {
    await Promise.all(members.map((m) => m.node.stop()));
  }
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
