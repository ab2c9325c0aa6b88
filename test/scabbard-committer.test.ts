/**
 * A circuit ledger's committer, in-process (src/scabbard/compose.ts): the agreed-rounds
 * source and the agreement consensus on the committer seam. A coordinator's round is
 * summarized and written only once decided; a refused round writes nothing and is built
 * again; a member's proposal that does not decode, or does not follow its tip, is answered
 * `follows: false` without stopping the thread; a catch-up round that gives another root
 * is not written; a committer thread whose write fails is replaced, and the round commits.
 */
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Signer, randomPrivateKey } from '../src/crypto/secp256k1.js';
import { openEnv } from '../src/store/db.js';
import { buildBatch } from '../src/ledger/build.js';
import type { BlockEvent, CommitterOptions, FromCommitter } from '../src/ledger/protocol.js';
import type { RoundSummary } from '../src/scabbard/protocol.js';
import { composeCircuitCommitter, type CircuitCommitter } from '../src/scabbard/compose.js';
import { createContractRegistryTxn } from '../src/scabbard/payloads.js';
import { contractRegistryAddress } from '../src/scabbard/sabre.js';
import { BatchListMsg, encode } from '../src/scabbard/proto.js';
import { openCircuitStores, scabbardPrefix } from '../src/scabbard/records.js';
import { ScabbardService } from '../src/scabbard/service.js';
import { StateReader } from '../src/state/reader.js';
import { HEAD_KEY, type ChainHead } from '../src/store/ledger-stores.js';

const admin = new Signer(randomPrivateKey());
const OPTS: CommitterOptions = {
  dataDir: '',
  nodeKeyFile: '',
  maxBatchesPerBlock: 0,
  minBlockIntervalMs: 0,
  queueMultiplier: 1,
  queueInitialAverage: 1,
};

const batch = (name: string) => buildBatch(admin, [createContractRegistryTxn(admin, name, [admin.publicKey])]);

function start(t: Test, coordinator: boolean, tag: string) {
  const dir = mkdtempSync(join(tmpdir(), `cairn-scabbard-committer-${tag}-`));
  const db = openEnv(dir);
  const events: FromCommitter[] = [];
  const wakes = new Set<() => void>();
  const post = (m: FromCommitter): void => {
    events.push(m);
    for (const w of [...wakes]) w();
  };
  const c: CircuitCommitter = composeCircuitCommitter(
    db,
    new Signer(randomPrivateKey()),
    OPTS,
    { circuitId: 'c0', serviceId: coordinator ? 'a' : 'b', coordinator, adminKeys: [admin.publicKey], roundMax: 10 },
    post,
  );
  const next = <T extends FromCommitter>(pick: (m: FromCommitter) => m is T, from = 0): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no such message within 10 s')), 10_000);
      const look = (): void => {
        const m = events.slice(from).find(pick);
        if (!m) return;
        clearTimeout(timer);
        wakes.delete(look);
        resolve(m);
      };
      wakes.add(look);
      look();
    });
  t.teardown(async () => {
    await c.committer.close();
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const stores = openCircuitStores(db, scabbardPrefix('c0', coordinator ? 'a' : 'b'));
  const head = (): ChainHead => {
    db.resetReadTxn();
    return stores.ledger.meta.get(HEAD_KEY) as ChainHead;
  };
  const state = new StateReader(stores.ledger, { leafEncoding: 'raw' });
  return { c, events, next, head, stores, state };
}

const isSummary = (m: FromCommitter): m is RoundSummary => m.type === 'summary';
const isBlock = (m: FromCommitter): m is BlockEvent => m.type === 'block';

t.test('coordinator: a round is written only once decided; a refused one writes nothing and is built again', async (t) => {
  const s = start(t, true, 'coord');
  await s.c.committer.init();
  const root0 = s.head().stateRoot;
  const b = batch('first');
  s.c.rounds.add([{ id: b.id, bytes: b.bytes }]);
  const first = await s.next(isSummary);
  t.ok(first.follows, 'summarized');
  t.same(first.included, [b.id], 'the batch is in the round');
  t.equal(first.height, 1);
  t.equal(first.parentRoot, root0);
  t.equal(s.events.filter(isBlock).length, 0, 'nothing written before the decision');

  const at = s.events.length;
  s.c.consensus.decide(first.id, false, 50);
  const again = await s.next(isSummary, at);
  t.not(again.id, first.id, 'built again after the pause (a new round id)');
  t.equal(again.height, 1, 'on the same tip');
  t.equal(again.parentRoot, root0);
  t.equal(s.head().stateRoot, root0, 'the refused round wrote nothing');

  s.c.consensus.decide(again.id, true);
  const written = await s.next(isBlock);
  t.same(written.round && { id: written.round.id, height: written.round.height }, { id: again.id, height: 1 });
  t.same(written.committed, [b.id]);
  t.equal(s.head().stateRoot, again.root, 'the head is the summarized root');
  t.ok(s.state.get(again.root, contractRegistryAddress('first')), 'its state is readable from another reader');
  t.equal(s.stores.status.get(b.id)?.s, 'C', 'the status is stored with the round');
  t.equal(s.stores.rounds.get(1)?.stateRoot, again.root, 'the round is logged');
});

t.test('coordinator: a pause ends with its timer even when the wall clock lags behind it', async (t) => {
  const s = start(t, true, 'lag');
  await s.c.committer.init();
  const b = batch('lagging clock');
  s.c.rounds.add([{ id: b.id, bytes: b.bytes }]);
  const first = await s.next(isSummary);
  // The wall clock runs 1 s behind from the refusal on: the pause's end (by Date.now()) is
  // still ahead when its 50 ms timer fires, as it can be by a fraction of a millisecond.
  const realNow = Date.now;
  let lag = 0;
  Date.now = () => realNow() - lag;
  t.teardown(() => {
    Date.now = realNow;
  });
  const at = s.events.length;
  s.c.consensus.decide(first.id, false, 50);
  lag = 1000;
  const again = await s.next(isSummary, at);
  Date.now = realNow;
  // (Its id may equal the first one's: the lagging clock can give it the same time.)
  t.ok(s.events.indexOf(again) >= at, 'summarized again once the timer fired');
  t.same(again.included, [b.id], 'with the batch');
});

t.test('member: hostile proposals are answered, not executed; a following one is; a wrong catch-up round is not written', async (t) => {
  const s = start(t, false, 'member');
  await s.c.committer.init();
  const root0 = s.head().stateRoot;
  const b = batch('second');
  const list = encode(BatchListMsg, { batches: [b.bytes] });

  s.c.rounds.propose({ id: 'garbage', height: 1, ts: 1000, parentRoot: root0, batches: Buffer.from('not a batch list at all') });
  const g = await s.next((m): m is RoundSummary => isSummary(m) && m.id === 'garbage');
  t.notOk(g.follows, 'an undecodable proposal is not executed');
  s.c.rounds.propose({ id: 'ahead', height: 5, ts: 1000, parentRoot: root0, batches: list });
  const a = await s.next((m): m is RoundSummary => isSummary(m) && m.id === 'ahead');
  t.notOk(a.follows, 'a proposal beyond the tip is not executed');
  t.equal(a.height, 0, 'the member says where it is');

  s.c.rounds.propose({ id: 'good', height: 1, ts: 2000, parentRoot: root0, batches: list });
  const ok = await s.next((m): m is RoundSummary => isSummary(m) && m.id === 'good');
  t.ok(ok.follows, 'the following proposal is executed');
  s.c.consensus.decide('good', true);
  const w = await s.next(isBlock);
  t.equal(w.round?.ts, 2000, 'written with the proposed time');
  t.equal(s.head().stateRoot, ok.root);

  // A fetched round 2 whose root is not what it gives here: nothing written.
  const c = batch('third');
  s.c.rounds.catchUp('a', [{ height: 2, ts: 3000, batches: encode(BatchListMsg, { batches: [c.bytes] }), root: 'f'.repeat(64), verdicts: 'x' }]);
  await new Promise((r) => setTimeout(r, 300));
  t.equal(s.head().stateRoot, ok.root, 'the head stays');
  t.equal(s.events.filter(isBlock).length, 1, 'no round written');
  t.notOk(
    s.events.some((m) => m.type === 'fatal'),
    'the committer did not stop',
  );
});

t.test('a circuit committer whose write fails is replaced; the round commits on the new thread', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-scabbard-recovery-'));
  const db = openEnv(dir);
  const s = new ScabbardService({
    db,
    circuitId: 'c1',
    serviceId: 'a',
    args: { peers: [], adminKeys: [admin.publicKey], coordinatorTimeoutMs: 5000, version: '2' },
    transport: { send() {}, reachable: () => false },
    verify: () => Promise.reject(new Error('not used: accept() takes batches as given')),
    roundMax: 200,
    queueHigh: 30,
    queueLow: 15,
  });
  t.teardown(async () => {
    await s.close();
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const saved = process.env.CAIRN_TEST_FAULTS;
  // The first round's transaction fails (the thread reads the variable when it starts).
  process.env.CAIRN_TEST_FAULTS = 'circuit.write:EIO@1';
  try {
    await s.start();
  } finally {
    if (saved === undefined) delete process.env.CAIRN_TEST_FAULTS;
    else process.env.CAIRN_TEST_FAULTS = saved;
  }
  const root0 = s.stateRoot();
  const b = batch('after-a-fault');
  await s.accept([{ id: b.id, bytes: b.bytes }]);
  await s.waitSettled([b.id], 20_000);
  t.equal(s.status(b.id).type, 'Committed', 'committed by the new committer thread');
  t.equal(s.height, 1, 'round 1, written once');
  t.not(s.stateRoot(), root0, 'the state changed');
  t.ok(s.get(contractRegistryAddress('after-a-fault')), 'its state is readable');
});
