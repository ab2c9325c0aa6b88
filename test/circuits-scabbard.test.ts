/**
 * The state service on a circuit across three node processes (research circuits.md §5.2
 * steps 4–9): the same initial root everywhere, read (and a batch submitted) on each member
 * the moment its CircuitReady arrives; a member whose service has not started answers 503
 * with Retry-After (never 404) and holds back CircuitReady everywhere until it runs, also
 * across its restart; Sabre batches submitted to the coordinator and to a non-coordinator
 * commit on all three with equal roots; an invalid batch is Invalid on all three; a stopped
 * member makes batches wait, and they commit once it is back; a member killed during
 * rounds catches up after its restart.
 */
import t, { type Test } from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildBatch, buildBatchList } from '../src/ledger/build.js';
import { Signer, randomPrivateKey } from '../src/crypto/secp256k1.js';
import { createPayload, idPayload, votePayload, type CircuitSpec } from '../src/circuits/payloads.js';
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

const circuitSpec = (id: string, svc: Record<string, string>): CircuitSpec => ({
  circuit_id: id,
  members: nodes.map((n) => ({ node_id: n.id, endpoints: [n.endpoint] })),
  roster: nodes.map((n) => ({
    service_id: svc[n.id]!,
    service_type: 'scabbard',
    node_id: n.id,
    arguments: [
      ['peer_services', JSON.stringify(Object.values(svc).filter((s) => s !== svc[n.id]))],
      ['admin_keys', JSON.stringify([A.admin.publicKey])],
      ['version', '2'],
      ['coordinator_timeout', '3000'],
    ],
  })),
  management_type: 'test',
  authorization_type: 'trust',
  display_name: 'state service circuit',
});
const spec = circuitSpec(CIRCUIT, SVC);

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
  // CircuitReady means every member's service answers: each member is read the moment its
  // own event arrives, without a retry (before, it answered 404 for a while after it).
  const first = await Promise.all(
    nodes.map(async (n, i) => {
      await clients[i]!.waitFor('CircuitReady', CIRCUIT);
      return get(n, '/state_root');
    }),
  );
  t.same(
    first.map((x) => x.status),
    [200, 200, 200],
    `state_root answers on every member at CircuitReady (${first.map((x) => x.text.slice(0, 80)).join(' | ')})`,
  );
  const r = first.map((x) => x.body as string);
  t.match(r[0], /^[0-9a-f]{64}$/, 'a state root');
  t.same(r, [r[0], r[0], r[0]], 'equal initial roots');
  initialRoot = r[0]!;
  // And a batch submitted to each member at once is accepted and commits everywhere.
  const ready = nodes.map((n) => registry(A.admin, `reg-ready-${n.id}`));
  const posted = await Promise.all(nodes.map((n, i) => post(n, list(ready[i]!))));
  t.same(
    posted.map((p) => p.status),
    [202, 202, 202],
    'a batch is accepted on every member at CircuitReady',
  );
  for (const n of nodes)
    t.ok(
      (
        await statuses(
          n,
          ready.map((b) => b.id),
        )
      ).every((s) => s.status.statusType === 'Committed'),
      `committed on ${n.id}`,
    );
  t.equal((await A.call('GET', `/scabbard/${CIRCUIT}/sB00/state_root`, { auth: A.auth })).status, 404, 'a service this node does not run');
  t.match((await A.call('GET', `/scabbard/nope0-00000/sA00/state_root`, { auth: A.auth })).body, {
    message: 'scabbard service sA00 on circuit nope0-00000 not found',
  });
  t.equal((await fetch(`${A.url}${base(A)}/state_root`)).status, 401, 'credentials needed');
});

/** gamma's key file: its circuit committer threads read it when they start (so does the node, at boot). */
const gammaKey = join(C.dir, 'keys', 'validator.priv');

/**
 * A circuit `id` (services `r<A|B|C><n>`) created while gamma's key file is damaged:
 * gamma's new service fails to start and is tried again. Returns once gamma's route says
 * so, with every answer it gave from the accept on (the circuit is Active there from then).
 */
async function createWhileGammaCannotStart(t: Test, id: string, n: string) {
  const svc: Record<string, string> = { alpha: `rA0${n}`, beta: `rB0${n}`, gamma: `rC0${n}` };
  const key = readFileSync(gammaKey);
  writeFileSync(gammaKey, 'not a key\n');
  t.teardown(() => writeFileSync(gammaKey, key));
  t.equal((await submit(A, createPayload(A.admin, 'alpha', circuitSpec(id, svc)))).status, 202);
  await Promise.all(clients.map((c) => c.waitFor('ProposalSubmitted', id)));
  const hash = ((await B.call('GET', `/admin/proposals/${id}`, { auth: B.auth })).body as { circuit_hash: string }).circuit_hash;
  t.equal((await submit(B, votePayload(B.admin, 'beta', id, hash, true))).status, 202);
  await Promise.all(clients.map((c) => c.waitFor('ProposalVote', id)));
  t.equal((await submit(C, votePayload(C.admin, 'gamma', id, hash, true))).status, 202);
  await clients[2]!.waitFor('ProposalAccepted', id);
  const seen: Array<{ status: number; retryAfter: string | null; message: string }> = [];
  for (let i = 0; i < 600; i++) {
    const res = await fetch(`${C.url}/scabbard/${id}/${svc.gamma}/state_root`, { headers: { authorization: `Bearer ${C.auth}` } });
    const body = (await res.json()) as { message?: string };
    seen.push({ status: res.status, retryAfter: res.headers.get('retry-after'), message: String(body.message) });
    if (/last start failed/.test(String(body.message))) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const readyEvents = () =>
    clients.map((c) => c.events.filter((e) => e.eventType === 'CircuitReady' && JSON.stringify(e.message).includes(id)).length);
  return { svc, key, seen, readyEvents };
}

/** Each member's state_root read the moment its own CircuitReady for `id` arrives, without a retry. */
async function readAtReady(id: string, svc: Record<string, string>, events: EventClient[]): Promise<number[]> {
  return Promise.all(
    nodes.map(async (n, i) => {
      await events[i]!.waitFor('CircuitReady', id);
      return (await n.call('GET', `/scabbard/${id}/${svc[n.id]}/state_root`, { auth: n.auth })).status;
    }),
  );
}

/** Abandons a circuit of these tests on every member: a restart then starts no service of it (a thread less to wait for). */
async function abandonEverywhere(t: Test, id: string): Promise<void> {
  for (const n of nodes) t.equal((await submit(n, idPayload(n.admin, n.id, 'abandon', id))).status, 202, `${id} abandoned on ${n.id}`);
}

t.test('a member whose service has not started: 503 with Retry-After, and no CircuitReady anywhere until it runs', async (t) => {
  const id = 'scabb-00002';
  const { svc, key, seen, readyEvents } = await createWhileGammaCannotStart(t, id, '1');
  // Its routes answer 503, never 404, until it runs; the answer says why once a start failed.
  t.match(seen.at(-1), {
    status: 503,
    message: `scabbard service rC01 on circuit ${id} is not running: its last start failed (see the node's log); it is tried again`,
  });
  t.ok(
    seen.every((x) => x.status === 503 && /^[1-9][0-9]*$/.test(x.retryAfter ?? '') && /is starting|last start failed/.test(x.message)),
    `every answer until then was 503 with Retry-After (${[...new Set(seen.map((x) => `${x.status} ${x.message}`))].join(' | ')})`,
  );
  const data = await fetch(`${C.child.dataUrl}/organization?service_id=${encodeURIComponent(`${id}::rC01`)}`);
  t.equal(data.status, 503, 'the data API with that service_id: 503');
  t.ok(data.headers.get('retry-after'), 'with Retry-After');
  // alpha's and beta's services run (or start: 503 until then), but gamma has not reported
  // ready, so no member has CircuitReady.
  for (const n of [A, B]) {
    const answers = new Set<number>();
    for (let i = 0; i < 600; i++) {
      const st = (await n.call('GET', `/scabbard/${id}/${svc[n.id]}/state_root`, { auth: n.auth })).status;
      answers.add(st);
      if (st === 200) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    t.ok([...answers].every((st) => st === 200 || st === 503) && answers.has(200), `${n.id}'s own service runs (${[...answers]})`);
  }
  t.same(readyEvents(), [0, 0, 0], 'no CircuitReady while a member service is not running');
  t.equal((await C.call('GET', `/scabbard/${id}/rA01/state_root`, { auth: C.auth })).status, 404, 'a service gamma does not run: 404');

  // Repaired: the next try starts it, gamma reports ready, and every member answers at CircuitReady.
  writeFileSync(gammaKey, key);
  t.same(await readAtReady(id, svc, clients), [200, 200, 200], 'state_root answers on every member at CircuitReady');
  t.ok(/failed to start: .*; trying again in \d+ ms/.test(C.child.log()), 'the failed start is in the log, with the next try');
  await abandonEverywhere(t, id);
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
  // The registries: reg1 and the three of the first test, in address order.
  const want = [addr, ...nodes.map((n) => contractRegistryAddress(`reg-ready-${n.id}`))].sort();
  t.same(
    (listed.body as Array<{ address: string }>).map((e) => e.address),
    want,
    'state listing by prefix',
  );
  t.same(
    (listed.body as Array<{ address: string }>).find((e) => e.address === addr),
    { address: addr, value: values[0]!.body },
    'with the value read by address',
  );
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

t.test(
  'a stopped member: batches wait; restarted: they commit and roots match, and it reports ready for a circuit whose service had not run',
  async (t) => {
    // A circuit whose service on gamma has not run yet when gamma stops: gamma reports ready
    // for it only once the service runs after the restart.
    const late = await createWhileGammaCannotStart(t, 'scabb-00003', '2');
    t.same(late.readyEvents(), [0, 0, 0], 'no CircuitReady for it yet');
    clients[2]!.close();
    t.equal(await C.child.stop(), 0, 'gamma stops cleanly while its service is tried again');
    writeFileSync(gammaKey, late.key);
    const b = registry(A.admin, 'reg-wait');
    t.equal((await post(A, list(b))).status, 202);
    const [s] = await statuses(A, [b.id], 5);
    t.not(s!.status.statusType, 'Committed', 'not committed while gamma is down');
    t.match(s!.status.message, [{ error_message: /Waiting for every member to agree/ }], 'the status says why');
    t.equal((await statuses(B, [b.id], 0))[0]!.status.statusType === 'Committed', false);
    await C.restart();
    clients[2] = new EventClient(C, 'test'); // every stored event again, then live ones
    await clients[2].opened;
    for (const n of nodes) t.equal((await statuses(n, [b.id], 60))[0]!.status.statusType, 'Committed', `committed on ${n.id} after the restart`);
    const r = await roots();
    t.same(r, [r[0], r[0], r[0]], 'equal roots');
    t.same(
      await readAtReady('scabb-00003', late.svc, clients),
      [200, 200, 200],
      'the late circuit: state_root answers on every member at CircuitReady',
    );
    await abandonEverywhere(t, 'scabb-00003');
  },
);

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
