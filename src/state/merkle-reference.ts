/**
 * Reference implementation of the state root: the whole radix tree built in memory from a
 * full leaf map and hashed from scratch, with none of src/state/merkle.ts's storage or
 * overlay. Tests check the stored tree against it.
 */
import crypto from 'node:crypto';
import { encode, encodeBytes, type CborValue } from '../codec/cbor.js';
import type { LeafEncoding } from './node.js';
import { parseHex } from './merkle-nodes.js';

/** Reference implementation: root hash computed from scratch from a full leaf map (used by tests; may be slow). */
export function rootOf(leaves: Map<string, Uint8Array>, leafEncoding: LeafEncoding = 'cbor'): string {
  interface T {
    kids: Map<string, T>;
    v: Uint8Array | null;
  }
  const top: T = { kids: new Map(), v: null };
  for (const [address, raw] of leaves) {
    parseHex(address, 'address', false);
    let cur = top;
    for (let i = 0; i < address.length; i += 2) {
      const tok = address.slice(i, i + 2);
      let nx = cur.kids.get(tok);
      if (nx === undefined) {
        nx = { kids: new Map(), v: null };
        cur.kids.set(tok, nx);
      }
      cur = nx;
    }
    cur.v = raw;
  }
  const hash = (n: T): string => {
    const c = new Map<CborValue, CborValue>();
    for (const [tok, kid] of n.kids) c.set(tok, hash(kid));
    const node = new Map<CborValue, CborValue>([
      ['v', n.v === null ? null : leafEncoding === 'cbor' ? encodeBytes(n.v) : n.v],
      ['c', c],
    ]);
    return crypto.createHash('sha512').update(encode(node)).digest('hex').slice(0, 64);
  };
  return hash(top);
}
