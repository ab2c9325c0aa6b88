import t from 'tap';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import { open, type Database, type RootDatabase } from 'lmdb';
import { encode, encodeBytes } from '../src/codec/cbor.js';
import { EMPTY_ROOT, MerkleTree, UnknownRootError, rootOf } from '../src/state/merkle.js';
import { decodeNode, encodeNode, hashLeaf, hashNode, hashSingle, headLen, nodeBytes } from '../src/state/node.js';
import {
  CorruptRecordError,
  TAG_BRANCH,
  TAG_BRANCH_VALUE,
  TAG_CHAIN_LEAF,
  TAG_CHAIN_NODE,
  branchRecord,
  chainRecord,
  parseRecord,
} from '../src/state/records.js';

const FOO = '1cf1266e282c41be5e4254d8820772c5518a2c5a8c0c7f7eda19594a7eb539453e1ed7';
const BAR = '1cf1261ff39bc5b188615273484021dfb16fd8284cf684ccf0fc795be3aa2fc1e6c181';
const FOO_ROOT = '0f39e005cc4a4f1ddc9f1fcc8e9e3f9c4b73f4f76c7925a9f9b1b85cc6bbd809';
const FOO_BAR_ROOT = '3a39e39d4f3ab559228e022d319daef08e2a2b1b58c0cfcaa2b051dedf684abb';
const SHORT_ROOT = 'b57998bfcc7697c45db6cbb57100d53aa08bbeb49836ffa9812343e1cfde7a66';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const ascii = (s: string) => Buffer.from(s, 'latin1');
const fooValue = () => encode(new Map([['foo', 42]]));
const barValue = () => encode(new Map([['bar', 7]]));
const shortLeaves = () =>
  new Map<string, Uint8Array>([
    ['ab0000', ascii('0001')],
    ['ab0a01', ascii('0002')],
    ['abff00', ascii('0003')],
  ]);

/** The tap test object (the callback parameter of t.test). */
type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];

interface Store {
  env: RootDatabase;
  db: Database<Buffer, Buffer>;
  tree: MerkleTree;
  apply(root: string, sets: Map<string, Uint8Array>, deletes?: Iterable<string>): string;
  put(writes: Array<[Buffer, Buffer]>): void;
}

/** A real LMDB environment in a temp dir, closed and removed when the test ends. */
function store(tt: TapTest): Store {
  const dir = fs.mkdtempSync(`${os.tmpdir()}/merkle-`);
  const env = open({ path: dir });
  const db = env.openDB<Buffer, Buffer>('merkle', { keyEncoding: 'binary', encoding: 'binary' });
  const tree = new MerkleTree(db);
  const put = (writes: Array<[Buffer, Buffer]>) =>
    db.transactionSync(() => {
      for (const [k, v] of writes) db.putSync(k, v);
    });
  put(MerkleTree.emptyRootWrites());
  tt.teardown(async () => {
    await env.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return {
    env,
    db,
    tree,
    put,
    apply(root, sets, deletes = []) {
      const r = tree.update(root, sets, deletes);
      put(r.writes);
      return r.root;
    },
  };
}

/** Every hash the node module computes during fn (it calls crypto.hash('sha512', ...)). */
function recordHashes(fn: () => void): string[] {
  const orig = crypto.hash;
  const seen: string[] = [];
  (crypto as { hash: unknown }).hash = (alg: string, data: Uint8Array, enc: string) => {
    seen.push(hex(data));
    return (orig as (a: string, d: Uint8Array, e: string) => unknown)(alg, data, enc);
  };
  try {
    fn();
  } finally {
    (crypto as { hash: unknown }).hash = orig;
  }
  return seen;
}

/** Checks the storage invariants reachable from root; returns the number of records. */
function checkRecords(tt: TapTest, db: Database<Buffer, Buffer>, root: string): number {
  const seen = new Set<string>();
  let bad = 0;
  const visit = (h: Buffer, isRoot: boolean): void => {
    const key = hex(h);
    if (seen.has(key)) return;
    seen.add(key);
    const raw = db.getBinary(h);
    if (raw === undefined) {
      bad++;
      tt.fail(`record ${key} missing`);
      return;
    }
    const r = parseRecord(raw);
    if (r.branch) {
      // Compact: only the root may be a branch with a single child and no value.
      if (!isRoot && r.n === 1 && r.value === null) {
        bad++;
        tt.fail(`single-child branch record ${key}`);
      }
      for (let i = 0; i < r.n; i++) visit(r.rec.subarray(4 + 33 * i, 36 + 33 * i), false);
    } else if (!r.endLeaf) {
      // Maximal chains end at a branch.
      const end = parseRecord(db.getBinary(r.end)!);
      if (!end.branch || (end.n === 1 && end.value === null)) {
        bad++;
        tt.fail(`chain ${key} is not maximal`);
      }
      visit(r.end, false);
    }
  };
  visit(Buffer.from(root, 'hex'), true);
  tt.equal(bad, 0, 'records are walkable and compact');
  return seen.size;
}

t.test('node encoding vectors', async (t) => {
  t.equal(hex(nodeBytes([], [], null)), 'a26163a06176f6', 'empty node bytes');
  t.equal(hex(encodeNode([], null)), 'a26163a06176f6', 'empty node bytes (text form)');
  t.equal(hashNode([], [], null), EMPTY_ROOT, 'empty root hash');
  t.equal(rootOf(new Map()), EMPTY_ROOT, 'rootOf of no leaves');
  t.equal(hex(encodeNode([['ab', '123']], ascii('hello'))), 'a26163a16261626331323361764568656c6c6f', 'node_serialize vector');
  const d = decodeNode(Buffer.from('a26163a162303063616263617647676f6f64627965', 'hex'));
  t.same(d.v, ascii('goodbye'), 'node_deserialize v');
  t.same([...d.c], [['00', 'abc']], 'node_deserialize c');
  t.equal(decodeNode(Buffer.from('a26163a06176f6', 'hex')).v, null, 'interior v is null');

  const raw = fooValue();
  t.equal(hex(raw), 'a163666f6f182a', 'intkey foo=42 value');
  t.equal(hex(nodeBytes([], [], raw)), 'a26163a061764847a163666f6f182a', 'leaf node is double wrapped');
  t.equal(hex(encodeNode([], encodeBytes(raw))), 'a26163a061764847a163666f6f182a', 'text form agrees');
  t.equal(hashLeaf(raw), hashNode([], [], raw), 'hashLeaf = hashNode for a leaf');
  t.equal(rootOf(new Map([[FOO, raw]])), FOO_ROOT, 'foo root (reference)');
  t.equal(
    rootOf(
      new Map([
        [FOO, raw],
        [BAR, barValue()],
      ]),
    ),
    FOO_BAR_ROOT,
    'foo+bar root (reference)',
  );
  t.equal(rootOf(shortLeaves()), SHORT_ROOT, 'short-address root (reference)');
});

t.test('fast encoder equals the text encoder', async (t) => {
  let seed = 7;
  const rnd = (n: number) => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return seed % n;
  };
  for (const n of [0, 1, 2, 23, 24, 255, 256]) {
    for (const valueLen of [-1, 0, 1, 22, 23, 24, 254, 255, 256, 70000]) {
      const toks = [...new Set(Array.from({ length: n }, () => rnd(256)))].sort((a, b) => a - b);
      if (n === 256) toks.splice(0, toks.length, ...Array.from({ length: 256 }, (_, i) => i));
      const hashes = toks.map(() => crypto.randomBytes(32));
      const raw = valueLen < 0 ? null : crypto.randomBytes(valueLen);
      const fast = nodeBytes(toks, hashes, raw);
      const text = encodeNode(
        toks.map((x, i) => [x.toString(16).padStart(2, '0'), hex(hashes[i]!)] as [string, string]),
        raw === null ? null : encodeBytes(raw),
      );
      if (!fast.equals(text)) t.fail(`mismatch n=${toks.length} value=${valueLen}`);
      const h = crypto.createHash('sha512').update(text).digest('hex').slice(0, 64);
      if (hashNode(toks, hashes, raw) !== h) t.fail(`hash mismatch n=${toks.length} value=${valueLen}`);
      // The same node with children given as hex text, and as offsets into a record.
      const rec = Buffer.concat([Buffer.alloc(3), ...hashes]);
      const offs = hashes.map((_, i) => 3 + 32 * i);
      if (hashNode(toks, hashes.map(hex), raw) !== h || hashNode(toks, offs, raw, rec) !== h) {
        t.fail(`hash forms disagree n=${toks.length} value=${valueLen}`);
      }
    }
  }
  const child = crypto.randomBytes(32);
  t.equal(hashSingle(0x0f, child), hashNode([0x0f], [hex(child)], null), 'single-child fast path');
  t.equal(
    hashNode([0x0f], [child], ascii('x')),
    crypto
      .createHash('sha512')
      .update(encodeNode([['0f', hex(child)]], encodeBytes(ascii('x'))))
      .digest('hex')
      .slice(0, 64),
    'one child plus a value',
  );
  t.equal(headLen(0x10000), 5, 'u32 heads');
  t.equal(
    hex(
      encodeNode(
        [
          ['b', '1'],
          ['aa', '2'],
        ],
        null,
      ),
    ),
    hex(
      encode(
        new Map([
          [
            'c',
            new Map([
              ['b', '1'],
              ['aa', '2'],
            ]),
          ],
          ['v', null],
        ]),
      ),
    ),
    'canonical key order',
  );
  t.end();
});

t.test('decodeNode rejects non-nodes', async (t) => {
  const bad = (v: unknown) => Buffer.from(encode(v as never));
  const m = (...e: Array<[unknown, unknown]>) => new Map<unknown, unknown>(e);
  t.throws(() => decodeNode(bad([1])), /map with keys/);
  t.throws(() => decodeNode(bad(m(['c', m()]))), /map with keys/);
  t.throws(() => decodeNode(bad(m(['c', []], ['v', null]))), /"c" must be a map/);
  t.throws(() => decodeNode(bad(m(['c', m([1, 'x'])], ['v', null]))), /text -> text/);
  t.throws(() => decodeNode(bad(m(['c', m()], ['v', 'text']))), /null or a byte string/);
});

t.test('records', async (t) => {
  const h = crypto.randomBytes(32);
  const b = parseRecord(branchRecord([1, 2], [h, h], null));
  t.ok(b.branch && b.n === 2 && b.value === null, 'branch');
  const hs = [0, 1, 2, 3, 4].map(() => crypto.randomBytes(32));
  const src = branchRecord([1, 2, 3, 4], hs.slice(0, 4), null);
  t.same(
    branchRecord([1, 2, 3, 4, 9], [4, 37, hex(hs[4]!), 103, hs[0]!], null, src),
    branchRecord([1, 2, 3, 4, 9], [hs[0]!, hs[1]!, hs[4]!, hs[3]!, hs[0]!], null),
    'children given as hex, binary and runs of offsets into a source record',
  );
  t.same(
    branchRecord([2, 3], [37, 70], ascii('v'), src),
    branchRecord([2, 3], [hs[1]!, hs[2]!], ascii('v')),
    'a run of offsets that ends the record',
  );
  const bv = parseRecord(branchRecord([1], [h], ascii('')));
  t.ok(bv.branch && bv.value !== null && bv.value.length === 0, 'branch with an empty value');
  const cl = parseRecord(chainRecord([5, 6], ascii('v'), true));
  t.ok(!cl.branch && cl.endLeaf && hex(cl.tokens) === '0506', 'chain to leaf');
  const cn = parseRecord(chainRecord([5], h, false));
  t.ok(!cn.branch && !cn.endLeaf && cn.end.equals(h), 'chain to node');
  t.throws(() => parseRecord(Buffer.from([TAG_BRANCH])), CorruptRecordError);
  t.throws(() => parseRecord(Buffer.from([TAG_BRANCH, 0, 1, 0])), /bad length/);
  t.throws(() => parseRecord(Buffer.from([TAG_BRANCH, 0, 0, 0])), /bad length/);
  t.throws(() => parseRecord(Buffer.from([TAG_BRANCH_VALUE, 1, 1, 0])), /bad length/);
  t.throws(() => parseRecord(Buffer.from([TAG_CHAIN_LEAF, 0, 3, 0])), /bad length/);
  t.throws(() => parseRecord(Buffer.from([TAG_CHAIN_NODE, 0, 1, 0, 1])), /bad length/);
  t.throws(() => parseRecord(Buffer.concat([Buffer.from([TAG_CHAIN_NODE, 0, 0]), h])), /bad length/);
  t.throws(() => parseRecord(Buffer.from([9, 0, 0])), /unknown merkle record tag 9/);
  t.throws(() => chainRecord(new Uint8Array(0x10000), h, false), RangeError);
});

t.test('vectors through LMDB', async (t) => {
  const s = store(t);
  t.ok(s.tree.hasRoot(EMPTY_ROOT), 'empty root stored');
  const fooRoot = s.apply(EMPTY_ROOT, new Map([[FOO, fooValue()]]));
  t.equal(fooRoot, FOO_ROOT, 'foo root');
  const both = s.apply(fooRoot, new Map([[BAR, barValue()]]));
  t.equal(both, FOO_BAR_ROOT, 'foo+bar root, incremental');
  t.equal(
    s.apply(
      EMPTY_ROOT,
      new Map([
        [FOO, fooValue()],
        [BAR, barValue()],
      ]),
    ),
    FOO_BAR_ROOT,
    'foo+bar in one update',
  );
  t.equal(s.apply(EMPTY_ROOT, shortLeaves()), SHORT_ROOT, 'short addresses');
  t.same(s.tree.get(both, FOO), fooValue(), 'get foo');
  t.same(s.tree.get(both, BAR), barValue(), 'get bar');
  t.equal(s.tree.get(fooRoot, BAR), undefined, 'bar absent under the old root');
  t.same(s.tree.get(fooRoot, FOO), fooValue(), 'old root still readable');
  t.same(
    [...s.tree.entries(both, '1cf126')].map((e) => e.address),
    [BAR, FOO],
    'entries ascending',
  );
  // Compact storage: one leaf in an empty tree = the root branch + one chain record.
  t.equal(s.tree.update(EMPTY_ROOT, new Map([[FOO, fooValue()]]), []).writes.length, 2, 'two records for one leaf');
  t.equal(checkRecords(t, s.db, both), 5, 'foo+bar uses 5 records');
});

t.test('each touched node is hashed once', async (t) => {
  const s = store(t);
  let r!: ReturnType<MerkleTree['update']>;
  let seen = recordHashes(() => (r = s.tree.update(EMPTY_ROOT, new Map([[FOO, fooValue()]]), [])));
  t.equal(seen.length, 36, 'root + 35 levels');
  t.equal(new Set(seen).size, seen.length, 'no node hashed twice');
  s.put(r.writes);
  seen = recordHashes(() => (r = s.tree.update(FOO_ROOT, new Map([[BAR, barValue()]]), [])));
  // root, 1c, 1cf1, 1cf126 + bar's 32 new nodes + foo's 32 chain nodes below the new branch
  t.equal(seen.length, 4 + 32 + 32, 'touched nodes only');
  t.equal(new Set(seen).size, seen.length, 'no node hashed twice');
  t.equal(r.root, FOO_BAR_ROOT);
  seen = recordHashes(() => s.tree.update(FOO_ROOT, new Map(), ['1cf1266e']));
  t.equal(seen.length, 0, 'deleting an absent address hashes nothing');
});

t.test('set, overwrite, delete, prune', async (t) => {
  const s = store(t);
  const { tree } = s;
  const r1 = s.apply(EMPTY_ROOT, shortLeaves());
  const r2 = s.apply(r1, new Map([['ab0a01', ascii('9999')]]));
  t.not(r2, r1, 'overwrite changes the root');
  t.same(tree.get(r2, 'ab0a01'), ascii('9999'));
  t.same(tree.get(r1, 'ab0a01'), ascii('0002'), 'old value under the old root');
  t.equal(s.apply(r2, new Map([['ab0a01', ascii('0002')]])), r1, 'writing the old value back restores the root');

  const same = tree.update(r1, new Map(), ['ab0a02', 'cc0000', 'ab0a', 'ab0a0101']);
  t.same(same, { root: r1, writes: [] }, 'deleting absent addresses is a no-op');

  const r3 = s.apply(r1, new Map(), ['ab0a01']);
  const left = shortLeaves();
  left.delete('ab0a01');
  t.equal(r3, rootOf(left), 'delete = root of the remaining leaves');
  t.equal(tree.get(r3, 'ab0a01'), undefined);
  t.equal(s.apply(r3, new Map(), ['ab0000', 'abff00']), EMPTY_ROOT, 'deleting everything prunes to the empty root');
  t.equal(s.apply(r1, new Map(), [...shortLeaves().keys(), 'ab0000']), EMPTY_ROOT, 'duplicate deletes are harmless');

  const r4 = s.apply(r1, new Map([['ab0b00', ascii('x')]]), ['ab0b00']);
  t.equal(r4, r1, 'an address both set and deleted ends up absent');
  const r5 = s.apply(r1, new Map([['ab0a01', ascii('x')]]), ['ab0a01']);
  t.equal(r5, r3, 'delete wins over set for an existing address');

  const e = s.apply(EMPTY_ROOT, new Map([['00', ascii('')]]));
  t.equal(e, rootOf(new Map([['00', ascii('')]])), 'empty raw value is a leaf, not an absence');
  t.same(tree.get(e, '00'), ascii(''), 'empty value reads back as an empty buffer');
});

t.test('one update sets and deletes under a shared 31-byte prefix', async (t) => {
  const s = store(t);
  const prefix = `1cf126${'ab'.repeat(28)}`; // 31 bytes
  const a = `${prefix}00000001`;
  const b = `${prefix}00000002`;
  const c = `${prefix}01000000`;
  const d = `${prefix}00010000`;
  const start = new Map<string, Uint8Array>([
    [a, ascii('a')],
    [b, ascii('b')],
    [FOO, fooValue()],
  ]);
  const r0 = s.apply(EMPTY_ROOT, start);
  t.equal(r0, rootOf(start));
  // a and c share exactly 31 bytes; a, b and d share 32.
  for (const [sets, dels] of [
    [[c], [a]],
    [[c], [a, b]],
    [[d], [b]],
    [
      [a, c, d],
      [b, FOO],
    ],
  ] as Array<[string[], string[]]>) {
    const leaves = new Map(start);
    const setMap = new Map(sets.map((x) => [x, ascii(`new ${x.slice(-8)}`)] as [string, Uint8Array]));
    for (const [k, v] of setMap) leaves.set(k, v);
    for (const x of dels) leaves.delete(x);
    const r = s.apply(r0, setMap, dels);
    t.equal(r, rootOf(leaves), `set ${sets.map((x) => x.slice(-8))} delete ${dels.map((x) => x.slice(-8))}`);
    for (const [k, v] of leaves) t.same(s.tree.get(r, k), v);
    for (const x of dels) t.equal(s.tree.get(r, x), undefined);
    checkRecords(t, s.db, r);
  }
});

t.test('addresses of different lengths (values on interior nodes)', async (t) => {
  const s = store(t);
  const leaves = new Map<string, Uint8Array>([
    ['ab', ascii('top')],
    ['ab00', ascii('mid')],
    ['ab0001', ascii('low')],
    ['ab01', ascii('side')],
  ]);
  const r = s.apply(EMPTY_ROOT, leaves);
  t.equal(r, rootOf(leaves));
  t.same(s.tree.get(r, 'ab'), ascii('top'));
  t.same(s.tree.get(r, 'ab00'), ascii('mid'));
  t.equal(s.tree.get(r, ''), undefined, 'the root has no value');
  t.equal(s.tree.get(r, 'ab0001ff'), undefined, 'below a leaf');
  t.same(
    [...s.tree.entries(r, '')].map((e) => e.address),
    ['ab', 'ab00', 'ab0001', 'ab01'],
    'a node value precedes its children',
  );
  t.same(
    [...s.tree.entries(r, '', { reverse: true })].map((e) => e.address),
    ['ab01', 'ab0001', 'ab00', 'ab'],
    'and follows them in reverse',
  );
  t.same(
    [...s.tree.entries(r, 'ab00', { start: 'ab00' })].map((e) => e.address),
    ['ab00', 'ab0001'],
  );
  t.same(
    [...s.tree.entries(r, 'ab', { start: 'ab00', reverse: true })].map((e) => e.address),
    ['ab00', 'ab'],
  );
  t.same(
    [...s.tree.entries(r, '', { start: 'ab0000', reverse: true })].map((e) => e.address),
    ['ab00', 'ab'],
  );
  t.same(
    [...s.tree.entries(r, '', { start: 'ab0000' })].map((e) => e.address),
    ['ab0001', 'ab01'],
  );

  t.same([...s.tree.entries(r, 'ac')], [], 'prefix without a child');
  t.same([...s.tree.entries(r, 'ab02')], [], 'prefix past the children');
  const chained = s.apply(EMPTY_ROOT, new Map([['ab0000', ascii('x')]]));
  t.same([...s.tree.entries(chained, 'ab01')], [], 'prefix leaving a chain');
  t.same([...s.tree.entries(chained, 'ab0000ff')], [], 'prefix longer than the address');
  t.same([...s.tree.entries(chained, '', { start: 'ab0001' })], [], 'start past a chain');
  t.same([...s.tree.entries(chained, '', { start: 'ab0001', reverse: true })].length, 1, 'reverse start past a chain');
  t.same([...s.tree.entries(chained, '', { start: 'ab', reverse: true })], [], 'reverse start above a chain');
  const long = 'ab'.repeat(100);
  const longRoot = s.apply(
    EMPTY_ROOT,
    new Map([
      [long, ascii('deep')],
      [`${long}00`, ascii('deeper')],
    ]),
  );
  t.equal(
    longRoot,
    rootOf(
      new Map([
        [long, ascii('deep')],
        [`${long}00`, ascii('deeper')],
      ]),
    ),
    '101-byte address',
  );
  t.same(
    [...s.tree.entries(longRoot, '')].map((e) => e.address),
    [long, `${long}00`],
    'long addresses listed',
  );

  const r2 = s.apply(r, new Map(), ['ab00']);
  leaves.delete('ab00');
  t.equal(r2, rootOf(leaves), 'deleting an interior value keeps its children');
  t.same(s.tree.get(r2, 'ab0001'), ascii('low'));
  const r3 = s.apply(r2, new Map([['ab01ff', ascii('deeper')]]), ['ab01', 'ab0001']);
  leaves.set('ab01ff', ascii('deeper'));
  leaves.delete('ab01');
  leaves.delete('ab0001');
  t.equal(r3, rootOf(leaves));
  t.same(s.tree.get(r3, 'ab'), ascii('top'));
  checkRecords(t, s.db, r3);
});

t.test('same subtree hash as a root and as an inner node', async (t) => {
  // The node at "00" in B has the same bytes as the root of A, so their records share a key.
  const A = new Map<string, Uint8Array>([['ab01', ascii('v')]]);
  const B = new Map<string, Uint8Array>([
    ['ff00ab01', ascii('v')],
    ['ff0100', ascii('w')],
  ]);
  for (const order of ['AB', 'BA']) {
    t.test(order, async (t) => {
      const s = store(t);
      const roots: Record<string, string> = {};
      for (const which of order) roots[which] = s.apply(EMPTY_ROOT, which === 'A' ? A : B);
      t.equal(roots.A, rootOf(A));
      t.equal(roots.B, rootOf(B));
      t.same(s.tree.get(roots.A!, 'ab01'), ascii('v'));
      t.same(s.tree.get(roots.B!, 'ff00ab01'), ascii('v'));
      t.same(
        [...s.tree.entries(roots.A!, '')].map((e) => e.address),
        ['ab01'],
      );
      // Deleting ff0100 leaves "ff" with one child whose record may be A's root branch.
      const r = s.apply(roots.B!, new Map(), ['ff0100']);
      t.equal(r, rootOf(new Map([['ff00ab01', ascii('v')]])));
      t.same(s.tree.get(r, 'ff00ab01'), ascii('v'));
      checkRecords(t, s.db, r);
      // Updating from A's root works whichever record its key holds.
      const ra = s.apply(roots.A!, new Map([['ab02', ascii('x')]]));
      t.equal(
        ra,
        rootOf(
          new Map([
            ['ab01', ascii('v')],
            ['ab02', ascii('x')],
          ]),
        ),
      );
    });
  }
});

t.test('a branch that loses all but one child becomes a chain', async (t) => {
  const s = store(t);
  const leaves = new Map<string, Uint8Array>([
    ['ff00aa', ascii('1')],
    ['ff00bb', ascii('2')],
    ['ff0100', ascii('3')],
    ['ff0200', ascii('4')],
  ]);
  const r = s.apply(EMPTY_ROOT, leaves);
  const r2 = s.apply(r, new Map(), ['ff0100', 'ff0200']);
  leaves.delete('ff0100');
  leaves.delete('ff0200');
  t.equal(r2, rootOf(leaves));
  t.equal(checkRecords(t, s.db, r2), 5, 'root, chain ff00, branch, two leaves');
  const r3 = s.apply(r2, new Map(), ['ff00aa']);
  leaves.delete('ff00aa');
  t.equal(r3, rootOf(leaves));
  t.equal(checkRecords(t, s.db, r3), 2, 'root and one chain');

  // A clean, partly materialized chain (from deleting an absent address) next to a change.
  const single = new Map<string, Uint8Array>([['ab0000', ascii('x')]]);
  const q = s.apply(EMPTY_ROOT, single);
  const q2 = s.apply(q, new Map([['ab0100', ascii('y')]]), ['ab0001', 'ab000000']);
  single.set('ab0100', ascii('y'));
  t.equal(q2, rootOf(single));
  checkRecords(t, s.db, q2);
});

t.test('errors', async (t) => {
  const s = store(t);
  const { tree } = s;
  const unknown = 'ff'.repeat(32);
  t.throws(() => tree.get(unknown, 'ab'), UnknownRootError);
  t.throws(() => tree.entries(unknown, ''), /state root not found/);
  t.throws(() => tree.update(unknown, new Map(), []), UnknownRootError);
  t.throws(() => tree.get('xyz', 'ab'), UnknownRootError);
  t.equal(tree.hasRoot(unknown), false);
  t.equal(tree.hasRoot('XYZ'), false);
  t.equal(tree.hasRoot(EMPTY_ROOT.toUpperCase()), false);
  t.throws(() => tree.get(EMPTY_ROOT, 'abc'), /even-length lowercase hex/);
  t.throws(() => tree.get(EMPTY_ROOT, 'AB'), /even-length lowercase hex/);
  t.throws(() => tree.update(EMPTY_ROOT, new Map([['', ascii('x')]]), []), /non-empty/);
  t.throws(() => tree.update(EMPTY_ROOT, new Map(), ['zz']), TypeError);
  t.throws(() => tree.entries(EMPTY_ROOT, 'a'), /prefix/);
  t.throws(() => tree.entries(EMPTY_ROOT, '', { start: 'g0' }), /start/);
  t.throws(() => rootOf(new Map([['ABCD', ascii('x')]])), TypeError);

  // A root whose records reference a missing child: corrupt, not "unknown root".
  const child = crypto.randomBytes(32);
  const rec = branchRecord([0xab], [child], null);
  const fake = hashNode([0xab], [child], null);
  s.put([[Buffer.from(fake, 'hex'), rec]]);
  t.throws(() => tree.get(fake, 'ab00'), /missing: the state database is corrupt/);
  t.throws(() => [...tree.entries(fake, '')], /corrupt/);
  t.throws(() => tree.update(fake, new Map([['ab00', ascii('x')]]), []), /corrupt/);
  const chainFake = crypto.randomBytes(32);
  s.put([[chainFake, chainRecord([0xab], child, false)]]);
  t.throws(() => tree.get(hex(chainFake), 'ab00'), /corrupt/);
  t.equal(tree.get(hex(chainFake), 'ac'), undefined, 'mismatch before the missing record');
});

/** Deterministic PRNG (mulberry32). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

t.test('randomized updates against the reference', async (t) => {
  const s = store(t);
  const { tree } = s;
  const rnd = prng(20240611);
  const int = (n: number) => Math.floor(rnd() * n);
  const randBytes = (n: number) => Buffer.from(Array.from({ length: n }, () => int(256)));
  // Addresses cluster: copy an existing address and change a suffix from a random depth on,
  // so prefixes of every length (up to 34 bytes) are shared; some bytes come from a tiny
  // alphabet so siblings collide often.
  const pool: string[] = [];
  const newAddress = (): string => {
    if (pool.length === 0 || int(5) === 0) {
      const a = Buffer.from([0x1c, 0xf1, 0x26, ...randBytes(32)].map((b, i) => (i < 6 ? b % 3 : b)));
      return hex(a);
    }
    const base = Buffer.from(pool[int(pool.length)]!, 'hex');
    const from = 3 + int(32);
    for (let i = from; i < 35; i++) base[i] = int(4) === 0 ? int(3) : int(256);
    return hex(base);
  };

  const model = new Map<string, Uint8Array>();
  const history: Array<{ root: string; leaves: Map<string, Uint8Array> }> = [];
  let root = EMPTY_ROOT;
  const updates = 12;
  let ops = 0;
  for (let u = 0; u < updates; u++) {
    const sets = new Map<string, Uint8Array>();
    const deletes: string[] = [];
    const n = 150 + int(300);
    for (let i = 0; i < n; i++) {
      const k = int(10);
      const existing = [...model.keys()];
      if (k < 6 || existing.length === 0) {
        const a = k < 5 || existing.length === 0 ? newAddress() : existing[int(existing.length)]!;
        sets.set(a, randBytes(int(40)));
        pool.push(a);
      } else if (k < 9) deletes.push(existing[int(existing.length)]!);
      else deletes.push(newAddress()); // usually absent
      ops++;
    }
    const r = tree.update(root, sets, deletes);
    for (const [k, v] of sets) model.set(k, v);
    for (const k of deletes) model.delete(k);
    const expected = rootOf(model);
    t.equal(r.root, expected, `update ${u}: root equals rootOf (${model.size} leaves)`);
    s.put(r.writes);
    root = r.root;
    history.push({ root, leaves: new Map(model) });
    t.ok(tree.hasRoot(root));

    let wrong = 0;
    for (const [k, v] of model) if (!tree.get(root, k)?.equals(v)) wrong++;
    for (const k of deletes) if (!model.has(k) && tree.get(root, k) !== undefined) wrong++;
    t.equal(wrong, 0, `update ${u}: every leaf reads back`);

    const sorted = [...model.keys()].sort();
    const list = [...tree.entries(root, '')];
    t.same(
      list.map((e) => e.address),
      sorted,
      'entries ascending',
    );
    t.equal(list.filter((e) => !e.value.equals(model.get(e.address)!)).length, 0, 'entries values');
    t.same(
      [...tree.entries(root, '', { reverse: true })].map((e) => e.address),
      [...sorted].reverse(),
      'reverse',
    );

    for (let q = 0; q < 20; q++) {
      const some = sorted.length ? sorted[int(sorted.length)]! : newAddress();
      const prefix = int(4) === 0 ? '' : some.slice(0, 2 * int(36));
      const startSrc = int(3) === 0 ? newAddress() : sorted.length ? sorted[int(sorted.length)]! : some;
      const start = int(4) === 0 ? undefined : startSrc.slice(0, 2 * (1 + int(35)));
      const reverse = int(2) === 0;
      let want = sorted.filter((a) => a.startsWith(prefix));
      if (start !== undefined) want = want.filter((a) => (reverse ? a <= start : a >= start));
      if (reverse) want.reverse();
      const got = [...tree.entries(root, prefix, { start, reverse })].map((e) => e.address);
      if (JSON.stringify(got) !== JSON.stringify(want)) {
        t.same(got, want, `entries prefix=${prefix} start=${start} reverse=${reverse}`);
      }
    }
    // Laziness: taking one entry does not walk the rest.
    const it = tree.entries(root, '');
    const first = it.next();
    t.equal(first.done, sorted.length === 0);
    it.return(undefined);
    checkRecords(t, s.db, root);
  }
  t.ok(ops > 2000, `${ops} operations`);

  // Old roots stay readable after later updates.
  for (const h of history.slice(0, -1)) {
    const list = [...tree.entries(h.root, '')];
    t.equal(list.length, h.leaves.size, 'old root: every leaf listed');
    let wrong = 0;
    for (const e of list) if (!e.value.equals(h.leaves.get(e.address) ?? ascii('missing'))) wrong++;
    for (const [k, v] of h.leaves) if (!tree.get(h.root, k)?.equals(v)) wrong++;
    t.equal(wrong, 0, 'old root: values');
  }
  // Updating from an old root works too (a fork).
  const old = history[2]!;
  const forkSets = new Map<string, Uint8Array>([[newAddress(), ascii('fork')]]);
  const fork = tree.update(old.root, forkSets, [old.leaves.keys().next().value!]);
  const forkLeaves = new Map(old.leaves);
  for (const [k, v] of forkSets) forkLeaves.set(k, v);
  forkLeaves.delete(old.leaves.keys().next().value!);
  t.equal(fork.root, rootOf(forkLeaves), 'update from an old root');
});
