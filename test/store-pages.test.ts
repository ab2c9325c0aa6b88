/**
 * The page walk (src/store/pages.ts): an intact LMDB file passes, however its pages were
 * written, split, freed and reused; each kind of damage to the page structure that LMDB
 * would trust (and die on, or write through) is found and named, by lmdbFileProblem,
 * before the file is mapped.
 */
import t from 'tap';
import { closeSync, copyFileSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import { lmdbFileProblem, newestSnapshot } from '../src/store/files.js';
import { PAGE, walkSnapshot, type Snapshot } from '../src/store/pages.js';

const dir = mkdtempSync(join(tmpdir(), 'cairn-pages-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const file = join(dir, 'sound.mdb');
const PS = 4096;

t.before(async () => {
  const env = open({ path: file, maxDbs: 8, pageSize: PS, encoding: 'binary', keyEncoding: 'binary' });
  const small = env.openDB({ name: 'small', encoding: 'binary', keyEncoding: 'binary' });
  const big = env.openDB({ name: 'big', encoding: 'binary', keyEncoding: 'binary' });
  // Deterministic churn: enough keys for branch pages, values big enough for overflow pages,
  // deletions and rewrites for a free list with runs.
  let x = 7;
  const next = (): number => (x = (x * 1103515245 + 12345) % 2147483648);
  await env.transaction(() => {
    for (let i = 0; i < 1500; i++) void small.put(Buffer.from(`key-${i}`), Buffer.alloc(120, 1));
  });
  for (let round = 0; round < 6; round++) {
    await env.transaction(() => {
      for (let i = 0; i < 400; i++) {
        const k = Buffer.from(`key-${next() % 1500}`);
        if (next() % 4 === 0) void small.remove(k);
        else void small.put(k, Buffer.alloc(40 + (next() % 300), round));
      }
      for (let i = 0; i < 12; i++) {
        const k = Buffer.from(`big-${next() % 30}`);
        if (next() % 3 === 0) void big.remove(k);
        else void big.put(k, Buffer.alloc(5000 + (next() % 9000), round));
      }
    });
  }
  await env.close();
});

function kindsOf(path: string): { kinds: Uint8Array; buf: Buffer; snap: Snapshot } {
  const buf = readFileSync(path);
  const snap = newestSnapshot(path);
  const fd = openSync(path, 'r');
  try {
    const walk = walkSnapshot(fd, snap);
    if (walk.problem) throw new Error(walk.problem);
    return { kinds: walk.kinds, buf, snap };
  } finally {
    closeSync(fd);
  }
}

/** A copy of the sound file with `damage` applied to its bytes; returns lmdbFileProblem. */
function damaged(name: string, damage: (buf: Buffer, kinds: Uint8Array, snap: Snapshot) => void): string | null {
  const { kinds, buf, snap } = kindsOf(file);
  damage(buf, kinds, snap);
  const copy = join(dir, `${name}.mdb`);
  writeFileSync(copy, buf);
  return lmdbFileProblem(copy);
}

const pagesOf = (kinds: Uint8Array, kind: number): number[] => [...kinds.keys()].filter((i) => kinds[i] === kind);
const first = (kinds: Uint8Array, kind: number): number => {
  const p = pagesOf(kinds, kind)[0];
  if (p === undefined) throw new Error(`no page of kind ${kind}`);
  return p;
};

t.test('an intact file with branch, leaf, overflow and free pages passes', async (t) => {
  t.equal(lmdbFileProblem(file), null);
  const { kinds } = kindsOf(file);
  for (const [name, kind] of Object.entries(PAGE)) if (kind !== PAGE.unreached) t.ok(pagesOf(kinds, kind).length > 0, `${name} pages reached`);
});

t.test('a file written by many small transactions, with one reader open across them, passes', async (t) => {
  const path = join(dir, 'churn.mdb');
  const env = open({ path, maxDbs: 4, pageSize: PS, encoding: 'binary', keyEncoding: 'binary' });
  const db = env.openDB({ name: 'd', encoding: 'binary', keyEncoding: 'binary' });
  const reader = env.useReadTransaction();
  for (let i = 0; i < 300; i++) {
    await db.put(Buffer.from(`k${i % 97}`), Buffer.alloc(100 + ((i * 37) % 3000), i));
    if (i % 5 === 0) await db.remove(Buffer.from(`k${(i * 7) % 97}`));
  }
  reader.done();
  await env.close();
  t.equal(lmdbFileProblem(path), null);
});

t.test('a page header from a later transaction (LMDB would change the page in place)', async (t) => {
  const p = damaged('txnid', (buf, kinds) => buf.writeBigUInt64LE(1n << 40n, first(kinds, PAGE.branch) * PS + 8));
  t.match(p, /has a damaged page structure: .*page \d+: written by transaction 1099511627776, after the last one/);
});

t.test('a page whose header names another page', async (t) => {
  const p = damaged('pgno', (buf, kinds) => {
    const at = first(kinds, PAGE.leaf) * PS;
    buf.writeBigUInt64LE(buf.readBigUInt64LE(at) ^ 4n, at);
  });
  t.match(p, /its header names page/);
});

t.test('a node offset outside the node area', async (t) => {
  const p = damaged('offset', (buf, kinds) => buf.writeUInt16LE(2, first(kinds, PAGE.leaf) * PS + 24));
  t.match(p, /node 0: offset 26 out of the node area/);
});

t.test('free-space bounds out of the page', async (t) => {
  const p = damaged('bounds', (buf, kinds) => buf.writeUInt16LE(0xfff0, first(kinds, PAGE.leaf) * PS + 22));
  t.match(p, /free-space bounds \d+\.\.65520 out of the page/);
});

t.test('a key size that runs past the page end', async (t) => {
  const p = damaged('ksize', (buf, kinds) => {
    const at = first(kinds, PAGE.leaf) * PS;
    buf.writeUInt16LE(0xff00, at + 24 + buf.readUInt16LE(at + 24) + 6);
  });
  t.match(p, /key runs past the page end/);
});

t.test("a branch node's child beyond the file, or on a page already in use", async (t) => {
  const node = (buf: Buffer, page: number): number => page * PS + 24 + buf.readUInt16LE(page * PS + 24);
  const beyond = damaged('child-beyond', (buf, kinds) => buf.writeUInt16LE(0xffff, node(buf, first(kinds, PAGE.branch)) + 2));
  t.match(beyond, /is not a data page of the file/);
  const twice = damaged('child-twice', (buf, kinds) => {
    const at = node(buf, first(kinds, PAGE.branch));
    const other = first(kinds, PAGE.free);
    buf.writeUInt16LE(other & 0xffff, at);
    buf.writeUInt16LE(other >> 16, at + 2);
  });
  // A free page still holds an older copy of some page: the tree's counts, or the free list, tell.
  t.match(twice, /page \d+ is reached twice|its record counts \d+ (entries|leaf pages|branch pages)/);
});

t.test('a free-list entry naming a page in use (LMDB would hand it out again)', async (t) => {
  const p = damaged('free', (buf, kinds) => {
    const { snap } = kindsOf(file);
    // The free list's first leaf page: its first record's first entry.
    let page = Number(snap.dbs.readBigUInt64LE(40));
    while ((buf.readUInt16LE(page * PS + 18) & 0x7f) === 1) {
      const n = page * PS + 24 + buf.readUInt16LE(page * PS + 24);
      page = buf.readUInt16LE(n) | (buf.readUInt16LE(n + 2) << 16);
    }
    const n = page * PS + 24 + buf.readUInt16LE(page * PS + 24);
    const data = n + 8 + buf.readUInt16LE(n + 6);
    t.ok(buf.readBigUInt64LE(data) > 0n, 'a free-list record with entries');
    // Every slot of the record (empty ones included) names a live leaf.
    const count = Number(buf.readBigUInt64LE(data));
    for (let i = 1; i <= count; i++) buf.writeBigUInt64LE(BigInt(first(kinds, PAGE.leaf)), data + 8 * i);
  });
  t.match(p, /the free list, page \d+, node 0, free page: page \d+ is reached twice/);
});

t.test('an overflow run that does not fit the file, or its data', async (t) => {
  const long = damaged('overflow-long', (buf, kinds) => buf.writeUInt32LE(0x7fffffff, first(kinds, PAGE.overflow) * PS + 20));
  t.match(long, /a run of 2147483647 pages past the last page/);
  const flags = damaged('overflow-flags', (buf, kinds) => buf.writeUInt16LE(2, first(kinds, PAGE.overflow) * PS + 18));
  t.match(flags, /not an overflow page/);
});

t.test('a database record whose counts disagree with its tree', async (t) => {
  const p = damaged('counts', (buf, _kinds, snap) => {
    // The main database's entry count, in both meta pages.
    for (const meta of [0, PS]) buf.writeBigUInt64LE(snap.dbs.readBigUInt64LE(48 + 32) + 1n, meta + 96 + 32);
  });
  t.match(p, /the main database: its record counts \d+ entries, the tree has \d+/);
});

/** A copy of the sound file whose newest meta page claims `more` pages past its end (pages no tree reaches). */
function claimingMore(name: string, more: bigint): { copy: string; lastPage: bigint } {
  const copy = join(dir, name);
  copyFileSync(file, copy);
  const { snap } = kindsOf(file);
  const buf = readFileSync(copy);
  const newest = buf.readBigUInt64LE(152) >= buf.readBigUInt64LE(PS + 152) ? 0 : PS;
  buf.writeBigUInt64LE(snap.lastPage + more, newest + 144);
  writeFileSync(copy, buf);
  return { copy, lastPage: snap.lastPage + more };
}

t.test('a page cut off by the end of the file', async (t) => {
  // Two pages short are padded (a commit that failed); the tree never reaches them.
  t.equal(lmdbFileProblem(claimingMore('short.mdb', 2n).copy), null);
});

t.test('a file that ends before pages the snapshot does not reach is padded, however many', async (t) => {
  // LMDB counts pages it allocated and freed within a transaction without writing them: a
  // clean stop left a ledger 17 pages short, all of them free.
  const { copy, lastPage } = claimingMore('short-free.mdb', 40n);
  t.equal(lmdbFileProblem(copy), null, 'not a truncation');
  t.equal(statSync(copy).size, Number(lastPage + 1n) * PS, 'padded to the last page');
  t.equal(lmdbFileProblem(copy), null, 'and sound after');
});

t.test('a file cut before a page the snapshot reaches is truncated, an overflow run included', async (t) => {
  const { kinds, snap } = kindsOf(file);
  // The highest page the trees reach, and the highest page of an overflow run past its first.
  let reached = 0;
  let runTail = 0;
  for (let p = 2; p < kinds.length; p++) {
    if (kinds[p] === PAGE.branch || kinds[p] === PAGE.leaf || kinds[p] === PAGE.overflow) reached = p;
    if (kinds[p] === PAGE.overflow && kinds[p - 1] === PAGE.overflow) runTail = p;
  }
  t.ok(reached > 2 && runTail > 2, 'the sound file has both');
  const cut = (page: number): string | null => {
    const copy = join(dir, `cut-${page}.mdb`);
    copyFileSync(file, copy);
    truncateSync(copy, page * PS);
    return lmdbFileProblem(copy);
  };
  t.match(
    cut(reached),
    new RegExp(
      `is ${reached * PS} bytes but its last transaction uses ${Number(snap.lastPage + 1n) * PS} bytes: it was truncated \\(.*past the end of the file\\)`,
    ),
  );
  // Only the tail of a run is cut: its first page (the one read) is still in the file.
  t.match(cut(runTail), /it was truncated \(.*its run of \d+ pages ends past the end of the file\)/);
});
