/**
 * Merkle-Radix micro benchmark. Run: node --import tsx bench/merkle.ts
 *
 * Prints one JSON line:
 * - nodeHashesPerSec: exact node hashes per second for the commonest node (one child, no
 *   value: 78 bytes of CBOR), and for a leaf with a 16-byte value;
 * - leafWritesPerSec: random 70-hex-address sets per second, in blocks of 500, into a tree
 *   that already holds 100k leaves, including the LMDB write of the records (one
 *   transaction per block, default lmdb-js durability);
 * - updateOnlyPerSec: the same without the LMDB write;
 * - putUsPerRecord, commitMsPerBlock: where the write time goes (the commit includes the
 *   fsync, a per-block cost the committer pays once for everything in the block);
 * - cpuUsPerLeaf: process CPU time per leaf for the measured blocks (less sensitive to a
 *   busy machine than the wall-clock rates);
 * - recordsPerLeaf: LMDB records written per leaf in those blocks.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import { open } from 'lmdb';
import { EMPTY_ROOT, MerkleTree } from '../src/state/merkle.js';
import { hashLeaf, hashSingle } from '../src/state/node.js';

const PRELOAD = 100_000;
const PRELOAD_BLOCK = 5_000;
const BLOCK = 500;
const BLOCKS = 40;

function randomSets(n: number): Map<string, Uint8Array> {
  const sets = new Map<string, Uint8Array>();
  const bytes = crypto.randomBytes(n * (35 + 16));
  for (let i = 0; i < n; i++) {
    const o = i * 51;
    sets.set(bytes.toString('hex', o, o + 35), bytes.subarray(o + 35, o + 51));
  }
  return sets;
}

function rate(n: number, fn: () => void): number {
  const t0 = process.hrtime.bigint();
  fn();
  return n / (Number(process.hrtime.bigint() - t0) / 1e9);
}

// 1. Raw node hashing.
const child = crypto.randomBytes(32);
const value = crypto.randomBytes(16);
for (let i = 0; i < 20_000; i++) hashSingle(i & 0xff, child);
const HASHES = 300_000;
const singlePerSec = rate(HASHES, () => {
  for (let i = 0; i < HASHES; i++) hashSingle(i & 0xff, child);
});
const leafPerSec = rate(HASHES, () => {
  for (let i = 0; i < HASHES; i++) hashLeaf(value);
});

// 2. Leaf writes into a 100k-leaf tree.
const dir = fs.mkdtempSync(`${os.tmpdir()}/merkle-bench-`);
const env = open({ path: dir });
const db = env.openDB<Buffer, Buffer>('merkle', { keyEncoding: 'binary', encoding: 'binary' });
const tree = new MerkleTree(db);
const put = (writes: Array<[Buffer, Buffer]>) =>
  db.transactionSync(() => {
    for (const [k, v] of writes) db.putSync(k, v);
  });
put(MerkleTree.emptyRootWrites());

let root = EMPTY_ROOT;
const preloadStart = process.hrtime.bigint();
for (let i = 0; i < PRELOAD; i += PRELOAD_BLOCK) {
  const r = tree.update(root, randomSets(PRELOAD_BLOCK), []);
  put(r.writes);
  root = r.root;
}
const preloadSec = Number(process.hrtime.bigint() - preloadStart) / 1e9;

const blocks = Array.from({ length: BLOCKS }, () => randomSets(BLOCK));
let records = 0;
let updateNs = 0n;
let putNs = 0n;
let totalNs = 0n;
const cpu0 = process.cpuUsage();
for (const sets of blocks) {
  const t0 = process.hrtime.bigint();
  const r = tree.update(root, sets, []);
  const t1 = process.hrtime.bigint();
  db.transactionSync(() => {
    for (const [k, v] of r.writes) db.putSync(k, v);
    putNs += process.hrtime.bigint() - t1;
  });
  const t2 = process.hrtime.bigint();
  updateNs += t1 - t0;
  totalNs += t2 - t0;
  records += r.writes.length;
  root = r.root;
}
const cpu = process.cpuUsage(cpu0);
const leaves = BLOCKS * BLOCK;

await env.close();
fs.rmSync(dir, { recursive: true, force: true });

console.log(
  JSON.stringify({
    nodeHashesPerSec: Math.round(singlePerSec),
    leafHashesPerSec: Math.round(leafPerSec),
    leafWritesPerSec: Math.round(leaves / (Number(totalNs) / 1e9)),
    updateOnlyPerSec: Math.round(leaves / (Number(updateNs) / 1e9)),
    putUsPerRecord: Number((Number(putNs) / 1e3 / records).toFixed(2)),
    commitMsPerBlock: Number((Number(totalNs - updateNs - putNs) / 1e6 / BLOCKS).toFixed(2)),
    cpuUsPerLeaf: Number(((cpu.user + cpu.system) / leaves).toFixed(1)),
    recordsPerLeaf: Number((records / leaves).toFixed(2)),
    block: BLOCK,
    blocks: BLOCKS,
    preloadLeaves: PRELOAD,
    preloadSec: Number(preloadSec.toFixed(1)),
  }),
);
