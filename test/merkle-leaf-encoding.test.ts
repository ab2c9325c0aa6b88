/**
 * The Merkle leaf value encoding is a parameter of a ledger: Sawtooth's ('cbor', the value
 * CBOR-wrapped once more in its node) or transact's ('raw', the value bytes as they are).
 * Both must give the root a from-scratch computation gives, and they differ.
 */
import t from 'tap';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import { open } from 'lmdb';
import { encode } from '../src/codec/cbor.js';
import { MerkleTree, rootOf, type LeafEncoding } from '../src/state/merkle.js';

function leaves(n: number): Map<string, Uint8Array> {
  const m = new Map<string, Uint8Array>();
  for (let i = 0; i < n; i++) m.set(crypto.randomBytes(35).toString('hex'), crypto.randomBytes(1 + (i % 40)));
  return m;
}

t.test('a tree per leaf encoding reaches the reference root, reads back and verifies its records', async (t) => {
  const dir = fs.mkdtempSync(`${os.tmpdir()}/merkle-enc-`);
  const env = open({ path: dir });
  t.teardown(async () => {
    await env.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const data = leaves(200);
  const roots: Record<string, string> = {};
  for (const enc of ['cbor', 'raw'] as LeafEncoding[]) {
    const db = env.openDB<Buffer, Buffer>(`merkle.${enc}`, { keyEncoding: 'binary', encoding: 'binary' });
    const tree = new MerkleTree(db, { leafEncoding: enc });
    const checked = new MerkleTree(db, { leafEncoding: enc, verify: true });
    db.transactionSync(() => {
      for (const [k, v] of MerkleTree.emptyRootWrites()) db.putSync(k, v);
    });
    const u = tree.update(MerkleTree.emptyRootWrites()[0]![0].toString('hex'), data, []);
    db.transactionSync(() => {
      for (const [k, v] of u.writes) db.putSync(k, v);
    });
    t.equal(u.root, rootOf(data, enc), `${enc}: root equals the reference computation`);
    for (const [a, v] of [...data].slice(0, 20)) t.same(checked.get(u.root, a), Buffer.from(v), `${enc}: value read back with hash checks`);
    roots[enc] = u.root;
  }
  t.not(roots.cbor, roots.raw, 'the two encodings give different roots');
});

t.test('the raw leaf encoding hashes the value bytes once wrapped, the cbor one twice', async (t) => {
  const a = '1cf1266e282c41be5e4254d8820772c5518a2c5a8c0c7f7eda19594a7eb539453e1ed7';
  const v = encode(new Map([['foo', 42]]));
  // With 'cbor', a leaf holding cbor_bstr(v) under 'raw' is the same node.
  const wrapped = Buffer.concat([Buffer.from([0x40 + v.length]), v]);
  t.equal(rootOf(new Map([[a, v]]), 'cbor'), rootOf(new Map([[a, wrapped]]), 'raw'));
});
