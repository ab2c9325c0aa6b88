/** Hex checks of ids and signatures on the hot paths, and the chain hash of single-child nodes. */
import t from 'tap';
import crypto from 'node:crypto';
import { hexBytesInto, isHexId } from '../src/codec/hex.js';
import { Signer, verify } from '../src/crypto/secp256k1.js';
import { hashChain, hashSingle, hashLeaf } from '../src/state/node.js';

const id = crypto.randomBytes(64).toString('hex');

t.test('an id is 128 lowercase hex characters, nothing else', async (t) => {
  t.ok(isHexId(id));
  t.notOk(isHexId(id.toUpperCase()), 'uppercase digits');
  t.notOk(isHexId(`${id.slice(0, 127)}A`), 'one uppercase digit at the end');
  t.notOk(isHexId(id.slice(0, 126)), 'short');
  t.notOk(isHexId(`${id}00`), 'long');
  t.notOk(isHexId(`${id.slice(0, 60)}g${id.slice(61)}`), 'a non-hex character');
  t.notOk(isHexId(`${id.slice(0, 60)} ${id.slice(61)}`), 'a space');
  t.notOk(isHexId('é'.repeat(128)), 'non-ASCII of the right length');
  t.notOk(isHexId(42 as unknown as string), 'not a string');
  const out = Buffer.alloc(64);
  t.ok(hexBytesInto(id, 64, out));
  t.equal(out.toString('hex'), id, 'the bytes are left in the buffer');
  t.notOk(hexBytesInto(id, 32, out), 'the length must match the byte count');
});

t.test('a signature in uppercase hex does not verify (the text form is part of what is signed over)', async (t) => {
  const s = new Signer(crypto.randomBytes(32).toString('hex'));
  const msg = Buffer.from('message');
  const sig = s.sign(msg);
  t.ok(verify(sig, msg, s.publicKey));
  t.notOk(verify(sig.toUpperCase(), msg, s.publicKey));
  t.notOk(verify(sig, msg, s.publicKey.toUpperCase()), 'nor a key in uppercase');
  t.notOk(verify(sig, msg, `04${s.publicKey.slice(2)}`), 'nor a key that is not compressed');
  t.notOk(verify(sig, msg, 7 as unknown as string), 'nor a key that is not text');
  t.notOk(verify(sig.slice(2), msg, s.publicKey), 'nor a short signature');
});

t.test('the chain hash equals hashing its nodes one by one', async (t) => {
  const tokens = crypto.randomBytes(33);
  const leaf = hashLeaf(Buffer.from('value'));
  const oneByOne = (end: string | Uint8Array): string | Uint8Array => {
    let h = end;
    for (const tok of [...tokens].reverse()) h = hashSingle(tok, h);
    return h;
  };
  const h = oneByOne(leaf);
  t.equal(hashChain(tokens, leaf), h, 'from a leaf hash (hex)');
  const stored = crypto.randomBytes(32);
  t.equal(hashChain(tokens, stored), oneByOne(stored), 'from a stored hash (bytes)');
  t.equal(hashChain(Buffer.alloc(0), leaf), leaf, 'an empty chain is its child');
  t.equal(hashChain(Buffer.alloc(0), stored), stored.toString('hex'), 'as hex');
  t.equal(hashChain(tokens.subarray(0, 1), leaf), hashSingle(tokens[0] ?? 0, leaf), 'one node');
});
