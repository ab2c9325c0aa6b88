/**
 * The state engine's layout: deltas per block, the Merkle records only every N blocks.
 * Roots must equal the reference root of the same leaves at every block; every root is
 * readable (checkpoint tree + overlay) with the right values and listing order; a fresh
 * engine recovers the head from checkpoint + deltas; what each block writes to the
 * Merkle store is nothing between checkpoints.
 */
import t from 'tap';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { open, type RootDatabase } from 'lmdb';
import { CorruptStateError, EMPTY_ROOT, MerkleTree, UnknownRootError, rootOf } from '../src/state/merkle.js';
import { StateEngine } from '../src/state/engine.js';
import { StateReader } from '../src/state/reader.js';
import { CHECKPOINT_KEY } from '../src/state/deltas.js';
import { openLedgerStores, type ChainHead, type LedgerStores } from '../src/store/ledger-stores.js';

/** The tap test object (the callback parameter of t.test). */
type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];

function env(t: TapTest): { root: RootDatabase; s: LedgerStores } {
  const dir = fs.mkdtempSync(join(os.tmpdir(), 'cairn-state-'));
  const root = open({ path: join(dir, 'ledger.mdb'), maxDbs: 64 });
  t.teardown(async () => {
    await root.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return { root, s: openLedgerStores(root) };
}

/** Deterministic pseudo-random bytes. */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 0x100000000;
  };
}

const NS = '1cf126';
const addrOf = (i: number): string => NS + crypto.createHash('sha512').update(`k${i}`).digest('hex').slice(0, 64);

t.test('roots, reads and restart across checkpoints', async (t) => {
  const { root, s } = env(t);
  await root.transaction(() => {
    for (const [k, v] of MerkleTree.emptyRootWrites()) s.merkle.put(k, v);
  });
  const every = 4;
  const engine = new StateEngine(s, { leafEncoding: 'cbor', checkpointEvery: every });
  engine.recover(undefined);
  const reader = new StateReader(s, { leafEncoding: 'cbor', verify: true });
  const rand = rng(7);
  const leaves = new Map<string, Uint8Array>();
  const history: Array<{ root: string; leaves: Map<string, Uint8Array> }> = [];
  let parent: ChainHead = { blockId: 'none', blockNum: -1, stateRoot: EMPTY_ROOT };
  const merkleCounts: number[] = [];
  for (let b = 0; b < 15; b++) {
    const changes = new Map<string, Uint8Array | null>();
    for (let i = 0; i < 30; i++) {
      const k = Math.floor(rand() * 120);
      const a = addrOf(k);
      if (rand() < 0.2) changes.set(a, null);
      else changes.set(a, Buffer.from(`v${b}-${i}`));
    }
    const sets = new Map<string, Uint8Array>();
    const deletes: string[] = [];
    for (const [a, v] of changes) {
      if (v === null) {
        deletes.push(a);
        leaves.delete(a);
      } else {
        sets.set(a, v);
        leaves.set(a, v);
      }
    }
    const u = engine.tree.update(parent.stateRoot, sets, deletes);
    t.equal(u.root, rootOf(leaves), `block ${b}: root equals the reference root`);
    const head: ChainHead = { blockId: `b${b}`, blockNum: b, stateRoot: u.root };
    engine.stage(b, u.writes);
    let cp: number | null = null;
    const before = s.merkle.getKeysCount();
    await root.transaction(() => {
      cp = engine.writeBlock(parent, head, u.writes, changes);
      s.meta.put('head', head);
    });
    engine.durable(cp);
    merkleCounts.push(s.merkle.getKeysCount() - before);
    t.equal(cp !== null, b % every === every - 1, `block ${b}: checkpoint only every ${every} blocks`);
    history.push({ root: u.root, leaves: new Map(leaves) });
    parent = head;
  }
  t.same(
    merkleCounts.map((n, b) => (b % every === every - 1 ? n > 0 : n === 0)),
    merkleCounts.map(() => true),
    'Merkle records are written at checkpoints only',
  );
  t.same(s.meta.get(CHECKPOINT_KEY), { blockNum: 11, root: history[11]!.root });

  // Every root readable, with exactly its leaves, in order both ways.
  for (const [b, h] of history.entries()) {
    const want = [...h.leaves.entries()].sort(([a], [b2]) => (a < b2 ? -1 : 1)).map(([a, v]) => `${a}=${Buffer.from(v).toString()}`);
    const got = [...reader.entries(h.root, NS)].map((e) => `${e.address}=${e.value.toString()}`);
    t.same(got, want, `block ${b}: entries`);
    const rev = [...reader.entries(h.root, '', { reverse: true })].map((e) => `${e.address}=${e.value.toString()}`);
    t.same(rev, [...want].reverse(), `block ${b}: entries reversed`);
    const from = want[3]!.split('=')[0]!;
    t.same(
      [...reader.entries(h.root, NS, { start: from })].map((e) => e.address),
      want.slice(3).map((w) => w.split('=')[0]),
      `block ${b}: entries from a start`,
    );
    for (let k = 0; k < 120; k += 7) {
      const a = addrOf(k);
      const v = h.leaves.get(a);
      t.equal(reader.get(h.root, a)?.toString(), v === undefined ? undefined : Buffer.from(v).toString());
    }
  }

  // A fresh engine loads the head from the checkpoint (block 11) and deltas 12..14.
  const again = new StateEngine(s, { leafEncoding: 'cbor', checkpointEvery: every });
  again.recover(parent);
  t.equal(again.checkpoint.blockNum, 11);
  t.ok(again.memRecords > 0, 'records after the checkpoint are in memory again');
  const next = again.tree.update(parent.stateRoot, new Map([[addrOf(1), Buffer.from('x')]]), []);
  leaves.set(addrOf(1), Buffer.from('x'));
  t.equal(next.root, rootOf(leaves), 'a block built on the recovered state has the reference root');

  // A damaged delta is found on recovery, not served.
  await root.transaction(() => {
    const raw = s.deltas.getBinary(13)!;
    raw[raw.length - 1] = raw[raw.length - 1]! ^ 1;
    s.deltas.put(13, raw);
  });
  t.throws(() => new StateEngine(s, { leafEncoding: 'cbor' }).recover(parent), { name: 'CorruptDeltaError' });
  let served: unknown;
  try {
    served = new StateReader(s, { leafEncoding: 'cbor' }).get(history[13]!.root, addrOf(1));
  } catch (err) {
    served = err;
  }
  t.ok(served instanceof CorruptStateError, 'and never served (the gateway answers 503 for a CorruptStateError)');
});

t.test('a checkpoint starts once the records in memory reach the byte bound, not before its last one left', async (t) => {
  const { root, s } = env(t);
  await root.transaction(() => {
    for (const [k, v] of MerkleTree.emptyRootWrites()) s.merkle.put(k, v);
  });
  const bound = 40_000;
  // The block count alone would never start one here.
  const engine = new StateEngine(s, { leafEncoding: 'cbor', checkpointEvery: 1_000, checkpointBytes: bound });
  t.throws(() => new StateEngine(s, { leafEncoding: 'cbor', checkpointBytes: 0 }), RangeError);
  engine.recover(undefined);
  t.equal(engine.memBytes, 0);
  const rand = rng(11);
  const leaves = new Map<string, Uint8Array>();
  let parent: ChainHead = { blockId: 'none', blockNum: -1, stateRoot: EMPTY_ROOT };
  const checkpoints: number[] = [];
  let peak = 0;
  let held: number | null = null;
  for (let b = 0; b < 40; b++) {
    const sets = new Map<string, Uint8Array>();
    for (let i = 0; i < 20; i++) sets.set(addrOf(Math.floor(rand() * 400)), Buffer.from(`v${b}-${i}`));
    for (const [a, v] of sets) leaves.set(a, v);
    const u = engine.tree.update(parent.stateRoot, sets, []);
    const head: ChainHead = { blockId: `b${b}`, blockNum: b, stateRoot: u.root };
    engine.stage(b, u.writes);
    const before = engine.memBytes;
    let cp: number | null = null;
    await root.transaction(() => {
      cp = engine.writeBlock(parent, head, u.writes, new Map(sets));
      s.meta.put('head', head);
    });
    if (cp !== null) {
      t.ok(before >= bound, `block ${b}: a checkpoint only with ${bound} bytes or more in memory (${before})`);
      checkpoints.push(cp);
    }
    peak = Math.max(peak, engine.memBytes);
    // Pipelined: a checkpoint becomes durable one block later. The block in between must not
    // start another one on the bytes that are about to leave.
    if (held !== null) engine.durable(held);
    held = cp;
    parent = head;
  }
  engine.durable(held);
  t.ok(checkpoints.length >= 3, `several checkpoints by bytes (${checkpoints.length})`);
  t.notOk(
    checkpoints.some((c, i) => i > 0 && c === checkpoints[i - 1]! + 1),
    `no checkpoint in the block right after one (${checkpoints.join(', ')})`,
  );
  t.ok(peak < 3 * bound, `the records in memory stay within a few blocks of the bound (${peak})`);
  t.equal(rootOf(leaves), parent.stateRoot);
  // A restart replays only the deltas since the last checkpoint, and gets the same head.
  const again = new StateEngine(s, { leafEncoding: 'cbor', checkpointBytes: bound });
  again.recover(parent);
  t.equal(again.checkpoint.blockNum, checkpoints.at(-1));
  t.ok(again.memBytes < 3 * bound, `its replay holds no more than the bound allows (${again.memBytes})`);
  t.equal(again.memBytes > 0, parent.blockNum > (checkpoints.at(-1) ?? -1), 'the blocks after the checkpoint are replayed');
  const next = again.tree.update(parent.stateRoot, new Map([[addrOf(1), Buffer.from('x')]]), []);
  leaves.set(addrOf(1), Buffer.from('x'));
  t.equal(next.root, rootOf(leaves), 'a block on the recovered state has the reference root');
});

t.test('history: roots older than the setting are unknown roots', async (t) => {
  const { root, s } = env(t);
  await root.transaction(() => {
    for (const [k, v] of MerkleTree.emptyRootWrites()) s.merkle.put(k, v);
  });
  const engine = new StateEngine(s, { leafEncoding: 'raw', checkpointEvery: 100 });
  engine.recover(undefined);
  let parent: ChainHead = { blockId: 'none', blockNum: -1, stateRoot: EMPTY_ROOT };
  const roots: string[] = [];
  for (let b = 0; b < 6; b++) {
    const changes = new Map<string, Uint8Array | null>([[addrOf(b), Buffer.from([b])]]);
    const u = engine.tree.update(parent.stateRoot, new Map([[addrOf(b), Buffer.from([b])]]), []);
    const head = { blockId: `b${b}`, blockNum: b, stateRoot: u.root };
    await root.transaction(() => void engine.writeBlock(parent, head, u.writes, changes));
    roots.push(u.root);
    parent = head;
  }
  const reader = new StateReader(s, { leafEncoding: 'raw', history: 3, headNum: () => 5 });
  t.same(reader.get(roots[5]!, addrOf(0)), Buffer.from([0]));
  t.same(reader.get(roots[3]!, addrOf(3)), Buffer.from([3]));
  t.equal(reader.get(roots[3]!, addrOf(4)), undefined);
  t.throws(() => reader.get(roots[2]!, addrOf(0)), UnknownRootError, 'three blocks behind the head is beyond a history of 3');
  t.throws(() => reader.entries(roots[0]!, ''), UnknownRootError);
  t.notOk(reader.hasRoot('00'.repeat(32)));
  t.ok(new StateReader(s, { leafEncoding: 'raw' }).hasRoot(roots[0]!), 'without a limit every root stays readable');
});

t.test('a large checkpoint is spread over the blocks after it, children first', async (t) => {
  const { root, s } = env(t);
  await root.transaction(() => {
    for (const [k, v] of MerkleTree.emptyRootWrites()) s.merkle.put(k, v);
  });
  // 40 new leaves per block: a checkpoint of the first 4 blocks is well over 60 records.
  const every = 4;
  const chunk = 60;
  const engine = new StateEngine(s, { leafEncoding: 'cbor', checkpointEvery: every, checkpointChunk: chunk });
  engine.recover(undefined);
  const leaves = new Map<string, Uint8Array>();
  const heads: ChainHead[] = [];
  let parent: ChainHead = { blockId: 'none', blockNum: -1, stateRoot: EMPTY_ROOT };
  const written: number[] = [];
  const done: Array<number | null> = [];
  let kept = 0;
  for (let b = 0; b < 16; b++) {
    const changes = new Map<string, Uint8Array | null>();
    for (let i = 0; i < 40; i++) changes.set(addrOf(b * 40 + i), Buffer.from(`v${b}-${i}`));
    const sets = new Map([...changes].map(([a, v]) => [a, v!] as [string, Uint8Array]));
    for (const [a, v] of sets) leaves.set(a, v);
    const u = engine.tree.update(parent.stateRoot, sets, []);
    t.equal(u.root, rootOf(leaves), `block ${b}: reference root`);
    const head: ChainHead = { blockId: `b${b}`, blockNum: b, stateRoot: u.root };
    engine.stage(b, u.writes);
    const before = s.merkle.getKeysCount();
    let cp: number | null = null;
    await root.transaction(() => {
      cp = engine.writeBlock(parent, head, u.writes, changes);
      s.meta.put('head', head);
    });
    written.push(s.merkle.getKeysCount() - before);
    done.push(cp);
    if (cp === 3) kept = engine.memRecords;
    engine.durable(cp);
    if (cp === null && b >= 3 && (s.meta.get(CHECKPOINT_KEY) as { blockNum: number } | undefined)?.blockNum !== 3) {
      t.equal(
        s.merkle.getBinary(Buffer.from(heads[3]?.stateRoot ?? u.root, 'hex')),
        undefined,
        `block ${b}: the checkpoint's root record is not stored before the rest`,
      );
    }
    heads.push(head);
    parent = head;
  }
  t.ok(
    written.every((n) => n <= chunk),
    `no block writes more than ${chunk} Merkle records (${written.join(',')})`,
  );
  const first = done.findIndex((c) => c !== null);
  t.ok(first > 3, `the first checkpoint (of block 3) completes in a later block (${first})`);
  t.equal(done[first], 3, 'and it is the checkpoint of block 3');
  t.ok(kept > 0 && engine.memRecords < kept + 16 * 80, 'its records left memory once it was durable');
  t.ok(s.merkle.getBinary(Buffer.from(heads[3]!.stateRoot, 'hex')) !== undefined, "block 3's root is stored");

  // A restart in the middle of a checkpoint: the head recovers from the last complete one.
  const again = new StateEngine(s, { leafEncoding: 'cbor', checkpointEvery: every, checkpointChunk: chunk });
  again.recover(parent);
  t.ok(again.checkpoint.blockNum >= 3, `recovered from a complete checkpoint (${again.checkpoint.blockNum})`);
  const reader = new StateReader(s, { leafEncoding: 'cbor', verify: true });
  for (const b of [3, 9, 15]) {
    const want = [...leaves.keys()].filter((a) => {
      const i = [...leaves.keys()].indexOf(a);
      return Math.floor(i / 40) <= b;
    });
    t.equal([...reader.entries(heads[b]!.stateRoot, NS)].length, want.length, `block ${b}: every leaf readable`);
  }
  const next = again.tree.update(parent.stateRoot, new Map([[addrOf(1), Buffer.from('x')]]), []);
  leaves.set(addrOf(1), Buffer.from('x'));
  t.equal(next.root, rootOf(leaves), 'a block built on the recovered state has the reference root');
});

t.test('a failed block transaction restarts the checkpoint in progress', async (t) => {
  const { root, s } = env(t);
  await root.transaction(() => {
    for (const [k, v] of MerkleTree.emptyRootWrites()) s.merkle.put(k, v);
  });
  const engine = new StateEngine(s, { leafEncoding: 'cbor', checkpointEvery: 2, checkpointChunk: 50 });
  engine.recover(undefined);
  const leaves = new Map<string, Uint8Array>();
  let parent: ChainHead = { blockId: 'none', blockNum: -1, stateRoot: EMPTY_ROOT };
  let failedOnce = false;
  const completed: number[] = [];
  const roots: string[] = [];
  for (let b = 0; b < 16; b++) {
    const sets = new Map<string, Uint8Array>();
    for (let i = 0; i < 20; i++) sets.set(addrOf(b * 20 + i), Buffer.from(`w${b}-${i}`));
    for (const [a, v] of sets) leaves.set(a, v);
    const u = engine.tree.update(parent.stateRoot, sets, []);
    const head: ChainHead = { blockId: `b${b}`, blockNum: b, stateRoot: u.root };
    engine.stage(b, u.writes);
    const changes = new Map<string, Uint8Array | null>(sets);
    if (b >= 3 && !failedOnce) {
      const countBefore = s.merkle.getKeysCount();
      // The block's transaction throws after the engine wrote part of a checkpoint in it:
      // nothing of it stays. Tried block by block until a failure lands in the writing phase.
      let wrote = false;
      // A child transaction, as the chain writer's: what it wrote is rolled back when it throws.
      await t.rejects(
        root.childTransaction(() => {
          const before = s.merkle.getKeysCount();
          // Part of a checkpoint, not its end: the rest is written by the blocks after.
          wrote = engine.writeBlock(parent, head, u.writes, changes) === null && s.merkle.getKeysCount() > before;
          throw new Error('disk gone');
        }),
      );
      engine.writeFailed();
      t.equal(s.merkle.getKeysCount(), countBefore, 'the failed transaction left no Merkle record');
      failedOnce = wrote;
    }
    let cp: number | null = null;
    await root.transaction(() => {
      cp = engine.writeBlock(parent, head, u.writes, changes);
    });
    engine.durable(cp);
    if (cp !== null) completed.push(cp);
    roots.push(head.stateRoot);
    parent = head;
  }
  // Each completed checkpoint's root is read whole from its stored records.
  const stored = new StateReader(s, { leafEncoding: 'cbor', verify: true });
  for (const c of completed) {
    t.equal([...stored.entries(roots[c] as string, NS)].length, 20 * (c + 1), `checkpoint ${c}: every leaf is stored`);
  }
  t.ok(failedOnce, 'a block transaction failed after writing part of a checkpoint');
  t.ok(
    completed.some((c) => c >= 3),
    `a checkpoint of a block after the failed one completed (${completed.join(',')})`,
  );
  const again = new StateEngine(s, { leafEncoding: 'cbor' });
  again.recover(parent);
  t.equal(again.tree.update(parent.stateRoot, new Map(), []).root, rootOf(leaves), 'the stored state recovers the head root');
  // Every leaf is read back through the stored checkpoint records (a record lost with the
  // failed transaction would be missing here).
  const read = [...new StateReader(s, { leafEncoding: 'cbor', verify: true }).entries(parent.stateRoot, NS)];
  t.equal(read.length, leaves.size, 'every leaf of the head is readable from the stored records');
});

t.test('pipelined blocks: a checkpoint that starts before the previous one is durable', async (t) => {
  // The committer builds and writes blocks while earlier ones sync, so `durable` of a
  // completed checkpoint comes a few blocks late: the next checkpoint may have visited
  // records of the previous one while they were still in memory, and find them gone (stored
  // by then) when it writes them.
  const { root, s } = env(t);
  await root.transaction(() => {
    for (const [k, v] of MerkleTree.emptyRootWrites()) s.merkle.put(k, v);
  });
  const engine = new StateEngine(s, { leafEncoding: 'cbor', checkpointEvery: 2, checkpointChunk: 40 });
  engine.recover(undefined);
  const leaves = new Map<string, Uint8Array>();
  let parent: ChainHead = { blockId: 'none', blockNum: -1, stateRoot: EMPTY_ROOT };
  const late: Array<number | null> = [];
  const completed: number[] = [];
  const roots: string[] = [];
  for (let b = 0; b < 40; b++) {
    const sets = new Map<string, Uint8Array>();
    // New leaves and changed old ones, so new checkpoints reach records of older blocks.
    for (let i = 0; i < 12; i++) sets.set(addrOf(b * 12 + i), Buffer.from(`p${b}-${i}`));
    for (let i = 0; i < 6 && b > 0; i++) sets.set(addrOf((b * 7 + i * 5) % (b * 12)), Buffer.from(`q${b}-${i}`));
    for (const [a, v] of sets) leaves.set(a, v);
    const u = engine.tree.update(parent.stateRoot, sets, []);
    const head: ChainHead = { blockId: `b${b}`, blockNum: b, stateRoot: u.root };
    engine.stage(b, u.writes);
    let cp: number | null = null;
    await root.transaction(() => {
      cp = engine.writeBlock(parent, head, u.writes, new Map<string, Uint8Array | null>(sets));
    });
    if (cp !== null) completed.push(cp);
    // Durable three blocks later, as with blocks in flight.
    late.push(cp);
    if (late.length > 3) engine.durable(late.shift() ?? null);
    roots.push(head.stateRoot);
    parent = head;
  }
  for (const cp of late) engine.durable(cp);
  t.ok(completed.length >= 3, `checkpoints completed one after another (${completed.join(',')})`);
  const stored = new StateReader(s, { leafEncoding: 'cbor', verify: true });
  const last = completed[completed.length - 1] as number;
  t.ok([...stored.entries(roots[last] as string, NS)].length > 0, `checkpoint ${last}: its root is read from stored records`);
  const again = new StateEngine(s, { leafEncoding: 'cbor' });
  again.recover(parent);
  t.equal(again.tree.update(parent.stateRoot, new Map(), []).root, rootOf(leaves), 'a restart recovers the head root');
  t.equal([...stored.entries(parent.stateRoot, NS)].length, leaves.size, 'every leaf of the head is readable');
});
