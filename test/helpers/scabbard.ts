/**
 * A scabbard circuit over three (or more) circuit test nodes: the proposal from the first
 * node, the others' votes, and CircuitReady on every member (every member's state service
 * answers from then on: checked).
 */
import { createPayload, votePayload, type CircuitSpec } from '../../src/circuits/payloads.js';
import { EventClient, submit, type CircuitNode } from './circuits.js';

export interface ScabbardCircuit {
  circuitId: string;
  spec: CircuitSpec;
  /** Service id of each node, by node id. */
  svc: Record<string, string>;
  /** `/scabbard/<circuit>/<service of n>` */
  base(n: CircuitNode): string;
  /** `<circuit>::<service of n>`: the data API's `service_id` on n. */
  serviceId(n: CircuitNode): string;
}

export async function startScabbardCircuit(
  nodes: CircuitNode[],
  circuitId: string,
  svc: Record<string, string>,
  adminKeys: string[],
  auth: 'trust' | 'challenge' = 'trust',
): Promise<ScabbardCircuit> {
  const [first, ...voters] = nodes as [CircuitNode, ...CircuitNode[]];
  const spec: CircuitSpec = {
    circuit_id: circuitId,
    members: nodes.map((n) => ({ node_id: n.id, endpoints: [n.endpoint], public_key: auth === 'challenge' ? n.peering : undefined })),
    roster: nodes.map((n) => ({
      service_id: svc[n.id] as string,
      service_type: 'scabbard',
      node_id: n.id,
      arguments: [
        ['peer_services', JSON.stringify(Object.values(svc).filter((s) => s !== svc[n.id]))],
        ['admin_keys', JSON.stringify(adminKeys)],
        ['version', '2'],
        ['coordinator_timeout', '5000'],
      ],
    })),
    management_type: 'test',
    authorization_type: auth,
    display_name: `circuit ${circuitId}`,
  };
  const clients = nodes.map((n) => new EventClient(n, 'test'));
  try {
    await Promise.all(clients.map((c) => c.opened));
    const r = await submit(first, createPayload(first.admin, first.id, spec));
    if (r.status !== 202) throw new Error(`proposal: ${r.status} ${r.text}`);
    await Promise.all(clients.map((c) => c.waitFor('ProposalSubmitted', circuitId)));
    const hash = ((await first.call('GET', `/admin/proposals/${circuitId}`, { auth: first.auth })).body as { circuit_hash: string }).circuit_hash;
    for (const v of voters) {
      const vr = await submit(v, votePayload(v.admin, v.id, circuitId, hash, true));
      if (vr.status !== 202) throw new Error(`vote of ${v.id}: ${vr.status} ${vr.text}`);
    }
    await Promise.all(clients.map((c) => c.waitFor('CircuitReady', circuitId)));
  } finally {
    for (const c of clients) c.close();
  }
  const base = (n: CircuitNode): string => `/scabbard/${circuitId}/${svc[n.id]}`;
  // CircuitReady comes once every member's service runs: no member needs waiting for.
  for (const n of nodes) {
    const r = await n.call('GET', `${base(n)}/state_root`, { auth: n.auth });
    if (r.status !== 200) throw new Error(`${n.id}: state service of ${circuitId} not answering at CircuitReady: ${r.status} ${r.text}`);
  }
  return { circuitId, spec, svc, base, serviceId: (n) => `${circuitId}::${svc[n.id]}` };
}
