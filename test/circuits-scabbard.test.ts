/**
 * The state service on a circuit across three node processes (research circuits.md §5.2
 * steps 4–9): the same initial root everywhere; Sabre batches submitted to the coordinator
 * and to a non-coordinator commit on all three with equal roots; an invalid batch is
 * Invalid on all three; a stopped member makes batches wait, and they commit once it is
 * back; a member killed during rounds catches up after its restart.
 */
import t from 'tap';
import { buildBatch, buildBatchList } from '../src/ledger/build.js';
import { Signer, randomPrivateKey } from '../src/crypto/secp256k1.js';
import { createPayload, votePayload, type CircuitSpec } from '../src/circuits/payloads.js';
import { createContractRegistryTxn } from '../src/scabbard/payloads.js';
import { contractRegistryAddress } from '../src/scabbard/sabre.js';
import { ContractRegistryList, decode } from '../src/scabbard/proto.js';
import { startCircuitNodes, submit, EventClient, type CircuitNode } from './helpers/circuits.js';

const { nodes, stop } = await startCircuitNodes(['alpha', 'beta', 'gamma']);
const [A, B, C] = nodes as [CircuitNode, CircuitNode, CircuitNode];
const SVC: Record<string, string> = { alpha: 'sA00', beta: 'sB00', gamma: 'sC00' };
const CIRCUIT = 'scabb-00001';
const clients: EventClient[] = [];
t.teardown(async () => {
  if (process.env.CIRCUIT_TEST_LOGS)
    for (const n of nodes) (await import('node:fs')).writeFileSync(`${process.env.CIRCUIT_TEST_LOGS}-${n.id}.log`, n.child.log());
  for (const c of clients) c.close();
  await stop();
});

const spec: CircuitSpec = {
  circuit_id: CIRCUIT,
  members: nodes.map((n) => ({ node_id: n.id, endpoints: [n.endpoint] })),
  roster: nodes.map((n) => ({
    service_id: SVC[n.id]!,
    service_type: 'scabbard',
    node_id: n.id,
    arguments: [
      ['peer_services', JSON.stringify(Object.values(SVC).filter((s) => s !== SVC[n.id]))],
      ['admin_keys', JSON.stringify([A.admin.publicKey])],
      ['version', '2'],
      ['coordinator_timeout', '3000'],
    ],
  })),
  management_type: 'test',
  authorization_type: 'trust',
  display_name: 'state service circuit',
};

const base = (n: CircuitNode): string => `/scabbard/${CIRCUIT}/${SVC[n.id]}`;
const get = async (n: CircuitNode, path: string): Promise<{ status: number; text: string; body: any }> =>
  n.call('GET', `${base(n)}${path}`, { auth: n.auth });
const roots = async (ns: CircuitNode[] = nodes): Promise<string[]> => Promise.all(ns.map(async (n) => (await get(n, '/state_root')).body as string));

async function post(n: CircuitNode, bytes: Uint8Array): Promise<{ status: number; body: any }> {
  const res = await fetch(`${n.url}${base(n)}/batches`, {
    method: 'POST',
    headers: { authorization: `Bearer ${n.auth}`, 'content-type': 'application/octet-stream' },
    body: Buffer.from(bytes),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const list = (...batches: Array<{ bytes: Uint8Array }>): Uint8Array => buildBatchList(batches);

async function statuses(n: CircuitNode, ids: string[], wait = 30): Promise<Array<{ id: string; status: { statusType: string; message: any[] } }>> {
  return (await get(n, `/batch_statuses?ids=${ids.join(',')}&wait=${wait}`)).body;
}

const registry = (signer: Signer, name: string) => buildBatch(signer, [createContractRegistryTxn(signer, name, [signer.publicKey])]);

let initialRoot = '';

t.test('circuit Active: every member runs its service from the same initial root', async (t) => {
  for (const n of nodes) {
    const c = new EventClient(n, 'test');
    clients.push(c);
    await c.opened;
  }
  t.equal((await submit(A, createPayload(A.admin, 'alpha', spec))).status, 202);
  await Promise.all(clients.map((c) => c.waitFor('ProposalSubmitted', CIRCUIT)));
  const hash = ((await B.call('GET', `/admin/proposals/${CIRCUIT}`, { auth: B.auth })).body as { circuit_hash: string }).circuit_hash;
  t.equal((await submit(B, votePayload(B.admin, 'beta', CIRCUIT, hash, true))).status, 202);
  await Promise.all(clients.map((c) => c.waitFor('ProposalVote', CIRCUIT)));
  t.equal((await submit(C, votePayload(C.admin, 'gamma', CIRCUIT, hash, true))).status, 202);
  await Promise.all(clients.map((c) => c.waitFor('CircuitReady', CIRCUIT)));
  // Each member starts its service when the circuit is Active there.
  let r = await roots();
  for (let i = 0; i < 100 && !r.every((x) => /^[0-9a-f]{64}$/.test(String(x))); i++) {
    await new Promise((res) => setTimeout(res, 100));
    r = await roots();
  }
  t.match(r[0], /^[0-9a-f]{64}$/, 'a state root');
  t.same(r, [r[0], r[0], r[0]], 'equal initial roots');
  initialRoot = r[0]!;
  t.equal((await A.call('GET', `/scabbard/${CIRCUIT}/sB00/state_root`, { auth: A.auth })).status, 404, 'a service this node does not run');
  t.match((await A.call('GET', `/scabbard/nope0-00000/sA00/state_root`, { auth: A.auth })).body, {
    message: 'scabbard service sA00 on circuit nope0-00000 not found',
  });
  t.equal((await fetch(`${A.url}${base(A)}/state_root`)).status, 401, 'credentials needed');
});

t.test('steps 5–8: a batch to the coordinator and one to a non-coordinator commit on all three', async (t) => {
  const b1 = registry(A.admin, 'reg1');
  const r1 = await post(A, list(b1));
  t.equal(r1.status, 202);
  t.same(r1.body, { link: `/scabbard/${CIRCUIT}/sA00/batch_statuses?ids=${b1.id}` });
  for (const n of nodes) {
    const [s] = await statuses(n, [b1.id]);
    t.equal(s!.status.statusType, 'Committed', `committed on ${n.id}`);
  }
  const addr = contractRegistryAddress('reg1');
  const values = await Promise.all([B, C].map((n) => get(n, `/state/${addr}`)));
  t.same(values[0]!.body, values[1]!.body, 'identical bytes on beta and gamma');
  const decoded = decode<{ registries: Array<{ name: string; owners: string[] }> }>(ContractRegistryList, Buffer.from(values[0]!.body as number[]));
  t.same(
    decoded.registries.map((r) => [r.name, r.owners]),
    [['reg1', [A.admin.publicKey]]],
  );
  const after1 = await roots();
  t.same(after1, [after1[0], after1[0], after1[0]], 'equal roots');
  t.not(after1[0], initialRoot, 'the root moved');
  const listed = await get(C, '/state?prefix=00ec01');
  t.same(listed.body, [{ address: addr, value: values[0]!.body }], 'state listing by prefix');
  t.equal((await get(C, `/state/${'00ec01'.padEnd(70, '0')}`)).status, 404, 'absent address');

  const b2 = registry(A.admin, 'reg2');
  const r2 = await post(B, list(b2));
  t.equal(r2.status, 202, 'accepted by a non-coordinator');
  t.equal(r2.body.link, `/scabbard/${CIRCUIT}/sB00/batch_statuses?ids=${b2.id}`);
  for (const n of nodes) t.equal((await statuses(n, [b2.id]))[0]!.status.statusType, 'Committed', `forwarded batch committed on ${n.id}`);
  const after2 = await roots();
  t.same(after2, [after2[0], after2[0], after2[0]]);
  t.not(after2[0], after1[0]);

  t.equal((await post(A, Buffer.from([1, 2, 3]))).status, 400, 'not a batch list');
});

t.test('an invalid batch is Invalid on all three and changes no root', async (t) => {
  const before = await roots();
  const intruder = new Signer(randomPrivateKey());
  const bad = registry(intruder, 'reg-bad');
  t.equal((await post(B, list(bad))).status, 202);
  for (const n of nodes) {
    const [s] = await statuses(n, [bad.id]);
    t.equal(s!.status.statusType, 'Invalid', `invalid on ${n.id}`);
    t.match(s!.status.message[0], { error_message: /Only admins can create a contract registry/ });
  }
  t.same(await roots(), before, 'roots unchanged');
});

t.test('a stopped member: batches wait; restarted: they commit and roots match', async (t) => {
  await C.child.stop();
  const b = registry(A.admin, 'reg-wait');
  t.equal((await post(A, list(b))).status, 202);
  const [s] = await statuses(A, [b.id], 5);
  t.not(s!.status.statusType, 'Committed', 'not committed while gamma is down');
  t.match(s!.status.message, [{ error_message: /Waiting for every member to agree/ }], 'the status says why');
  t.equal((await statuses(B, [b.id], 0))[0]!.status.statusType === 'Committed', false);
  await C.restart();
  for (const n of nodes) t.equal((await statuses(n, [b.id], 60))[0]!.status.statusType, 'Committed', `committed on ${n.id} after the restart`);
  const r = await roots();
  t.same(r, [r[0], r[0], r[0]], 'equal roots');
});

t.test('a member killed during rounds catches up after its restart', async (t) => {
  const batches = Array.from({ length: 30 }, (_, i) => registry(A.admin, `reg-k${i}`));
  const posts = batches.map((b, i) => post(i % 2 ? B : A, list(b)));
  await new Promise((r) => setTimeout(r, 50));
  await C.child.kill9();
  t.ok(
    (await Promise.all(posts)).every((p) => p.status === 202 || p.status === 429),
    'accepted (or refused for back-pressure)',
  );
  await C.restart();
  const ids = batches.map((b) => b.id);
  for (const n of [A, B]) {
    const st = await statuses(n, ids, 90);
    t.ok(
      st.every((s) => s.status.statusType === 'Committed' || s.status.statusType === 'Unknown'),
      `settled on ${n.id}`,
    );
  }
  const committedOnA = (await statuses(A, ids, 0))
    .filter((s) => s.status.statusType === 'Committed')
    .map((s) => s.id)
    .sort();
  const onC = (await statuses(C, committedOnA, 60))
    .filter((s) => s.status.statusType === 'Committed')
    .map((s) => s.id)
    .sort();
  t.same(onC, committedOnA, 'gamma has every batch alpha committed');
  const r = await roots();
  t.same(r, [r[0], r[0], r[0]], 'equal roots after the catch-up');
});
