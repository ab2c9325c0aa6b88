/**
 * The in-memory overlay of the Merkle state tree's `update` (src/state/merkle.ts): nodes on
 * the touched paths (MNode), subtrees not loaded yet (Ref), and the address parsing the tree
 * and its reference implementation share.
 */
import type { ChildHash } from './node.js';

const ADDRESS_RE = /^(?:[0-9a-f]{2})*$/;

/**
 * Address text -> bytes. Lowercase only: upstream keys the tree by the address *text*, so an
 * uppercase address would hash differently there; rejecting it keeps us from diverging.
 */
export function parseHex(s: string, what: string, allowEmpty: boolean): Buffer {
  if (typeof s !== 'string' || !ADDRESS_RE.test(s) || (!allowEmpty && s.length === 0)) {
    throw new TypeError(`${what} must be ${allowEmpty ? '' : 'non-empty '}even-length lowercase hex: ${String(s)}`);
  }
  return Buffer.from(s, 'hex');
}

/** A node hash: 64-char lowercase hex (computed here) or 32 bytes (read from a record). */
export type Hash = string | Buffer;

export function keyOf(h: Hash): Buffer {
  return typeof h === 'string' ? Buffer.from(h, 'hex') : h;
}

/** An unloaded subtree: either a stored record (hash known) or the rest of a chain. */
export class Ref {
  constructor(
    /** Hash of the subtree's top node; null until computed (only for unstored chains). */
    public hash: Hash | null,
    /** Whether `hash` is a record key. */
    public stored: boolean,
    /** Tokens of the single-child chain starting at this node; null = not loaded yet. */
    public chain: Buffer | null,
    /** The leaf's raw value (endLeaf) or the stored 32-byte hash the chain ends at. */
    public end: Uint8Array | null,
    public endLeaf: boolean,
  ) {}
}

/** A node on a touched path. Children are kept sorted by token. */
export class MNode {
  toks: number[] = [];
  /**
   * Children. A number is the offset of a stored child's 32-byte hash in `rec` (children
   * of a loaded branch record that nothing touched: no object per child).
   */
  kids: Kid[] = [];
  /** The branch record this node was loaded from, if any. */
  rec: Buffer | null = null;
  /** Raw leaf value (unwrapped) or null. */
  value: Uint8Array | null = null;
  /** Hash when known and current; recomputed for dirty nodes. */
  hash: Hash | null = null;
  /** Child hashes as of the last rehash (reused when the branch record is written). */
  hs: ChildHash[] | null = null;
  /** `hash` is a record key and the node is unchanged since it was loaded. */
  stored = false;
  dirty = false;
}

export type Kid = MNode | Ref | number;

export function storedRef(hash: Buffer): Ref {
  return new Ref(hash, true, null, null, false);
}
