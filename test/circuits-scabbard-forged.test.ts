/**
 * Circuit members check batch signatures themselves (docs/circuits.md): a hostile peer
 * speaks the real peer protocol to the member node processes, as the node of a member
 * (trust authorization with that member's node id, the real member stopped), and sends
 * batches whose signatures are forged (valid structure and payload hash; the transaction
 * and the batch claim an admin key but are signed by another key):
 *  - a proposal (as the coordinator's node) with the right state root and verdicts, then
 *    its APPLY: the members answer FAILED and commit nothing;
 *  - a catch-up round with the right root and verdicts: not applied;
 *  - a forwarded batch (as a non-coordinator's node): the coordinator drops it, while an
 *    honest batch forwarded the same way is stored and commits once every member is back.
 * The right roots and verdicts come from a state service run in this process on its own
 * LMDB environment, fed the forged batch directly (what a member without the checks
 * would compute).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { buildBatch, buildBatchList, type BuiltBatch } from '../src/ledger/build.js';
import { Signer, randomPrivateKey } from '../src/crypto/secp256k1.js';
import { createContractRegistryTxn } from '../src/scabbard/payloads.js';
import { ScabbardService, scabbardPrefix } from '../src/scabbard/service.js';
import { contractRegistryAddress } from '../src/scabbard/sabre.js';
import { MsgType, Proposal, ScabbardMessage, decode, encode, type RoundRecordMsg, type ScabbardMsg } from '../src/scabbard/proto.js';
import { CircuitDirectMessage, CircuitMessage, CircuitMsgType, ConsensusMessage, TwoPhase, TwoPhaseMessage } from '../src/proto/circuits.js';
import { PeerNetwork } from '../src/circuits/peers.js';
import { openEnv } from '../src/store/db.js';
import { scabbardDbNames } from '../src/store/names.js';
import { startCircuitNodes, type CircuitNode } from './helpers/circuits.js';
import { startScabbardCircuit, type ScabbardCircuit } from './helpers/scabbard.js';
import { openStore } from '../src/store/checksum.js';

const { nodes, stop } = await startCircuitNodes(['alpha', 'beta', 'gamma']);
const [A, B, C] = nodes as [CircuitNode, CircuitNode, CircuitNode];
const SVC: Record<string, string> = { alpha: 'sA00', beta: 'sB00', gamma: 'sC00' };
const CIRCUIT = 'forge-00001';
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
let circuit: ScabbardCircuit;
const get = async (n: CircuitNode, path: string): Promise<{ status: number; body: any }> =>
  n.call('GET', `${circuit.base(n)}${path}`, { auth: n.auth });
const root = async (n: CircuitNode): Promise<string> => (await get(n, '/state_root')).body as string;
const statusOf = async (n: CircuitNode, id: string, wait = 0): Promise<string> =>
  ((await get(n, `/batch_statuses?ids=${id}&wait=${wait}`)).body as Array<{ status: { statusType: string } }>)[0]?.status.statusType ?? 'none';

async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/**
 * A batch claiming `claimed` (the transaction's signer and the batcher) but signed by
 * another key: well formed, payload hash right, both signatures wrong.
 */
function forged(claimed: Signer, name: string): BuiltBatch {
  const other = new Signer(randomPrivateKey());
  const fake = { publicKey: claimed.publicKey, sign: (m: Uint8Array | string) => other.sign(m) } as unknown as Signer;
  return buildBatch(fake, [createContractRegistryTxn(fake, name, [claimed.publicKey])]);
}

/** A vote a member sent to the hostile coordinator. */
interface Vote {
  node: string;
  proposalId: string;
  verified: boolean;
}

/** A peer in this process: the node `me` of the circuit as the others' peer network sees it. */
async function hostilePeer(me: string, to: CircuitNode[]): Promise<{ votes: Vote[]; send(to: CircuitNode, sender: string, msg: Uint8Array): void }> {
  const net = new PeerNetwork({
    bind: { host: '127.0.0.1', port: 0 },
    me: { nodeId: me, signer: new Signer(randomPrivateKey()) },
    heartbeatMs: 500,
    retryMs: 200,
    retryMaxMs: 1000,
    handshakeMs: 10_000,
    queueTtlMs: 30_000,
    maxFrame: 16 * 1024 * 1024,
  });
  hostiles.push(net);
  const votes: Vote[] = [];
  net.setListener({
    connected() {},
    disconnected() {},
    message(remote, _local, _type, payload) {
      try {
        const cm = decode<{ messageType: number; payload: Buffer }>(CircuitMessage, payload);
        if (cm.messageType !== CircuitMsgType.CIRCUIT_DIRECT) return;
        const d = decode<{ payload: Buffer }>(CircuitDirectMessage, cm.payload);
        const m = decode<ScabbardMsg>(ScabbardMessage, d.payload);
        if (m.messageType !== MsgType.CONSENSUS) return;
        const c = decode<{ message: Buffer }>(ConsensusMessage, m.consensusMessage);
        const tp = decode<{ messageType: number; proposalId: Buffer; proposalVerificationResponse: number }>(TwoPhaseMessage, c.message);
        if (tp.messageType === TwoPhase.VERIFICATION_RESPONSE)
          votes.push({ node: remote, proposalId: tp.proposalId.toString('ascii'), verified: tp.proposalVerificationResponse === TwoPhase.VERIFIED });
      } catch {
        // not a message this test reads
      }
    },
  });
  await net.listen();
  for (const n of to) net.addRef(n.id, [n.endpoint], me);
  await until(`${me} connected`, () => to.every((n) => net.isConnected(n.id, me)));
  return {
    votes,
    send(n, sender, msg): void {
      const direct = encode(CircuitDirectMessage, { circuit: CIRCUIT, sender, recipient: SVC[n.id], payload: msg });
      net.send(n.id, me, encode(CircuitMessage, { messageType: CircuitMsgType.CIRCUIT_DIRECT, payload: direct }));
    },
  };
}

const consensus = (sender: string, m: Record<string, unknown>): Uint8Array =>
  encode(ScabbardMessage, {
    messageType: MsgType.CONSENSUS,
    consensusMessage: encode(ConsensusMessage, { message: encode(TwoPhaseMessage, m), originId: Buffer.from(sender, 'ascii') }),
  });

let initialRoot = '';
let shadows = 0;

/**
 * Round 1 as a member that does not check signatures computes it for `batch` (root,
 * verdicts, batches, time): a state service run here on its own stores, given the batch
 * directly, alone in its circuit (it proposes to nobody and commits at once).
 */
async function shadowRound(t: Test, batch: BuiltBatch): Promise<RoundRecordMsg> {
  const circuitId = `shadow-${++shadows}`;
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
    await s.accept([{ id: batch.id, bytes: batch.bytes }]);
    await until('shadow round 1', () => s.height === 1);
    t.equal(s.status(batch.id).type, 'Committed', 'executed without checks, the batch commits');
    const r = openStore<RoundRecordMsg, number>(shadowDb, scabbardDbNames(scabbardPrefix(circuitId, 'sA00')).rounds).get(1);
    if (!r) throw new Error('no round 1 in the shadow service');
    t.not(r.stateRoot, initialRoot, 'the round changes the state');
    return r;
  } finally {
    s.close();
  }
}

function proposalOf(id: Buffer, r: RoundRecordMsg): Uint8Array {
  const proposal = encode(Proposal, {
    id,
    previousId: Buffer.from(initialRoot, 'ascii'),
    proposalHeight: 1,
    summary: Buffer.from(r.stateRoot, 'ascii'),
    consensusData: Buffer.from(r.verdicts, 'ascii'),
  });
  return encode(ScabbardMessage, {
    messageType: MsgType.PROPOSED_BATCH,
    proposedBatch: { proposal, batch: Buffer.alloc(0), serviceId: 'sA00', batches: r.batches, timestampMs: r.timestampMs },
  });
}

t.test('the circuit starts', async (t) => {
  circuit = await startScabbardCircuit(nodes, CIRCUIT, SVC, [A.admin.publicKey]);
  const roots = await Promise.all(nodes.map(root));
  t.same(roots, [roots[0], roots[0], roots[0]], 'equal initial roots');
  initialRoot = roots[0] ?? '';
});

// The proposal goes to beta only and the catch-up round to gamma only: each attack is seen
// on its own (without the checks, each of them alone commits the forged batch there).
const F1 = forged(A.admin, 'forged-one');
const F2 = forged(A.admin, 'forged-two');

t.test('a hostile coordinator: forged proposal answered FAILED, forged catch-up round not applied', async (t) => {
  const round1 = await shadowRound(t, F1);
  const round2 = await shadowRound(t, F2);
  const honest = buildBatch(A.admin, [createContractRegistryTxn(A.admin, 'honest-zero', [A.admin.publicKey])]);
  const roundH = await shadowRound(t, honest);

  await A.child.stop();
  const h = await hostilePeer('alpha', [B, C]);
  const forgedId = Buffer.from(`forged-proposal-${Date.now()}`, 'ascii');
  h.send(B, 'sA00', proposalOf(forgedId, round1));
  h.send(B, 'sA00', consensus('sA00', { messageType: TwoPhase.VERIFICATION_REQUEST, proposalId: forgedId }));
  await until('beta votes', () => h.votes.some((v) => v.proposalId === forgedId.toString('ascii')));
  t.same(
    h.votes.filter((v) => v.proposalId === forgedId.toString('ascii')),
    [{ node: 'beta', proposalId: forgedId.toString('ascii'), verified: false }],
    'beta answers FAILED',
  );
  const line =
    B.child
      .log()
      .split('\n')
      .find((l) => l.includes(`batch ${F1.id} fails the signature checks`)) ?? '';
  t.match(
    line,
    /round 1: batch [0-9a-f]{128} fails the signature checks \(batch 0: invalid signature\); not verified/,
    'the log names the round and the batch',
  );
  // The APPLY a hostile coordinator sends anyway.
  h.send(
    B,
    'sA00',
    consensus('sA00', { messageType: TwoPhase.RESULT, proposalId: forgedId, proposalResult: TwoPhase.APPLY, commitTimeMs: round1.timestampMs }),
  );

  // A forged catch-up round (right root and verdicts), as a peer's answer.
  h.send(C, 'sA00', encode(ScabbardMessage, { messageType: MsgType.CATCH_UP_RESPONSE, rounds: [round2] }));
  await until('gamma refuses the catch-up round', () => C.child.log().includes('catch-up from sA00 stopped, nothing applied'));
  t.match(C.child.log(), new RegExp(`round 1 from sA00: batch ${F2.id} fails the signature checks`), 'the log names the round and the batch');

  // The same round with an honestly signed batch is verified (the checks pass what they should) ...
  const okId = Buffer.from(`honest-proposal-${Date.now()}`, 'ascii');
  h.send(B, 'sA00', proposalOf(okId, roundH));
  h.send(B, 'sA00', consensus('sA00', { messageType: TwoPhase.VERIFICATION_REQUEST, proposalId: okId }));
  await until('beta votes again', () => h.votes.some((v) => v.proposalId === okId.toString('ascii')));
  t.same(
    h.votes.filter((v) => v.proposalId === okId.toString('ascii')).map((v) => v.verified),
    [true],
    'beta answers VERIFIED to an honest round',
  );
  h.send(B, 'sA00', consensus('sA00', { messageType: TwoPhase.RESULT, proposalId: okId, proposalResult: TwoPhase.REJECT }));
  // ... and a REJECT that arrives while its checks run leaves nothing held: the APPLY after it applies nothing.
  const lateId = Buffer.from(`rejected-proposal-${Date.now()}`, 'ascii');
  h.send(B, 'sA00', proposalOf(lateId, roundH));
  h.send(B, 'sA00', consensus('sA00', { messageType: TwoPhase.VERIFICATION_REQUEST, proposalId: lateId }));
  h.send(B, 'sA00', consensus('sA00', { messageType: TwoPhase.RESULT, proposalId: lateId, proposalResult: TwoPhase.REJECT }));
  h.send(
    B,
    'sA00',
    consensus('sA00', { messageType: TwoPhase.RESULT, proposalId: lateId, proposalResult: TwoPhase.APPLY, commitTimeMs: roundH.timestampMs }),
  );

  await sleep(1500);
  for (const n of [B, C]) {
    t.equal(await root(n), initialRoot, `${n.id}: state unchanged`);
    for (const b of [F1, F2, honest]) t.not(await statusOf(n, b.id), 'Committed', `${n.id}: batch ${b.id.slice(0, 8)} not committed`);
    for (const name of ['forged-one', 'forged-two'])
      t.equal((await get(n, `/state/${contractRegistryAddress(name)}`)).status, 404, `${n.id}: no registry ${name} written`);
  }
  t.notMatch(B.child.log() + C.child.log(), /\n\s+at /, 'no stack trace in the logs');
  await hostiles.pop()?.close();
  await A.restart();
});

t.test('a hostile member forwards a forged batch: the coordinator drops it, an honest one commits', async (t) => {
  await C.child.stop();
  const h = await hostilePeer('gamma', [A]);
  const F3 = forged(A.admin, 'forged-three');
  const honest = buildBatch(A.admin, [createContractRegistryTxn(A.admin, 'honest-one', [A.admin.publicKey])]);
  for (const b of [F3, honest]) h.send(A, 'sC00', encode(ScabbardMessage, { messageType: MsgType.NEW_BATCH, newBatch: b.bytes }));
  await until('the forged batch dropped', () => A.child.log().includes(`batch ${F3.id} forwarded by sC00 fails the signature checks`));
  await until('the honest batch stored', async () => (await statusOf(A, honest.id)) === 'Pending');
  t.equal(await statusOf(A, F3.id), 'Unknown', 'the forged batch is not stored');
  // Forwarded again (members do that every few seconds): checked and dropped again, never stored.
  const dropped = (): number => A.child.log().split(`batch ${F3.id} forwarded by sC00 fails the signature checks`).length - 1;
  const before = dropped();
  h.send(A, 'sC00', encode(ScabbardMessage, { messageType: MsgType.NEW_BATCH, newBatch: F3.bytes }));
  await until('the forged batch dropped again', () => dropped() > before);
  t.equal(await statusOf(A, F3.id), 'Unknown', 'still not stored');
  await hostiles.pop()?.close();
  await C.restart();
  for (const n of nodes) t.equal(await statusOf(n, honest.id, 30), 'Committed', `honest batch committed on ${n.id}`);
  for (const n of nodes) {
    t.equal(await statusOf(n, F1.id), 'Unknown', `${n.id}: forged proposal batch unknown`);
    t.equal(await statusOf(n, F2.id), 'Unknown', `${n.id}: forged catch-up batch unknown`);
    t.equal(await statusOf(n, F3.id), 'Unknown', `${n.id}: forged forwarded batch unknown`);
  }
  const roots = await Promise.all(nodes.map(root));
  t.same(roots, [roots[0], roots[0], roots[0]], 'equal roots');
});

t.test('HTTP intake still answers 400 for a forged batch, 202 for an honest one', async (t) => {
  const post = async (n: CircuitNode, bytes: Uint8Array): Promise<{ status: number; body: any }> => {
    const res = await fetch(`${n.url}${circuit.base(n)}/batches`, {
      method: 'POST',
      headers: { authorization: `Bearer ${n.auth}`, 'content-type': 'application/octet-stream' },
      body: Buffer.from(bytes),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
  const F4 = forged(A.admin, 'forged-four');
  const bad = await post(B, buildBatchList([F4]));
  t.equal(bad.status, 400);
  t.same(bad.body, { message: 'No valid batches provided: batch 0: invalid signature' });
  const junk = await post(B, Buffer.from([0xff, 0xff, 0xff]));
  t.equal(junk.status, 400);
  t.same(junk.body, { message: 'Invalid body: not a valid list of batches' });
  const good = buildBatch(B.admin, [createContractRegistryTxn(A.admin, 'honest-two', [A.admin.publicKey])]);
  t.equal((await post(B, buildBatchList([good]))).status, 400, 'a transaction batched by another key than its batch signer is refused');
  const ok = buildBatch(A.admin, [createContractRegistryTxn(A.admin, 'honest-two', [A.admin.publicKey])]);
  t.equal((await post(B, buildBatchList([ok]))).status, 202);
  for (const n of nodes) t.equal(await statusOf(n, ok.id, 30), 'Committed', `committed on ${n.id}`);
  const roots = await Promise.all(nodes.map(root));
  t.same(roots, [roots[0], roots[0], roots[0]], 'equal roots');
});
