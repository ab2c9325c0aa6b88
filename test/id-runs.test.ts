/**
 * The id index's runs on disk (src/store/id-runs.ts) under the table (src/store/id-index.ts):
 * blocks written as the chain writer writes them (id record, then the runs, in one
 * transaction), with a small run size so that runs, merges and runs too large to merge all
 * happen in a short chain. Every id is found where it is, from a thread that followed the
 * chain and from one that starts on it (a restart); the table stays small; an unknown id,
 * one that shares a tag, a failed transaction, a damaged chunk.
 */
import t from 'tap';
import { checkDataDir, must, randomId, taggedId, tempIdStores } from './helpers/id-stores.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IdIndex, encodeIdRecord } from '../src/store/id-index.js';
import { checkRuns, chunkKey, readRuns } from '../src/store/id-runs.js';
import { IdRunWriter } from '../src/store/id-run-writer.js';
import { CorruptRecordError } from '../src/store/alarms.js';
import { openEnv } from '../src/store/db.js';
import { openLedgerStores } from '../src/store/ledger-stores.js';
import { startTestNode } from './helpers/node.js';
import { newSigner, intkeyBatch, batchList, postBatches, waitCommitted, getJson } from './helpers/batches.js';

const id = randomId;
const tagged = taggedId;

type Block = Array<{ id: string; txns: string[] }>;

const tempStores = tempIdStores;

type Stores = ReturnType<typeof tempStores>;

/** Writes block `num` as the chain writer does: its id record and what it makes due, in one (child) transaction. */
async function writeBlock(s: Stores, w: IdRunWriter, num: number, batches: Block): Promise<void> {
  await s.root.childTransaction(() => {
    s.blockIds.put(num, encodeIdRecord(batches));
    w.afterBlock(num);
  });
}

/**
 * Writes blocks of one batch until the writer has nothing under way: a run is made between
 * blocks and written with the next one. Returns the next block number.
 */
async function settle(s: Stores, w: IdRunWriter, blocks: Block[], num: number): Promise<number> {
  while (w.busy) {
    await w.idle();
    const batches = [{ id: id(), txns: [] as string[] }];
    blocks.push(batches);
    await writeBlock(s, w, num++, batches);
  }
  return num;
}

/** How many ids of `blocks` (numbered from `first`) the index finds where they are. */
function foundAll(ix: IdIndex, blocks: Block[], first = 0): number {
  let found = 0;
  blocks.forEach((batches, k) => {
    const blk = first + k;
    batches.forEach((b, bi) => {
      const p = ix.batch(b.id);
      if (p?.[0] === blk && p[1] === bi) found++;
      b.txns.forEach((txn, ti) => {
        const q = ix.txn(txn);
        if (q?.[0] === blk && q[1] === bi && q[2] === ti) found++;
      });
    });
  });
  return found;
}

const RUN_MIN = 64;

t.test('runs, merges and capped runs: every id found, by a thread that followed and by one that starts', async (t) => {
  const s = tempStores(t);
  const w = new IdRunWriter(s, RUN_MIN);
  const follower = new IdIndex(s);
  const blocks: Block[] = [];
  let ids = 0;
  let maxTable = 0;
  for (let num = 0; num < 700; num++) {
    // 1 to 4 batches of 0 to 2 transactions; one batch in 8 shares a tag with many others.
    const batches = Array.from({ length: 1 + (num % 4) }, (_, i) => ({
      id: (num + i) % 8 === 0 ? tagged('00c0ffee') : id(),
      txns: Array.from({ length: (num + i) % 3 }, () => id()),
    }));
    ids += batches.reduce((n, b) => n + 1 + b.txns.length, 0);
    blocks.push(batches);
    await writeBlock(s, w, num, batches);
    if (num % 7 === 0) follower.hasBatch(id()); // follows the chain as a serving thread does
    maxTable = Math.max(maxTable, follower.tableSize);
  }
  const end = await settle(s, w, blocks, 700);
  ids += end - 700;
  const runs = readRuns(s);
  t.ok(w.written >= Math.floor(ids / (RUN_MIN + 20)) - 1, `runs written: ${w.written} for ${ids} ids`);
  t.ok(w.merged > 0, `runs merged: ${w.merged}`);
  t.ok(
    runs.some((r) => r.entries >= RUN_MIN * 16),
    `a run too large to merge again: ${runs.map((r) => r.entries).join(', ')}`,
  );
  t.equal(runs[0]?.first, 0, 'the runs start at the first block');
  t.equal(runs.reduce((n, r) => n + r.entries, 0) + (ids - runs.reduce((n, r) => n + r.entries, 0)), ids);
  t.ok(maxTable < 2 * RUN_MIN + 30, `the following thread's table stayed small: at most ${maxTable} ids`);

  t.equal(foundAll(follower, blocks), ids, 'the following thread finds every id');
  t.equal(follower.size, ids, 'and counts them all');
  const fresh = new IdIndex(s);
  t.equal(foundAll(fresh, blocks), ids, 'a thread that starts on the chain finds every id');
  t.ok(fresh.tableSize < RUN_MIN + 30, `its table holds only the blocks after the runs: ${fresh.tableSize} ids`);
  t.equal(fresh.runs, runs.length);
  t.notOk(fresh.hasBatch(tagged('00c0ffee')), 'an unknown id with a crowded tag: no');
  t.notOk(fresh.hasTxn(blocks[3]?.[0]?.id ?? ''), 'a batch id is not a transaction id');
  t.notOk(fresh.hasBatch(id()), 'an unknown id: no');

  // A writer that starts on the stored chain (a restarted committer) continues where it was.
  const w2 = new IdRunWriter(s, RUN_MIN);
  for (let num = end; num < end + 100; num++) {
    const batches = [{ id: id(), txns: [id()] }];
    blocks.push(batches);
    ids += 2;
    await writeBlock(s, w2, num, batches);
  }
  const end2 = await settle(s, w2, blocks, end + 100);
  ids += end2 - (end + 100);
  t.ok(w2.written > 0, 'a restarted writer writes runs');
  t.equal(foundAll(follower, blocks), ids, 'the following thread finds the newer ids too');
  t.equal(foundAll(new IdIndex(s), blocks), ids, 'and so does a new one');
  const after = readRuns(s);
  for (let i = 1; i < after.length; i++) t.equal(after[i]?.first, (after[i - 1]?.last ?? 0) + 1, `run ${i} follows run ${i - 1}`);
  const problems: string[] = [];
  const inRuns = after.reduce((n, r) => n + r.entries, 0);
  t.equal(
    checkRuns(s, end2 - 1, (p) => problems.push(p)),
    inRuns,
    'cairn check reads every entry of every run',
  );
  t.same(problems, [], 'and finds nothing wrong');
  checkRuns(s, 10, (p) => problems.push(p));
  t.match(problems.join('\n'), /ends past the head 10/, 'a run past the head is a problem');
});

t.test('a circuit ledger (first block 1), and a failed transaction leaves no run behind', async (t) => {
  const s = tempStores(t);
  const w = new IdRunWriter(s, RUN_MIN);
  const blocks: Block[] = [];
  for (let num = 1; num <= 40; num++) {
    const batches = [{ id: id(), txns: [id(), id()] }];
    blocks.push(batches);
    await writeBlock(s, w, num, batches);
  }
  const next = await settle(s, w, blocks, 41);
  t.ok(readRuns(s).length > 0);
  t.equal(readRuns(s)[0]?.first, 1, 'the first run starts at block 1');
  // A block whose transaction fails after its runs were written: nothing of it stays.
  const before = readRuns(s).map((r) => r.id);
  const failing = Array.from({ length: 40 }, () => ({ id: id(), txns: [id()] }));
  await t.rejects(
    s.root.childTransaction(() => {
      s.blockIds.put(next, encodeIdRecord(failing));
      w.afterBlock(next);
      throw new Error('the write failed');
    }),
    /the write failed/,
  );
  t.same(
    readRuns(s).map((r) => r.id),
    before,
    'the runs are as before',
  );
  const batches = [{ id: id(), txns: [] as string[] }];
  blocks.push(batches);
  await writeBlock(s, w, next, batches);
  const ix = new IdIndex(s);
  t.equal(foundAll(ix, blocks, 1), 40 * 3 + (next - 41) + 1, 'every id of the blocks written');
  t.notOk(ix.hasBatch(must(failing[0]).id), 'none of the failed block');
});

t.test('a damaged chunk is a damaged record, never a wrong answer', async (t) => {
  const s = tempStores(t);
  const w = new IdRunWriter(s, RUN_MIN);
  const blocks: Block[] = [];
  for (let num = 0; num < 30; num++) {
    const batches = Array.from({ length: 4 }, () => ({ id: id(), txns: [] as string[] }));
    blocks.push(batches);
    await writeBlock(s, w, num, batches);
  }
  let next = await settle(s, w, blocks, 30);
  const last = next - 1;
  const run = must(readRuns(s)[0]);
  const key = chunkKey(run.id, 0);
  const raw = copy(must(s.idChunks.getBinaryFast(key)));
  raw[5] = (raw[5] as number) ^ 0x40;
  await s.idChunks.put(key, raw.subarray(0, raw.length - 4));
  // Re-sealed with the flipped bit: a valid checksum over a wrong entry. Each answer is still
  // checked against the id record: an id may go unfound, none is found anywhere else.
  const ix = new IdIndex(s);
  let wrong = 0;
  for (const [blk, batches] of blocks.entries()) {
    for (const [bi, b] of batches.entries()) {
      const p = ix.batch(b.id);
      if (p && (p[0] !== blk || p[1] !== bi)) wrong++;
    }
  }
  t.equal(wrong, 0, 'no id answered with another place');
  const problems: string[] = [];
  checkRuns(s, last, (p) => problems.push(p));
  t.match(problems.join('\n'), /chunk 0: (its fence is not its first tag|out of order|entry 0 names no id)/, 'cairn check names the wrong entry');
  // Now a bit flipped under the checksum.
  const sealed = copy(must(s.idChunks.getBinaryFast(key)));
  sealed[9] = (sealed[9] as number) ^ 0x01;
  const direct = s.root.openDB<Buffer, Buffer>('id_chunks', { keyEncoding: 'binary', encoding: 'binary' });
  await direct.put(key, sealed);
  t.throws(() => new IdIndex(s).hasBatch(must(blocks[0]?.[0]).id), CorruptRecordError, 'a checksum mismatch throws');
  const again: string[] = [];
  checkRuns(s, last, (p) => again.push(p));
  t.match(again.join('\n'), /id_chunks run \d+ chunk 0/, 'cairn check names the damaged chunk');
  // A block's id record damaged under its checksum: an answer from the runs checks it first.
  const num = 3;
  const rawIds = s.root.openDB<Buffer, number>('ids', { keyEncoding: 'uint32', encoding: 'binary' });
  const original = copy(must(s.blockIds.getBinaryFast(num)));
  const rec = copy(original);
  rec[20] = (rec[20] as number) ^ 0x01;
  await rawIds.put(num, rec);
  const ix2 = new IdIndex(s);
  t.throws(() => ix2.batch(must(blocks[num]?.[1]).id), CorruptRecordError, 'a damaged id record behind a run answer throws');
  await rawIds.put(num, original);
  // The writer merges the damaged run with newer ones: it makes the merged run again from the
  // id records, the blocks go on being written, and every id is found again.
  const repairs = w.merged;
  for (let k = 0; k < 90; k++) {
    const batches = Array.from({ length: 4 }, () => ({ id: id(), txns: [] as string[] }));
    blocks.push(batches);
    await writeBlock(s, w, next++, batches);
  }
  next = await settle(s, w, blocks, next);
  t.ok(w.merged > repairs, 'the damaged run was merged');
  t.notOk(
    readRuns(s).some((r) => r.id === run.id),
    'and is gone',
  );
  t.equal(
    foundAll(new IdIndex(s), blocks),
    blocks.reduce((n, b) => n + b.length, 0),
    'every id found after the repair',
  );
  const clean: string[] = [];
  checkRuns(s, next - 1, (p) => clean.push(p));
  t.same(clean, [], 'cairn check finds the runs clean again');
  const lastRun = must(readRuns(s)[0]);
  await s.idRuns.put(lastRun.id, Buffer.from('short'));
  const broken: string[] = [];
  t.equal(
    checkRuns(s, next - 1, (p) => broken.push(p)),
    0,
  );
  t.match(broken.join('\n'), /id runs: .*id_runs key/, 'a damaged descriptor');
});

t.test('a node keeps its ids in runs: every batch, transaction and receipt answered, before and after a restart', async (t) => {
  // The committer thread reads it when it starts: runs of 16 ids, so 60 batches make several and merge them.
  process.env.CAIRN_TEST_ID_RUN_MIN = '16';
  t.teardown(() => {
    delete process.env.CAIRN_TEST_ID_RUN_MIN;
  });
  const dir = mkdtempSync(join(tmpdir(), 'cairn-runs-node-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const signer = newSigner();
  const batches = Array.from({ length: 60 }, (_, i) => intkeyBatch(signer, [['set', `r${i}`, i]]));
  let n = await startTestNode({}, dir);
  // Several blocks: a few bodies at a time, each waited for.
  for (let i = 0; i < batches.length; i += 6) {
    const group = batches.slice(i, i + 6);
    t.equal((await postBatches(n.ledgerUrl, batchList(...group))).status, 202);
    await waitCommitted(
      n.ledgerUrl,
      group.map((b) => b.id),
    );
  }
  const check = async (what: string): Promise<void> => {
    const st = await waitCommitted(
      n.ledgerUrl,
      batches.map((b) => b.id),
    );
    t.same(
      st.map((x: { status: string }) => x.status),
      batches.map(() => 'COMMITTED'),
      `${what}: every batch committed`,
    );
    let found = 0;
    for (const b of batches) {
      const one = await getJson(`${n.ledgerUrl}/batches/${b.id}`);
      const txn = await getJson(`${n.ledgerUrl}/transactions/${must(b.txnIds[0])}`);
      const receipt = await getJson(`${n.ledgerUrl}/receipts?id=${must(b.txnIds[0])}`);
      if (one.json.data?.header_signature === b.id && txn.json.data?.header_signature === b.txnIds[0] && receipt.json.data?.[0]?.id === b.txnIds[0])
        found++;
    }
    t.equal(found, batches.length, `${what}: every batch, transaction and receipt served`);
    t.equal((await getJson(`${n.ledgerUrl}/batches/${'ab'.repeat(64)}`)).status, 404, `${what}: an unknown batch is not found`);
  };
  await check('while running');
  // A batch sent again is not committed twice.
  t.equal((await postBatches(n.ledgerUrl, batchList(must(batches[3])))).status, 202);
  await n.stop({ keepData: true });

  const root = openEnv(dir);
  const runs = readRuns(openLedgerStores(root));
  await root.close();
  t.ok(runs.length >= 2, `the chain's ids are in ${runs.length} runs on disk`);
  t.ok(
    runs.some((r) => r.entries >= 4 * 16),
    `a merged run among them: ${runs.map((r) => r.entries).join(', ')}`,
  );

  n = await startTestNode({}, dir);
  t.teardown(() => n.stop({ keepData: true }));
  await check('after a restart');
  const more = intkeyBatch(signer, [['set', 'after', 1]]);
  t.equal((await postBatches(n.ledgerUrl, batchList(more))).status, 202);
  t.equal((await waitCommitted(n.ledgerUrl, [more.id]))[0].status, 'COMMITTED', 'and the chain goes on');
  const blocks = await getJson(`${n.ledgerUrl}/blocks?limit=100`);
  const inBlocks = blocks.json.data.reduce((k: number, b: { batches: unknown[] }) => k + b.batches.length, 0);
  t.equal(inBlocks, batches.length + 2, 'each batch in one block (with genesis and the one after)');
  await n.stop({ keepData: true });
  t.same((await checkDataDir(dir)).problems, [], 'cairn check finds nothing wrong, runs included');
});

/** A copy of bytes lmdb-js lent (its shared read buffer). */
function copy(v: Uint8Array): Buffer {
  return Buffer.from(Buffer.from(v.buffer, v.byteOffset, v.length));
}
