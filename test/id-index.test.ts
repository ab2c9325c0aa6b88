/**
 * The id index (src/store/id-index.ts): lookups over real LMDB id records, ids that share
 * their 32-bit tag, growth, damaged records; and a data directory in the former layout
 * (id-keyed indexes) that a node brings to the new one on start, serving the same answers.
 */
import t from 'tap';
import { checkDataDir, must, randomId, taggedId, tempIdStores } from './helpers/id-stores.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IdIndex, encodeIdRecord, encodeReceipts, receiptAt } from '../src/store/id-index.js';
import { openEnv } from '../src/store/db.js';
import { openLedgerStores } from '../src/store/ledger-stores.js';
import { ledgerDbNames } from '../src/store/names.js';
import { Block, TransactionReceipt, decode, encode } from '../src/proto/index.js';
import { startTestNode } from './helpers/node.js';
import { newSigner, intkeyBatch, batchList, postBatches, waitCommitted, getJson } from './helpers/batches.js';

/** The status of each batch, once all are settled (or after 10 s). */
async function statuses(ledgerUrl: string, batches: ReadonlyArray<{ id: string }>): Promise<string[]> {
  const st: Array<{ status: string }> = await waitCommitted(
    ledgerUrl,
    batches.map((b) => b.id),
  );
  return st.map((s) => s.status);
}

const id = randomId;
const tagged = taggedId;

const tempStores = tempIdStores;

t.test('lookups over stored id records', async (t) => {
  const s = tempStores(t);
  const ix = new IdIndex(s);
  t.equal(ix.through, -1, 'nothing indexed yet');
  const same = '0badcafe';
  const b0 = { id: tagged(same), txns: [tagged(same), id()] };
  const b1 = { id: id(), txns: [] as string[] };
  const b2 = { id: id(), txns: [id(), id(), tagged(same)] };
  await s.blockIds.put(0, encodeIdRecord([b0, b1, b2]));
  // Stored without their transaction ids, as the chain writer stores them.
  await s.receipts.put(0, encodeReceipts(['r0', 'r1', 'r2', 'r3', 'r4'].map((r) => encode(TransactionReceipt, { data: [Buffer.from(r)] }))));
  t.same(ix.batch(b0.id), [0, 0]);
  t.same(ix.batch(b1.id), [0, 1], 'a batch without transactions');
  t.same(ix.batch(b2.id), [0, 2]);
  t.same(ix.txn(must(b0.txns[0])), [0, 0, 0], 'same tag as its batch, told apart');
  t.same(ix.txn(must(b0.txns[1])), [0, 0, 1]);
  t.same(ix.txn(must(b2.txns[0])), [0, 2, 0], 'past the empty batch');
  t.same(ix.txn(must(b2.txns[2])), [0, 2, 2]);
  const r3 = decode<{ data: Buffer[]; transactionId: string }>(TransactionReceipt, must(ix.receipt(must(b2.txns[1]))));
  t.same([r3.data.map(String), r3.transactionId], [['r3'], b2.txns[1]], 'the receipt, with its transaction id');
  t.equal(ix.receipt(id()), undefined, 'no receipt for an unknown transaction');
  t.equal(ix.batch(must(b0.txns[0])), undefined, 'a transaction id is not a batch');
  t.equal(ix.txn(b0.id), undefined, 'a batch id is not a transaction');
  t.notOk(ix.hasBatch(tagged(same)), 'an unknown id with a known tag');
  t.notOk(ix.hasTxn(id()));
  for (const bad of ['', 'zz', b0.id.toUpperCase(), `${b0.id}00`, b0.id.slice(0, 127)])
    t.equal(ix.batch(bad), undefined, `not an id: ${bad.slice(0, 12)}`);
  t.equal(ix.through, 0);

  // Blocks stored later are picked up by the next lookup.
  const later = { id: id(), txns: [id()] };
  await s.blockIds.put(1, encodeIdRecord([later]));
  await s.receipts.put(1, encodeReceipts([Buffer.from('x')]));
  t.same(ix.txn(must(later.txns[0])), [1, 0, 0]);
  t.equal(ix.size, 10, 'three batches and five transactions, then one of each');
});

t.test('a ledger whose first block is block 1 (a circuit ledger starts at an initial head without a block)', async (t) => {
  const s = tempStores(t);
  const ix = new IdIndex(s);
  const first = { id: id(), txns: [id()] };
  t.notOk(ix.hasBatch(first.id), 'no blocks yet');
  await s.blockIds.put(1, encodeIdRecord([first]));
  const second = { id: id(), txns: [id()] };
  await s.blockIds.put(2, encodeIdRecord([second]));
  t.same(ix.batch(first.id), [1, 0]);
  t.same(ix.txn(must(second.txns[0])), [2, 0, 0]);
  t.equal(ix.through, 2);
});

t.test('the table grows and keeps every id, tags shared or not', async (t) => {
  const s = tempStores(t);
  const ix = new IdIndex(s);
  const all: Array<{ id: string; txns: string[] }[]> = [];
  for (let blk = 0; blk < 40; blk++) {
    // One id in ten shares a tag with many others.
    const batches = Array.from({ length: 100 }, (_, i) => ({ id: i % 10 === 0 ? tagged('00000000') : id(), txns: [id()] }));
    all.push(batches);
    await s.blockIds.put(blk, encodeIdRecord(batches));
  }
  let found = 0;
  for (const [blk, batches] of all.entries()) {
    for (const [bi, b] of batches.entries()) {
      const p = ix.batch(b.id);
      const q = ix.txn(must(b.txns[0]));
      if (p?.[0] === blk && p[1] === bi && q?.[0] === blk && q[1] === bi && q[2] === 0) found++;
    }
  }
  t.equal(found, 4000, 'every batch and transaction where it is');
  t.equal(ix.size, 8000);
  t.notOk(ix.hasBatch(tagged('00000000')), 'a crowded tag still answers no for an unknown id');
});

t.test('damaged records and ids that cannot be stored', async (t) => {
  const s = tempStores(t);
  await s.blockIds.put(0, Buffer.from([1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]));
  t.throws(() => new IdIndex(s).hasBatch(id()), /id record of block 0 is damaged/);
  t.throws(() => encodeIdRecord([{ id: 'abc', txns: [] }]), /not an id/);
  const r = encodeReceipts([Buffer.from('a'), Buffer.from('bc')]);
  t.equal(receiptAt(r, 1)?.toString(), 'bc');
  t.equal(receiptAt(r, 2), undefined);
  t.equal(receiptAt(r, -1), undefined);
  t.equal(receiptAt(Buffer.alloc(2), 0), undefined);
  t.equal(receiptAt(r.subarray(0, 6), 0), undefined, 'a cut record');
});

t.test('a data directory with the former id indexes is migrated on start', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-ids-old-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const signer = newSigner();
  const batches = Array.from({ length: 12 }, (_, i) => intkeyBatch(signer, [['set', `m${i}`, i]]));
  let n = await startTestNode({}, dir);
  for (const b of batches) t.equal((await postBatches(n.ledgerUrl, batchList(b))).status, 202);
  t.same(
    await statuses(n.ledgerUrl, batches),
    batches.map(() => 'COMMITTED'),
  );
  const txnId = must(must(batches[5]).txnIds[0]);
  const before = await getJson(`${n.ledgerUrl}/receipts?id=${txnId}`);
  t.equal(before.status, 200);
  await n.stop({ keepData: true });

  // Back to the former layout: id-keyed indexes (the receipt in the transaction's entry), no records.
  const root = openEnv(dir);
  const s = openLedgerStores(root);
  const names = ledgerDbNames(s.prefix);
  const bIx = root.openDB<unknown, string>(names.legacyBatchIndex, {});
  const tIx = root.openDB<unknown, string>(names.legacyTxnIndex, {});
  const ix = new IdIndex(s);
  await root.transaction(() => {
    for (const { key: num, value } of s.blockByNum.getRange({})) {
      const block = decode(Block, must(s.blocks.get(value)));
      block.batches.forEach((b, bi) => {
        bIx.put(b.headerSignature, [num, bi]);
        for (const [ti, tx] of b.transactions.entries()) tIx.put(tx.headerSignature, [num, bi, ti, ix.receipt(tx.headerSignature)]);
      });
      s.blockIds.remove(num);
      s.receipts.remove(num);
    }
  });
  const blocks = s.blockByNum.getKeysCount();
  t.ok(blocks >= 2, `${blocks} blocks in the old layout`);
  await root.close();
  t.match((await checkDataDir(dir)).problems.join('\n'), /id record is missing/, 'the check says what the old layout lacks');

  n = await startTestNode({}, dir);
  t.teardown(() => n.stop({ keepData: true }));
  t.same(
    await statuses(n.ledgerUrl, batches),
    batches.map(() => 'COMMITTED'),
    'every batch still committed',
  );
  const after = await getJson(`${n.ledgerUrl}/receipts?id=${txnId}`);
  t.equal(after.status, 200);
  t.same(after.json.data, before.json.data, 'the same receipt');
  t.equal(after.json.data[0].id, txnId);
  const one = await getJson(`${n.ledgerUrl}/batches/${must(batches[7]).id}`);
  t.equal(one.json.data.header_signature, must(batches[7]).id);
  const more = intkeyBatch(signer, [['set', 'after', 1]]);
  t.equal((await postBatches(n.ledgerUrl, batchList(more))).status, 202);
  t.equal((await waitCommitted(n.ledgerUrl, [more.id]))[0].status, 'COMMITTED', 'and the chain goes on');
  await n.stop({ keepData: true });
  const report = await checkDataDir(dir);
  t.same(report.problems, [], 'the check finds nothing wrong');
  t.equal(report.batches, 14, 'the genesis batch, the twelve and the one after');
  const again = openEnv(dir);
  t.equal(again.openDB(names.legacyBatchIndex, {}).getKeysCount(), 0, 'the old batch index is emptied');
  t.equal(again.openDB(names.legacyTxnIndex, {}).getKeysCount(), 0, 'the old transaction index is emptied');
  await again.close();
});
