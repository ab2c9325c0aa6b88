/**
 * A ledger is an instance of the engine built from a description: two of them run in one
 * process on one LMDB environment (different sub-database prefixes, pending pools of their
 * own), and their chains, states and statuses are independent.
 */
import t from 'tap';
import { join } from 'node:path';
import { decode } from '../src/codec/cbor.js';
import { intkeyAddress } from '../src/families/intkey.js';
import { Ledger } from '../src/ledger/ledger.js';
import { NODE_LEDGER, type LedgerDescription } from '../src/ledger/description.js';
import { rootOf } from '../src/state/merkle.js';
import { startTestNode } from './helpers/node.js';
import { batchList, intkeyBatch, newSigner, postBatches, waitCommitted } from './helpers/batches.js';

const OTHER: LedgerDescription = {
  storePrefix: 'circuit-test',
  pendingFile: 'pending.circuit-test.mdb',
  families: ['intkey', 'sawtooth_settings'],
  leafEncoding: 'raw',
  genesis: 'devmode-settings',
  projectors: [],
};

t.test('two ledgers in one process and one LMDB environment keep their chains, states and statuses apart', async (t) => {
  const n = await startTestNode();
  t.teardown(() => n.stop());
  const start = (): Promise<Ledger> =>
    Ledger.start({
      config: n.node.config,
      db: n.node.db,
      nodeSigner: n.node.nodeSigner,
      nodeKeyFile: join(n.dataDir, 'keys', 'validator.priv'),
      description: OTHER,
    });
  let other = await start();
  t.teardown(() => other.close());
  const main = n.node.ledger;
  t.equal(main.description, NODE_LEDGER, 'the node runs its own ledger');

  const signer = newSigner();
  const a = intkeyBatch(signer, [['set', 'shared', 1]]);
  const b = intkeyBatch(signer, [
    ['set', 'shared', 2],
    ['set', 'only-other', 5],
  ]);

  // One batch to each: the node's through its ledger gateway, the other's through its engine.
  const posted = await postBatches(n.ledgerUrl, batchList(a));
  t.equal(posted.status, 202, 'accepted by the node ledger');
  const r = await other.submit(batchList(b));
  t.same(r, { ok: true, ids: [b.id] }, 'accepted by the other ledger');
  await waitCommitted(n.ledgerUrl, [a.id]);
  await other.waitFor([b.id], 20_000);

  t.equal(main.status(a.id).status, 'COMMITTED');
  t.equal(main.status(b.id).status, 'UNKNOWN', "the other ledger's batch is unknown to the node's");
  t.equal(other.status(b.id).status, 'COMMITTED');
  t.equal(other.status(a.id).status, 'UNKNOWN', "the node's batch is unknown to the other ledger");

  // Chains: each has its own genesis and its own block 1.
  const mh = main.query.head();
  const oh = other.query.head();
  t.equal(oh.blockNum, 1, 'the other chain is genesis plus one block');
  t.not(main.query.blockId(0), other.query.blockId(0), 'two different genesis blocks');
  t.equal(other.query.block(mh.blockId), undefined, "the node's head is not in the other chain");
  t.equal(main.query.block(oh.blockId), undefined, "the other head is not in the node's chain");
  t.same(other.query.batchPos(b.id), [1, 0]);
  t.equal(other.query.batchPos(a.id), undefined);
  t.equal(main.query.batchPos(b.id), undefined);
  t.ok(other.query.receipt(b.txnIds[1]!), 'receipt in the other ledger');
  t.equal(main.query.receipt(b.txnIds[1]!), undefined, 'no such receipt in the node ledger');

  // States: same address, different values; the other ledger's leaves use the raw encoding.
  const addr = intkeyAddress('shared');
  const value = (l: Ledger, root: string): unknown => {
    const v = l.query.state.get(root, addr);
    return v && (decode(v) as Map<string, number>).get('shared');
  };
  t.equal(value(main, mh.stateRoot), 1);
  t.equal(value(other, oh.stateRoot), 2);
  t.equal(main.query.state.get(mh.stateRoot, intkeyAddress('only-other')), undefined);
  const leaves = new Map([...other.query.state.entries(oh.stateRoot, '')].map((e) => [e.address, e.value] as [string, Uint8Array]));
  t.ok(leaves.size >= 4, 'settings and intkey leaves');
  t.equal(rootOf(leaves, 'raw'), oh.stateRoot, 'the other root is the raw-leaf root of its leaves');
  t.not(rootOf(leaves, 'cbor'), oh.stateRoot);
  const mainLeaves = new Map([...main.query.state.entries(mh.stateRoot, '')].map((e) => [e.address, e.value] as [string, Uint8Array]));
  t.equal(rootOf(mainLeaves, 'cbor'), mh.stateRoot, 'the node root is the Sawtooth root of its leaves');

  // The other ledger survives a restart of its engine on its own stores and pending pool.
  await other.close();
  other = await start();
  t.same(other.query.head(), oh, 'same head after a restart');
  t.equal(other.status(b.id).status, 'COMMITTED');
  const c = intkeyBatch(signer, [['inc', 'shared', 3]]);
  t.same(await other.submit(batchList(c)), { ok: true, ids: [c.id] });
  await other.waitFor([c.id], 20_000);
  t.equal(value(other, other.query.head().stateRoot), 5, 'the other ledger builds on its own state');
  t.equal(value(main, main.query.head().stateRoot), 1, "the node's state is untouched");
});
