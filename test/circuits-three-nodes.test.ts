/**
 * Three node processes on loopback agree on circuits (upstream's three-node walk and its
 * negative checks): trust and challenge creates, identical proposals, circuits and
 * events on every member, a rejection, a duplicate, wrong voters, a member killed and
 * restarted mid-proposal, disband, abandon, purge and event replay with `last`.
 */
import t, { type Test } from 'tap';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { runToExit } from './helpers/child.js';
import { randomBytes } from 'node:crypto';
import { frame } from '../src/circuits/frame.js';
import { AuthChallengeSubmitRequest, AuthorizationMessage, AuthProtocolRequest, NetworkMessage, encode } from '../src/proto/circuits.js';
import { createPayload, idPayload, votePayload, type CircuitSpec } from '../src/circuits/payloads.js';
import { startCircuitNodes, submit, EventClient, type CircuitNode } from './helpers/circuits.js';

const { nodes, stop } = await startCircuitNodes(['alpha', 'beta', 'gamma']);
const [A, B, C] = nodes as [CircuitNode, CircuitNode, CircuitNode];
const clients = new Map<string, EventClient>();
const ws = (n: CircuitNode): EventClient => clients.get(n.id)!;
t.teardown(async () => {
  if (process.env.CIRCUIT_TEST_LOGS)
    for (const n of nodes) (await import('node:fs')).writeFileSync(`${process.env.CIRCUIT_TEST_LOGS}-${n.id}.log`, n.child.log());
  for (const c of clients.values()) c.close();
  await stop();
});
for (const n of nodes) {
  const c = new EventClient(n, 'test');
  clients.set(n.id, c);
  await c.opened;
}

function spec(id: string, auth: 'trust' | 'challenge' = 'trust'): CircuitSpec {
  const svc = ['sA00', 'sB00', 'sC00'];
  return {
    circuit_id: id,
    members: nodes.map((n) => ({ node_id: n.id, endpoints: [n.endpoint], public_key: auth === 'challenge' ? n.peering : undefined })),
    roster: nodes.map((n, i) => ({
      service_id: svc[i]!,
      service_type: 'scabbard',
      node_id: n.id,
      arguments: [
        ['peer_services', JSON.stringify(svc.filter((_, j) => j !== i))],
        ['admin_keys', JSON.stringify([A.admin.publicKey])],
        ['version', '2'],
      ],
    })),
    management_type: 'test',
    authorization_type: auth,
    display_name: `circuit ${id}`,
  };
}

async function getAll(path: string, version?: number): Promise<Array<{ status: number; text: string; body: unknown }>> {
  return Promise.all(nodes.map((n) => n.call('GET', path, { auth: n.auth, version })));
}

async function waitAll(type: string, id: string, also = ''): Promise<void> {
  await Promise.all(nodes.map((n) => ws(n).waitFor(type, id, also)));
}

async function createAndAccept(t: Test, id: string, auth: 'trust' | 'challenge'): Promise<void> {
  const r = await submit(A, createPayload(A.admin, 'alpha', spec(id, auth)));
  t.equal(r.status, 202, `create answered 202 (${r.text})`);
  await waitAll('ProposalSubmitted', id);
  const props = await getAll(`/admin/proposals/${id}`);
  t.ok(
    props.every((p) => p.status === 200 && p.text === props[0]!.text),
    'the proposal is byte-identical on the three nodes',
  );
  const proposal = props[0]!.body as { circuit_hash: string; votes: unknown[]; circuit: { roster: Array<{ arguments: unknown }> } };
  t.same(proposal.votes, []);
  t.same(proposal.circuit.roster[0]!.arguments, spec(id).roster[0]!.arguments, 'arguments are [key, value] pairs in submitted order');

  t.equal((await submit(B, votePayload(B.admin, 'beta', id, proposal.circuit_hash, true))).status, 202, 'beta votes on beta');
  await waitAll('ProposalVote', id);
  const voted = await getAll(`/admin/proposals/${id}`);
  t.ok(
    voted.every((p) => p.text === voted[0]!.text),
    'the voted proposal is identical',
  );
  t.same((voted[0]!.body as { votes: unknown[] }).votes, [{ public_key: B.admin.publicKey, vote: 'Accept', voter_node_id: 'beta' }]);

  t.equal((await submit(C, votePayload(C.admin, 'gamma', id, proposal.circuit_hash, true))).status, 202, 'gamma votes on gamma');
  await waitAll('CircuitReady', id);
  const circuits = await getAll(`/admin/circuits/${id}`);
  t.ok(
    circuits.every((c) => c.status === 200 && c.text === circuits[0]!.text),
    'the circuit is byte-identical on the three nodes',
  );
  t.match(circuits[0]!.body, { id, circuit_status: 'Active', circuit_version: 2, management_type: 'test', display_name: `circuit ${id}` });
  t.ok(
    (await getAll(`/admin/proposals/${id}`)).every((p) => p.status === 404),
    'the accepted proposal is gone',
  );
}

t.test('three-party create with trust: proposal, votes, circuit', async (t) => {
  const id = 'abcde-12345';
  const r = await submit(A, createPayload(A.admin, 'alpha', spec(id)));
  t.equal(r.status, 202);
  await waitAll('ProposalSubmitted', id);
  const hash = ((await A.call('GET', `/admin/proposals/${id}`, { auth: A.auth })).body as { circuit_hash: string }).circuit_hash;

  const dup = await submit(B, createPayload(A.admin, 'alpha', spec(id)));
  t.equal(dup.status, 400, 'the same create to a second node');
  t.match(dup.body, { message: /Ignoring duplicate proposal for circuit abcde-12345/ });
  const own = await submit(A, votePayload(A.admin, 'alpha', id, hash, true));
  t.equal(own.status, 400, 'a vote from the requesting node');
  t.match(own.body, { message: /Received vote from requester node/ });
  const wrong = await submit(B, votePayload(C.admin, 'beta', id, hash, true));
  t.equal(wrong.status, 400, "gamma's key voting for beta");
  t.match(wrong.body, { message: /is not registered for voting node beta/ });
  const badHash = await submit(B, votePayload(B.admin, 'beta', id, 'ab'.repeat(32), true));
  t.equal(badHash.status, 400);
  t.match(badHash.body, { message: /Hash of circuit does not match/ });
  const elsewhere = await submit(A, votePayload(B.admin, 'beta', id, hash, true));
  t.equal(elsewhere.status, 400, "a vote sent to another node than the voter's");
  const noAuth = await fetch(`${A.url}/admin/submit`, { method: 'POST', body: new Uint8Array([1]) });
  t.equal(noAuth.status, 401);
  const garbage = await submit(A, new Uint8Array([0xff, 0xff, 0xff]));
  t.equal(garbage.status, 400, 'malformed payload');
  t.match(garbage.body, { message: /Failed to parse payload/ });
  const tampered = Buffer.from(createPayload(A.admin, 'alpha', spec('zzzzz-00000')));
  tampered.writeUInt8(tampered.readUInt8(tampered.length - 1) ^ 1, tampered.length - 1);
  const bad = await submit(A, tampered);
  t.equal(bad.status, 400, 'a payload altered after signing');

  t.equal((await submit(B, votePayload(B.admin, 'beta', id, hash, true))).status, 202);
  await waitAll('ProposalVote', id);
  t.equal((await submit(C, votePayload(C.admin, 'gamma', id, hash, true))).status, 202);
  await waitAll('ProposalAccepted', id);
  await waitAll('CircuitReady', id);
  const circuits = await getAll(`/admin/circuits/${id}`);
  t.ok(
    circuits.every((c) => c.text === circuits[0]!.text),
    'identical circuits',
  );
  t.match(circuits[0]!.body, { id, circuit_status: 'Active', members: [{ node_id: 'alpha' }, { node_id: 'beta' }, { node_id: 'gamma' }] });
  const v1 = await getAll(`/admin/circuits/${id}`, 1);
  t.same((v1[0]!.body as { members: string[] }).members, ['alpha', 'beta', 'gamma'], 'version 1 members are ids');
  t.equal((await A.call('GET', '/admin/circuits/nope0-00000', { auth: A.auth })).status, 404);
  const accepted = ws(A).events.find((e) => e.eventType === 'ProposalAccepted')!;
  t.same(
    (accepted.message as [unknown, number[]])[1],
    Array.from(Buffer.from(C.admin.publicKey, 'hex')),
    'ProposalAccepted carries the last voter key',
  );
});

t.test('three-party create with challenge authorization', async (t) => {
  await createAndAccept(t, 'chall-00001', 'challenge');
});

t.test('a reject vote rejects the proposal everywhere', async (t) => {
  const id = 'rejec-00001';
  t.equal((await submit(A, createPayload(A.admin, 'alpha', spec(id)))).status, 202);
  await waitAll('ProposalSubmitted', id);
  const hash = ((await B.call('GET', `/admin/proposals/${id}`, { auth: B.auth })).body as { circuit_hash: string }).circuit_hash;
  t.equal((await submit(B, votePayload(B.admin, 'beta', id, hash, false))).status, 202);
  await waitAll('ProposalRejected', id);
  t.ok((await getAll(`/admin/proposals/${id}`)).every((p) => p.status === 404));
  t.ok((await getAll(`/admin/circuits/${id}`)).every((p) => p.status === 404));
});

t.test('a member killed mid-proposal and restarted: the proposal completes', async (t) => {
  const id = 'kill9-00001';
  t.equal((await submit(A, createPayload(A.admin, 'alpha', spec(id)))).status, 202);
  await waitAll('ProposalSubmitted', id);
  const hash = ((await B.call('GET', `/admin/proposals/${id}`, { auth: B.auth })).body as { circuit_hash: string }).circuit_hash;
  ws(C).close();
  await C.child.kill9();
  t.equal((await submit(B, votePayload(B.admin, 'beta', id, hash, true))).status, 202, 'beta votes while gamma is down');
  await C.restart();
  const c = new EventClient(C, 'test');
  clients.set('gamma', c);
  await c.opened;
  await waitAll('ProposalVote', id);
  const voted = await getAll(`/admin/proposals/${id}`);
  t.ok(
    voted.every((p) => p.text === voted[0]!.text),
    'the vote reached the restarted member',
  );
  t.equal((await submit(C, votePayload(C.admin, 'gamma', id, hash, true))).status, 202);
  await waitAll('CircuitReady', id);
  const circuits = await getAll(`/admin/circuits/${id}`);
  t.ok(circuits.every((x) => x.status === 200 && x.text === circuits[0]!.text));
});

t.test('event sequences are identical on every member', async (t) => {
  const seqs = nodes.map((n) => ws(n).frames.slice(1));
  t.ok(seqs[0]!.length >= 12);
  t.same(seqs[1], seqs[0], 'beta = alpha');
  t.same(seqs[2], seqs[0], 'gamma (reconnected after its restart, full replay) = alpha');
  const types = ws(A)
    .events.filter((e) => JSON.stringify(e.message).includes('abcde-12345'))
    .map((e) => e.eventType);
  t.same(types, ['ProposalSubmitted', 'ProposalVote', 'ProposalAccepted', 'CircuitReady'], 'upstream sequence');
  t.same(JSON.parse(ws(A).frames[0]!), { status: 'OK', circuit_management_type: 'test', error_reason: null });
});

t.test('disband with votes', async (t) => {
  const id = 'abcde-12345';
  t.equal((await submit(A, idPayload(A.admin, 'alpha', 'disband', id))).status, 202);
  await waitAll('ProposalSubmitted', id, '"proposal_type":"Disband"');
  const p = (await B.call('GET', `/admin/proposals/${id}`, { auth: B.auth })).body as { circuit_hash: string; proposal_type: string };
  t.equal(p.proposal_type, 'Disband');
  t.equal((await submit(B, votePayload(B.admin, 'beta', id, p.circuit_hash, true))).status, 202);
  await waitAll('ProposalVote', id, '"proposal_type":"Disband"');
  t.equal((await submit(C, votePayload(C.admin, 'gamma', id, p.circuit_hash, true))).status, 202);
  await waitAll('CircuitDisbanded', id);
  const circuits = await getAll(`/admin/circuits/${id}`);
  t.ok(circuits.every((x) => x.text === circuits[0]!.text));
  t.match(circuits[0]!.body, { circuit_status: 'Disbanded' });
  const listed = (await A.call('GET', '/admin/circuits', { auth: A.auth })).body as { data: Array<{ id: string }> };
  t.notOk(
    listed.data.some((c) => c.id === id),
    'version 2 lists Active circuits only',
  );
  const v1 = (await A.call('GET', '/admin/circuits', { auth: A.auth, version: 1 })).body as { data: Array<{ id: string }> };
  t.ok(
    v1.data.some((c) => c.id === id),
    'version 1 lists every circuit',
  );
  const disbanded = (await A.call('GET', '/admin/circuits?status=disbanded', { auth: A.auth })).body as { data: Array<{ id: string }> };
  t.same(
    disbanded.data.map((c) => c.id),
    [id],
  );
});

t.test('abandon and purge are local', async (t) => {
  const id = 'chall-00001';
  const early = await submit(C, idPayload(C.admin, 'gamma', 'purge', id));
  t.equal(early.status, 400, 'an Active circuit cannot be purged');
  t.match(early.body, { message: /still active/ });
  t.equal((await submit(A, idPayload(C.admin, 'gamma', 'abandon', id))).status, 400, 'abandon only on the own node');
  t.equal((await submit(C, idPayload(C.admin, 'gamma', 'abandon', id))).status, 202);
  const [a, b, c] = await getAll(`/admin/circuits/${id}`);
  t.match(c!.body, { circuit_status: 'Abandoned' });
  t.match(a!.body, { circuit_status: 'Active' });
  t.match(b!.body, { circuit_status: 'Active' });
  t.equal((await submit(C, idPayload(C.admin, 'gamma', 'purge', id))).status, 202);
  t.equal((await C.call('GET', `/admin/circuits/${id}`, { auth: C.auth })).status, 404, 'purged on gamma');
  t.equal((await A.call('GET', `/admin/circuits/${id}`, { auth: A.auth })).status, 200, 'kept on alpha');
});

t.test('event replay with last', async (t) => {
  const all = ws(A).events;
  const cut = all[3]!.timestamp;
  const later = new EventClient(A, 'test', cut);
  await later.opened;
  const want = all.filter((e) => e.timestamp > cut).length;
  const until = Date.now() + 10_000;
  while (later.events.length < want && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  t.same(
    later.frames.slice(1),
    ws(A)
      .frames.slice(1)
      .filter((f) => (JSON.parse(f) as { timestamp: number }).timestamp > cut),
    'every event after last, in order, none repeated',
  );
  later.close();
  const other = new EventClient(A, 'other');
  await other.opened;
  await new Promise((r) => setTimeout(r, 300));
  t.equal(other.frames.length, 1, 'only the registration result for a type without events');
  other.close();
});

/** Opens a raw TCP connection to a node's peer port and collects what it answers. */
async function raw(n: CircuitNode): Promise<{ sock: Socket; got: () => Buffer; closed: Promise<void> }> {
  const sock = connect({ host: '127.0.0.1', port: n.child.ports.network });
  let buf = Buffer.alloc(0);
  sock.on('data', (d: Buffer) => (buf = Buffer.concat([buf, d])));
  sock.on('error', () => {});
  const closed = new Promise<void>((r) => sock.once('close', () => r()));
  await new Promise<void>((r) => sock.once('connect', () => r()));
  return { sock, got: () => buf, closed };
}

const within = (p: Promise<void>, ms: number): Promise<boolean> =>
  Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);
const authMsg = (type: number, payload: Uint8Array): Buffer =>
  frame(encode(NetworkMessage, { messageType: 101, payload: encode(AuthorizationMessage, { messageType: type, payload }) }));
const VERSIONS_1 = Buffer.from([0, 1, 0, 1]);

t.test('garbage on the peer port drops that connection only', async (t) => {
  const before = await getAll('/admin/circuits?status=disbanded');

  const r1 = await raw(A);
  r1.sock.write(randomBytes(64));
  t.ok(await within(r1.closed, 10_000), 'random bytes: connection dropped');

  const r2 = await raw(A);
  const bad = Buffer.from(frame(Buffer.from('x')));
  bad.writeUInt8(bad.readUInt8(6) ^ 0xff, 6);
  r2.sock.write(Buffer.concat([VERSIONS_1, bad]));
  t.ok(await within(r2.closed, 10_000), 'bad checksum: connection dropped');

  const r3 = await raw(A);
  r3.sock.write(Buffer.concat([VERSIONS_1, Buffer.from([0, 2, 0, 0, 0, 0, 0xfd])]));
  t.ok(await within(r3.closed, 10_000), 'unknown frame version: connection dropped');

  const r4 = await raw(A);
  r4.sock.write(Buffer.concat([VERSIONS_1, frame(encode(NetworkMessage, { messageType: 100, payload: Buffer.from('hi') }))]));
  t.ok(await within(r4.closed, 10_000), 'a circuit message before the handshake: connection dropped');

  const r5 = await raw(A);
  r5.sock.write(Buffer.concat([VERSIONS_1, frame(Buffer.from([0xff, 0xff, 0xff, 0xff]))]));
  t.ok(await within(r5.closed, 10_000), 'undecodable message: connection dropped');

  // A challenge handshake whose signature does not verify.
  const r6 = await raw(A);
  r6.sock.write(
    Buffer.concat([
      VERSIONS_1,
      authMsg(101, encode(AuthProtocolRequest, { authProtocolMin: 1, authProtocolMax: 1 })),
      authMsg(120, new Uint8Array(0)),
    ]),
  );
  const until = Date.now() + 10_000;
  while (!r6.got().includes(Buffer.from([0x08, 0x79])) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  const sig = Buffer.alloc(64, 7);
  r6.sock.write(authMsg(122, encode(AuthChallengeSubmitRequest, { submitRequests: [{ publicKey: Buffer.from(B.peering, 'hex'), signature: sig }] })));
  t.ok(await within(r6.closed, 10_000), 'bad challenge signature: connection dropped');

  t.match(A.child.log(), /protocol error: frame header checksum mismatch/);
  t.match(A.child.log(), /authorization refused: challenge signature is invalid/);
  const after = await getAll('/admin/circuits?status=disbanded');
  t.same(
    after.map((x) => x.text),
    before.map((x) => x.text),
    'circuits intact',
  );
  for (const n of nodes) t.equal((await n.call('GET', '/status', { auth: n.auth })).status, 200, `${n.id} serves`);
  await createAndAccept(t, 'after-00001', 'trust');
});

t.test('status shows the node id and the advertised endpoint', async (t) => {
  const s = (await A.call('GET', '/status', { auth: A.auth })).body as {
    node_id: string;
    network_endpoints: string[];
    advertised_endpoints: string[];
  };
  t.equal(s.node_id, 'alpha');
  t.same(s.network_endpoints, [A.endpoint]);
  t.same(s.advertised_endpoints, [A.endpoint]);
});

t.test('the circuit command builds, signs and submits payloads', async (t) => {
  const cli = async (n: CircuitNode, args: string[]): Promise<{ code: number | null; log: string }> =>
    runToExit(['src/cli/circuit.ts', ...args, '--url', n.url, '--key', join(n.dir, 'keys', 'admin.priv')], { ...process.env });
  const id = 'clicl-00001';
  const members = nodes.flatMap((n) => ['--member', `${n.id}=${n.endpoint}`]);
  const services = nodes.flatMap((n, i) => ['--service', `s${'ABC'[i]}01::${n.id}`]);
  const p = await cli(A, [
    'propose',
    '--node-id',
    'alpha',
    '--circuit-id',
    id,
    '--management-type',
    'test',
    ...members,
    ...services,
    '--peer-services',
    '--service-arg',
    `*::admin_keys=${A.admin.publicKey}`,
  ]);
  t.equal(p.code, 0, p.log);
  t.match(p.log, new RegExp(`^proposed circuit ${id}: the node accepted it \\(202\\)$`, 'm'));
  await waitAll('ProposalSubmitted', id);
  t.equal((await cli(B, ['vote', '--node-id', 'beta', '--circuit-id', id, '--accept'])).code, 0);
  await waitAll('ProposalVote', id);
  t.equal((await cli(C, ['vote', '--node-id', 'gamma', '--circuit-id', id, '--accept'])).code, 0);
  await waitAll('CircuitReady', id);
  const list = await cli(C, ['list', 'circuits']);
  t.match(list.log, new RegExp(`^${id} Active members alpha,beta,gamma services sA01,sB01,sC01 management test$`, 'm'));
  const refused = await cli(B, ['vote', '--node-id', 'beta', '--circuit-id', id, '--accept']);
  t.equal(refused.code, 1, 'a vote on a circuit that is no longer proposed');
  t.match(refused.log, new RegExp(`proposal ${id}: the node API answered 404: `));
});
