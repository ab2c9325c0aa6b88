/**
 * A peer speaks only for the node its connection authenticated as (docs/circuits.md): three
 * member node processes, a trust circuit and a challenge circuit between them, and hostile
 * peers in this process speaking the real peer protocol:
 *  - a peer connected as gamma (trust, the real gamma stopped) proposes a round and sends
 *    its APPLY as the coordinator's service (alpha's): beta's state does not change, the
 *    drop is logged; the same peer cannot speak as gamma's service of the challenge circuit
 *    (that one needs gamma's peering key), nor as alpha's admin service (a circuit proposal
 *    and its APPLY "from alpha", a ready message "from alpha"); as gamma's own service of
 *    the trust circuit it is heard (a forwarded batch is stored);
 *  - a node that is not a member (delta, trust) and a peer with its own peering key
 *    (challenge) are refused for every service; spoofed recipients, unknown circuits and
 *    malformed ids are dropped, with warnings that are rate limited and carry no stack trace;
 *  - the honest path still commits on both circuits, with equal roots.
 * The round the hostile coordinator proposes is a right one (root, verdicts, batches, time
 * of an honest batch, computed by a state service run in this process), so a member that
 * did not check who speaks would verify and apply it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { buildBatch, buildBatchList, type BuiltBatch } from '../src/ledger/build.js';
import { Signer, randomPrivateKey } from '../src/crypto/secp256k1.js';
import { createPayload, type CircuitSpec } from '../src/circuits/payloads.js';
import { createContractRegistryTxn } from '../src/scabbard/payloads.js';
import { ScabbardService, scabbardPrefix } from '../src/scabbard/service.js';
import { contractRegistryAddress } from '../src/scabbard/sabre.js';
import { MsgType, Proposal, ScabbardMessage, encode as encodeScabbard, type RoundRecordMsg } from '../src/scabbard/proto.js';
import {
  AdminDirectMessage,
  AdminMessage,
  AdminType,
  Circuit,
  CircuitDirectMessage,
  CircuitMessage,
  CircuitMsgType,
  CircuitProposal,
  ConsensusMessage,
  ProposalType,
  RequiredVerifiers,
  TwoPhase,
  TwoPhaseMessage,
  encode,
} from '../src/proto/circuits.js';
import { challengeToken, type Token } from '../src/circuits/connection.js';
import { checkEnvelope, parsePayload, sha256Hex } from '../src/circuits/validate.js';
import { PeerNetwork } from '../src/circuits/peers.js';
import { openEnv } from '../src/store/db.js';
import { scabbardDbNames } from '../src/store/names.js';
import { startCircuitNodes, type CircuitNode } from './helpers/circuits.js';
import { startScabbardCircuit, type ScabbardCircuit } from './helpers/scabbard.js';
import { openStore } from '../src/store/checksum.js';

const { nodes, stop } = await startCircuitNodes(['alpha', 'beta', 'gamma']);
const [A, B, C] = nodes as [CircuitNode, CircuitNode, CircuitNode];
const SVC: Record<string, string> = { alpha: 'sA00', beta: 'sB00', gamma: 'sC00' };
const KSVC: Record<string, string> = { alpha: 'kA00', beta: 'kB00', gamma: 'kC00' };
const shadowDir = mkdtempSync(join(tmpdir(), 'cairn-shadow-'));
const shadowDb = openEnv(shadowDir);
const hostiles: PeerNetwork[] = [];
t.teardown(async () => {
  if (process.env.CIRCUIT_TEST_LOGS)
    for (const n of nodes) (await import('node:fs')).writeFileSync(`${process.env.CIRCUIT_TEST_LOGS}-${n.id}.log`, n.child.log());
  for (const h of hostiles) await h.close();
  await stop();
  await shadowDb.close();
  rmSync(shadowDir, { recursive: true, force: true });
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
let trust: ScabbardCircuit;
let chall: ScabbardCircuit;
const get = async (n: CircuitNode, c: ScabbardCircuit, path: string): Promise<{ status: number; body: any }> =>
  n.call('GET', `${c.base(n)}${path}`, { auth: n.auth });
const root = async (n: CircuitNode, c: ScabbardCircuit = trust): Promise<string> => (await get(n, c, '/state_root')).body as string;
const statusOf = async (n: CircuitNode, c: ScabbardCircuit, id: string, wait = 0): Promise<string> =>
  ((await get(n, c, `/batch_statuses?ids=${id}&wait=${wait}`)).body as Array<{ status: { statusType: string } }>)[0]?.status.statusType ?? 'none';

async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

const batch = (name: string): BuiltBatch => buildBatch(A.admin, [createContractRegistryTxn(A.admin, name, [A.admin.publicKey])]);

interface Hostile {
  /** A circuit direct message to `to`, as service `sender` of `circuit`, for `recipient`. */
  service(to: CircuitNode, circuit: string, sender: string, recipient: string, payload: Uint8Array): void;
  /** An admin message to `to`'s admin service. */
  admin(to: CircuitNode, msg: Record<string, unknown>): void;
}

/**
 * A peer in this process: trust authorization as node `trustAs`, or (null) challenge
 * authorization with a peering key of its own.
 */
async function hostilePeer(trustAs: string | null, to: CircuitNode[]): Promise<Hostile> {
  const signer = new Signer(randomPrivateKey());
  const net = new PeerNetwork({
    bind: { host: '127.0.0.1', port: 0 },
    me: { nodeId: trustAs ?? 'hostile', signer },
    heartbeatMs: 500,
    retryMs: 200,
    retryMaxMs: 1000,
    handshakeMs: 10_000,
    queueTtlMs: 30_000,
    maxFrame: 16 * 1024 * 1024,
  });
  hostiles.push(net);
  net.setListener({ connected() {}, disconnected() {}, message() {} });
  await net.listen();
  const remote = (n: CircuitNode): Token => (trustAs === null ? challengeToken(n.peering) : n.id);
  const local: Token = trustAs ?? challengeToken(signer.publicKey);
  for (const n of to) net.addRef(remote(n), [n.endpoint], local);
  await until('the hostile peer connected', () => to.every((n) => net.isConnected(remote(n), local)));
  const send = (n: CircuitNode, type: number, payload: Uint8Array): void =>
    net.send(remote(n), local, encode(CircuitMessage, { messageType: type, payload }));
  return {
    service(n, circuit, sender, recipient, payload): void {
      send(n, CircuitMsgType.CIRCUIT_DIRECT, encode(CircuitDirectMessage, { circuit, sender, recipient, payload }));
    },
    admin(n, msg): void {
      const direct = encode(AdminDirectMessage, {
        circuit: 'admin',
        sender: `admin::${local}`,
        recipient: `admin::${n.id}`,
        payload: encode(AdminMessage, msg),
      });
      send(n, CircuitMsgType.ADMIN_DIRECT, direct);
    },
  };
}

const consensus = (sender: string, m: Record<string, unknown>): Uint8Array =>
  encodeScabbard(ScabbardMessage, {
    messageType: MsgType.CONSENSUS,
    consensusMessage: encode(ConsensusMessage, { message: encode(TwoPhaseMessage, m), originId: Buffer.from(sender, 'ascii') }),
  });

let initialRoot = '';

/** Round 1 of the trust circuit for `b`, as every member computes it (a state service run here). */
async function rightRound(t: Test, b: BuiltBatch): Promise<RoundRecordMsg> {
  const circuitId = 'shadow-1';
  const s = new ScabbardService({
    db: shadowDb,
    circuitId,
    serviceId: 'sA00',
    args: { peers: [], adminKeys: [A.admin.publicKey], coordinatorTimeoutMs: 5000, version: '2' },
    transport: { send() {}, reachable: () => false },
    verify: () => Promise.reject(new Error('not used: accept() takes batches as given')),
    roundMax: 200,
    queueHigh: 30,
    queueLow: 15,
  });
  try {
    await s.start();
    t.equal(s.stateRoot(), initialRoot, 'the shadow service starts from the circuit root');
    await s.accept([{ id: b.id, bytes: b.bytes }]);
    await until('shadow round 1', () => s.height === 1);
    const r = openStore<RoundRecordMsg, number>(shadowDb, scabbardDbNames(scabbardPrefix(circuitId, 'sA00')).rounds).get(1);
    if (!r) throw new Error('no round 1 in the shadow service');
    t.not(r.stateRoot, initialRoot, 'the round changes the state');
    return r;
  } finally {
    s.close();
  }
}

function proposalOf(id: Buffer, r: RoundRecordMsg): Uint8Array {
  const proposal = encodeScabbard(Proposal, {
    id,
    previousId: Buffer.from(initialRoot, 'ascii'),
    proposalHeight: 1,
    summary: Buffer.from(r.stateRoot, 'ascii'),
    consensusData: Buffer.from(r.verdicts, 'ascii'),
  });
  return encodeScabbard(ScabbardMessage, {
    messageType: MsgType.PROPOSED_BATCH,
    proposedBatch: { proposal, batch: Buffer.alloc(0), serviceId: 'sA00', batches: r.batches, timestampMs: r.timestampMs },
  });
}

/** The proposal round of the admin service for a create, with its id, as every member computes them. */
function adminProposal(spec: CircuitSpec): { id: string; msg: Record<string, unknown> } {
  const env = checkEnvelope(parsePayload(createPayload(A.admin, 'alpha', spec)));
  const circuit = env.payload.circuitCreateRequest?.circuit;
  if (!circuit) throw new Error('no circuit in the create payload');
  const proposal = {
    proposalType: ProposalType.CREATE,
    circuitId: circuit.circuitId,
    circuitHash: sha256Hex(encode(Circuit, circuit)),
    circuitProposal: circuit,
    votes: [],
    requester: env.header.requester,
    requesterNodeId: env.header.requesterNodeId,
  };
  return {
    id: sha256Hex(env.bytes),
    msg: {
      messageType: AdminType.PROPOSED_CIRCUIT,
      proposedCircuit: {
        circuitPayload: env.payload,
        expectedHash: Buffer.from(sha256Hex(encode(CircuitProposal, proposal)), 'ascii'),
        requiredVerifiers: encode(RequiredVerifiers, { verifiers: nodes.map((n) => Buffer.from(`admin::${n.id}`, 'ascii')) }),
      },
    },
  };
}

const adminConsensus = (from: string, m: Record<string, unknown>): Record<string, unknown> => ({
  messageType: AdminType.CONSENSUS,
  consensusMessage: encode(ConsensusMessage, { message: encode(TwoPhaseMessage, m), originId: Buffer.from(`admin::${from}`, 'ascii') }),
});

const linesOf = (n: CircuitNode, re: RegExp): string[] =>
  n.child
    .log()
    .split('\n')
    .filter((l) => re.test(l));

t.test('a trust circuit and a challenge circuit between the same three nodes start', async (t) => {
  trust = await startScabbardCircuit(nodes, 'ident-trst1', SVC, [A.admin.publicKey]);
  chall = await startScabbardCircuit(nodes, 'ident-chal1', KSVC, [A.admin.publicKey], 'challenge');
  const roots = await Promise.all(nodes.map((n) => root(n)));
  t.same(roots, [roots[0], roots[0], roots[0]], 'equal initial roots');
  initialRoot = roots[0] ?? '';
  t.same(await Promise.all(nodes.map((n) => root(n, chall))), roots, 'the challenge circuit starts at the same root');
});

const honest = batch('honest-one');
const forwarded = batch('honest-forwarded');

t.test('a peer connected as gamma speaks only for gamma, and only by the trust circuit', async (t) => {
  const round = await rightRound(t, honest);
  await C.child.stop();
  const g = await hostilePeer('gamma', [A, B]);
  const T = trust.circuitId;

  // As the coordinator's service: a right round, its verification request, its APPLY.
  const pid = Buffer.from(`spoofed-coordinator-${Date.now()}`, 'ascii');
  g.service(B, T, 'sA00', 'sB00', proposalOf(pid, round));
  g.service(B, T, 'sA00', 'sB00', consensus('sA00', { messageType: TwoPhase.VERIFICATION_REQUEST, proposalId: pid }));
  await sleep(1000); // beta's checks of the round are done (a member that heard it would have verified it now)
  g.service(
    B,
    T,
    'sA00',
    'sB00',
    consensus('sA00', { messageType: TwoPhase.RESULT, proposalId: pid, proposalResult: TwoPhase.APPLY, commitTimeMs: round.timestampMs }),
  );

  // As gamma's service of the challenge circuit: that circuit knows gamma by its peering key.
  g.service(B, chall.circuitId, 'kC00', 'kB00', encodeScabbard(ScabbardMessage, { messageType: MsgType.TOO_MANY_REQUESTS }));

  // As alpha's admin service: a create proposal of alpha's (signed by alpha's key), its verification request and APPLY.
  const spoof = adminProposal({ ...trust.spec, circuit_id: 'spoof-00001', display_name: 'spoof' });
  g.admin(B, spoof.msg);
  g.admin(B, adminConsensus('alpha', { messageType: TwoPhase.VERIFICATION_REQUEST, proposalId: Buffer.from(spoof.id, 'ascii') }));
  g.admin(
    B,
    adminConsensus('alpha', {
      messageType: TwoPhase.RESULT,
      proposalId: Buffer.from(spoof.id, 'ascii'),
      proposalResult: TwoPhase.APPLY,
      commitTimeMs: Date.now(),
    }),
  );
  // A ready message for alpha.
  g.admin(B, { messageType: AdminType.MEMBER_READY, memberReady: { circuitId: T, memberNodeId: 'alpha' } });

  // As gamma's own service of the trust circuit it is heard: a batch forwarded to the coordinator is stored.
  g.service(A, T, 'sC00', 'sA00', encodeScabbard(ScabbardMessage, { messageType: MsgType.NEW_BATCH, newBatch: forwarded.bytes }));
  await until('the forwarded batch stored', async () => (await statusOf(A, trust, forwarded.id)) === 'Pending');

  await sleep(1500);
  t.equal(await root(B), initialRoot, 'beta: state unchanged');
  t.not(await statusOf(B, trust, honest.id), 'Committed', 'beta: the spoofed round did not commit');
  t.equal((await get(B, trust, `/state/${contractRegistryAddress('honest-one')}`)).status, 404, 'beta: nothing written');
  t.equal((await B.call('GET', '/admin/proposals/spoof-00001', { auth: B.auth })).status, 404, 'beta: no proposal stored for the spoofed create');
  t.equal((await A.call('GET', '/admin/proposals/spoof-00001', { auth: A.auth })).status, 404, 'alpha never proposed it');
  t.match(
    linesOf(B, /service message from peer 'gamma' dropped/)[0],
    /service sA00 of circuit ident-trst1 runs on node 'alpha', which this peer is not/,
    'the warning names the service, its node and the peer',
  );
  t.match(B.child.log(), /from peer 'gamma' dropped: service kC00 of circuit ident-chal1 runs on node 'gamma'/, 'not gamma by the challenge circuit');
  t.match(B.child.log(), /consensus message from peer 'gamma' dropped: it is not node 'alpha'/, 'the consensus message is dropped');
  t.match(
    B.child.log(),
    /ready message from peer 'gamma' dropped: it is not member 'alpha' of circuit 'ident-trst1'/,
    'the ready message is dropped',
  );
  t.notMatch(A.child.log() + B.child.log(), /\n\s+at /, 'no stack trace in the logs');
  await hostiles.pop()?.close();
  await C.restart();
});

t.test('a node that is not a member, and a peer with a key of its own, speak for no service', async (t) => {
  // The batch gamma's peer forwarded commits once gamma is back; the state is still from here on.
  for (const n of nodes) t.equal(await statusOf(n, trust, forwarded.id, 30), 'Committed', `the forwarded batch committed on ${n.id}`);
  const before = await root(B);
  const d = await hostilePeer('delta', [B]);
  const k = await hostilePeer(null, [B]);
  const T = trust.circuitId;
  const busy = encodeScabbard(ScabbardMessage, { messageType: MsgType.TOO_MANY_REQUESTS });
  const pid = Buffer.from(`non-member-${Date.now()}`, 'ascii');
  d.service(B, T, 'sA00', 'sB00', consensus('sA00', { messageType: TwoPhase.RESULT, proposalId: pid, proposalResult: TwoPhase.APPLY }));
  k.service(B, T, 'sC00', 'sB00', busy);
  k.service(B, chall.circuitId, 'kA00', 'kB00', busy);
  // Spoofed recipient, unknown circuit, sender not in the roster, malformed ids.
  d.service(B, T, 'sB00', 'sA00', busy);
  d.service(B, 'nope0-00000', 'sA00', 'sB00', busy);
  d.service(B, T, 'zz99', 'sB00', busy);
  const odd = ['', 'x'.repeat(100_000), '\u{1F600}::sB00', `${T}::sB00`, '::', 'sB00::', 'sB00\n', '\u0000'];
  for (const s of odd) {
    d.service(B, s, 'sA00', 'sB00', busy);
    d.service(B, T, s, 'sB00', busy);
    d.service(B, T, 'sA00', s, busy);
  }
  d.admin(B, adminConsensus('x'.repeat(50_000), { messageType: TwoPhase.VERIFICATION_REQUEST, proposalId: Buffer.alloc(0) }));
  d.admin(B, { messageType: AdminType.MEMBER_READY, memberReady: { circuitId: '::'.repeat(1000), memberNodeId: '' } });
  for (let i = 0; i < 100; i++) d.service(B, T, 'sA00', 'sB00', busy);
  await until('beta drops them', () => linesOf(B, /from peer 'delta' dropped: circuit 'nope0-00000'/).length > 0);
  await until('beta drops the keyed peer', () => linesOf(B, /from peer 'public_key::[0-9a-f]{66}' dropped/).length >= 2);
  await sleep(500);
  const fromDelta = linesOf(B, /from peer 'delta' dropped/);
  t.ok(
    fromDelta.some((l) => l.includes(`service sA00 of circuit ident-trst1 runs on node 'alpha', which this peer is not`)),
    'not alpha',
  );
  t.ok(
    fromDelta.some((l) => l.includes(`service 'sA00' of circuit ident-trst1 does not run on this node`)),
    'spoofed recipient',
  );
  t.ok(
    fromDelta.some((l) => l.includes(`service 'zz99' is not in the roster of circuit ident-trst1`)),
    'sender not in the roster',
  );
  t.ok(
    fromDelta.some((l) => l.includes(`ready message from peer 'delta' dropped`)),
    'a ready message for nobody',
  );
  t.ok(fromDelta.length <= 8, `rate limited: ${fromDelta.length} warnings for ${3 * odd.length + 106} messages`);
  t.ok(
    fromDelta.every((l) => l.length < 600),
    'ids are cut short in the warnings',
  );
  const keyed = linesOf(B, /from peer 'public_key::[0-9a-f]{66}' dropped/);
  t.ok(
    keyed.some((l) => l.includes(`service sC00 of circuit ident-trst1 runs on node 'gamma'`)),
    'a key is no trust identity',
  );
  t.ok(
    keyed.some((l) => l.includes(`service kA00 of circuit ident-chal1 runs on node 'alpha'`)),
    'a key of its own is not alpha’s',
  );
  t.notMatch(B.child.log(), /\n\s+at /, 'no stack trace in the logs');
  t.equal((await B.call('GET', '/status', { auth: B.auth })).status, 200, 'beta still answers');
  t.equal(await root(B), before, 'beta: state unchanged');
  await hostiles.pop()?.close();
  await hostiles.pop()?.close();
});

t.test('the honest path commits on both circuits', async (t) => {
  const post = async (n: CircuitNode, c: ScabbardCircuit, b: BuiltBatch): Promise<number> => {
    const res = await fetch(`${n.url}${c.base(n)}/batches`, {
      method: 'POST',
      headers: { authorization: `Bearer ${n.auth}`, 'content-type': 'application/octet-stream' },
      body: Buffer.from(buildBatchList([b])),
    });
    await res.text();
    return res.status;
  };
  t.equal(await post(B, trust, honest), 202);
  const other = batch('honest-challenge');
  t.equal(await post(C, chall, other), 202);
  for (const n of nodes) {
    t.equal(await statusOf(n, trust, honest.id, 30), 'Committed', `trust circuit: committed on ${n.id}`);
    t.equal(await statusOf(n, chall, other.id, 30), 'Committed', `challenge circuit: committed on ${n.id}`);
  }
  const roots = await Promise.all(nodes.map((n) => root(n)));
  t.same(roots, [roots[0], roots[0], roots[0]], 'trust circuit: equal roots');
  t.not(roots[0], initialRoot, 'trust circuit: the state changed');
  const kroots = await Promise.all(nodes.map((n) => root(n, chall)));
  t.same(kroots, [kroots[0], kroots[0], kroots[0]], 'challenge circuit: equal roots');
});
