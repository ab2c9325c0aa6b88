/**
 * Sawtooth-compatible Merkle-Radix state tree over an lmdb-js sub-database.
 *
 * Hashes are exact: every node of the radix tree (one level
 * per address byte) is hashed with its full CBOR encoding, so roots equal upstream's.
 * Storage is compact (records.ts): one record per branch node and one per single-child
 * chain, keyed by the top node's 32-byte hash. Records are content-addressed and never
 * deleted, so every historical root stays readable.
 *
 * `update` is pure: it loads only the records on the touched paths, applies all sets and
 * deletes to an in-memory overlay, hashes every dirty node once (deepest first), and returns
 * the new root with the records to write. The overlay is lazy: a loaded branch keeps its
 * untouched children as offsets into its record, a chain is unrolled one node at a time
 * only where a path goes through it, and a new leaf below an existing node is one object
 * until another path in the same update needs to go through it. Computed hashes are hex
 * strings (the parent's encoding needs the hex anyway, and a hex digest is cheaper than a
 * Buffer one); hashes read from records stay binary.
 *
 * Beside it: the overlay's node types (merkle-nodes.ts), the errors (merkle-errors.ts) and
 * the from-scratch reference root the tests compare with (merkle-reference.ts).
 */
import type { Database } from 'lmdb';
import { hashChain, hashLeaf, hashNode, type ChildHash, type LeafEncoding } from './node.js';
import type { StateStore } from './state-store.js';
import { CorruptStateError, UnknownRootError, missingRecord } from './merkle-errors.js';
import { MNode, Ref, keyOf, parseHex, storedRef, type Hash, type Kid } from './merkle-nodes.js';
import { BRANCH_HEAD, ENTRY, branchRecord, chainRecord, findChild, lowerBound, parseRecord, type MerkleRecord } from './records.js';

export type { LeafEncoding };
export { CorruptStateError, UnknownRootError } from './merkle-errors.js';
export { rootOf } from './merkle-reference.js';

export const EMPTY_ROOT = '708ca7fbb701799bb387f2e50deaca402e8502abe229f705693d2d4f350e1ad6';

/** Hash (hex) of the top node of a stored record, recomputed from its content. */
function recordHash(r: MerkleRecord, wrapped: boolean): string {
  if (r.branch) {
    const toks = new Array<number>(r.n);
    const hs = new Array<number>(r.n);
    for (let i = 0, o = BRANCH_HEAD; i < r.n; i++, o += ENTRY) {
      toks[i] = r.rec[o]!;
      hs[i] = o + 1;
    }
    return hashNode(toks, hs, r.value, r.rec, wrapped);
  }
  const end: ChildHash = r.endLeaf ? hashLeaf(r.end, wrapped) : r.end;
  return hashChain(r.tokens, end);
}

const ROOT_RE = /^[0-9a-f]{64}$/;

/** Index of t in sorted toks, or ~insertionPoint. */
function search(toks: number[], t: number): number {
  let lo = 0;
  let hi = toks.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const x = toks[mid]!;
    if (x === t) return mid;
    if (x < t) lo = mid + 1;
    else hi = mid;
  }
  return ~lo;
}

const NO_TOKENS: number[] = [];
const SKIP = 0;
const FREE = 1;
const TIGHT = 2;

interface Frame {
  rec: Buffer;
  value: Buffer | null;
  d: number;
  tight: boolean;
  lo: number;
  hi: number;
  i: number;
}

export class MerkleTree implements StateStore {
  private readonly key = Buffer.alloc(32);
  /** Check every record read against its key (content-addressed: the key is its hash). */
  private readonly verify: boolean;
  /** Leaf values CBOR-wrapped once more before hashing (Sawtooth's 'cbor' leaf encoding). */
  private readonly wrapped: boolean;

  constructor(
    private readonly db: Database<Buffer, Buffer>,
    opts: { verify?: boolean; leafEncoding?: LeafEncoding } = {},
  ) {
    this.verify = opts.verify === true;
    this.wrapped = (opts.leafEncoding ?? 'cbor') === 'cbor';
  }

  /** Parses a record read under `key`, checking its hash when verifying. */
  private parse(key: Buffer, raw: Buffer): MerkleRecord {
    let r: MerkleRecord;
    try {
      r = parseRecord(raw);
    } catch (err) {
      throw new CorruptStateError(`merkle record ${key.toString('hex')} is damaged: ${(err as Error).message}`);
    }
    if (this.verify && recordHash(r, this.wrapped) !== key.toString('hex')) {
      throw new CorruptStateError(`merkle record ${key.toString('hex')} does not match its hash: the state database is damaged`);
    }
    return r;
  }

  /** Records needed for the empty root (write them once at genesis). */
  static emptyRootWrites(): Array<[Buffer, Buffer]> {
    return [[Buffer.from(EMPTY_ROOT, 'hex'), branchRecord(NO_TOKENS, [], null)]];
  }

  hasRoot(root: string): boolean {
    if (typeof root !== 'string' || !ROOT_RE.test(root)) return false;
    this.key.write(root, 'hex');
    return this.db.getBinaryFast(this.key) !== undefined;
  }

  /** Raw value (one CBOR wrap removed, exactly what the transaction stored) at address under root, or undefined. */
  get(root: string, address: string): Buffer | undefined {
    const addr = parseHex(address, 'address', true);
    const key = this.key;
    this.rootKey(root).copy(key);
    let raw = this.db.getBinaryFast(key);
    if (raw === undefined) throw new UnknownRootError(root);
    let d = 0;
    for (;;) {
      // getBinaryFast's buffer is reused by the next read: copy what we keep before reading.
      const r = this.parse(key, raw);
      if (r.branch) {
        if (d === addr.length) return r.value === null ? undefined : Buffer.from(r.value);
        const i = findChild(r.rec, r.n, addr[d]!);
        if (i < 0) return undefined;
        const o = BRANCH_HEAD + i * ENTRY + 1;
        r.rec.copy(key, 0, o, o + 32);
        d++;
      } else {
        const k = r.tokens.length;
        if (addr.length - d < k || r.tokens.compare(addr, d, d + k) !== 0) return undefined;
        d += k;
        if (r.endLeaf) return d === addr.length ? Buffer.from(r.end) : undefined;
        r.end.copy(key);
      }
      raw = this.db.getBinaryFast(key);
      if (raw === undefined) throw missingRecord(key);
    }
  }

  /**
   * Leaves under root whose address starts with prefix, ascending (descending if reverse),
   * from the first address >= start (<= start when reverse). Lazy: records are read as the
   * iteration reaches them. Throws UnknownRootError at the call, not at the first next().
   */
  entries(root: string, prefix: string, opts: { start?: string; reverse?: boolean } = {}): Generator<{ address: string; value: Buffer }> {
    const rootHash = this.rootKey(root);
    if (this.db.getBinaryFast(rootHash) === undefined) throw new UnknownRootError(root);
    const pre = parseHex(prefix, 'prefix', true);
    const start = opts.start === undefined ? null : parseHex(opts.start, 'start', true);
    return this.walk(rootHash, pre, start, opts.reverse === true);
  }

  private *walk(rootHash: Buffer, pre: Buffer, start: Buffer | null, reverse: boolean): Generator<{ address: string; value: Buffer }> {
    let path = Buffer.allocUnsafe(64);
    const grow = (n: number): void => {
      if (n <= path.length) return;
      const p = Buffer.allocUnsafe(Math.max(n, path.length * 2));
      path.copy(p);
      path = p;
    };
    /** Fate of chain token `tok` at depth d: outside the range, inside, or still on start's path. */
    const state = (d: number, tok: number, tight: boolean): number => {
      if (d < pre.length && tok !== pre[d]) return SKIP;
      if (!tight) return FREE;
      if (d >= start!.length) return reverse ? SKIP : FREE;
      const s = start![d]!;
      if (tok === s) return TIGHT;
      return tok > s !== reverse ? FREE : SKIP;
    };
    /** Whether a value at depth d (on start's path if tight) is inside the range. */
    const valueOk = (d: number, tight: boolean): boolean => d >= pre.length && (!tight || reverse || d === start!.length);
    const entry = (d: number, value: Buffer) => ({ address: path.toString('hex', 0, d), value });

    const stack: Frame[] = [];
    let next: Buffer | null = rootHash;
    let nd = 0;
    let ntight = start !== null;
    for (;;) {
      if (next !== null) {
        let h: Buffer = next;
        let d = nd;
        let tight = ntight;
        next = null;
        descend: for (;;) {
          const r = this.load(h);
          if (r.branch) {
            let lo = 0;
            let hi = r.n;
            if (d < pre.length) {
              const i = findChild(r.rec, r.n, pre[d]!);
              if (i < 0) hi = 0;
              else [lo, hi] = [i, i + 1];
            }
            if (tight) {
              if (d < start!.length) {
                if (reverse) hi = Math.min(hi, lowerBound(r.rec, r.n, start![d]! + 1));
                else lo = Math.max(lo, lowerBound(r.rec, r.n, start![d]!));
              } else if (reverse) hi = lo;
            }
            stack.push({ rec: r.rec, value: r.value, d, tight, lo, hi, i: reverse ? hi - 1 : lo });
            if (!reverse && r.value !== null && valueOk(d, tight)) yield entry(d, r.value);
            break;
          }
          grow(d + r.tokens.length);
          for (const t of r.tokens) {
            const s = state(d, t, tight);
            if (s === SKIP) break descend;
            tight = s === TIGHT;
            path[d++] = t;
          }
          if (r.endLeaf) {
            if (valueOk(d, tight)) yield entry(d, r.end);
            break;
          }
          h = r.end;
        }
      }
      const f = stack[stack.length - 1];
      if (f === undefined) return;
      if (reverse ? f.i < f.lo : f.i >= f.hi) {
        stack.pop();
        if (reverse && f.value !== null && valueOk(f.d, f.tight)) yield entry(f.d, f.value);
        continue;
      }
      const o = BRANCH_HEAD + f.i * ENTRY;
      f.i += reverse ? -1 : 1;
      // [lo, hi) already excludes children outside the prefix and before/after start.
      const t = f.rec[o]!;
      grow(f.d + 1);
      path[f.d] = t;
      next = f.rec.subarray(o + 1, o + 33);
      nd = f.d + 1;
      ntight = f.tight && f.d < start!.length && t === start![f.d];
    }
  }

  /**
   * The new root after applying sets (address -> raw value) and deletes, plus the records
   * to write for it. Deletes are applied after sets (an address in both ends up absent);
   * deleting an absent address is a no-op. Reads records; writes nothing.
   */
  update(root: string, sets: Map<string, Uint8Array>, deletes: Iterable<string>): { root: string; writes: Array<[Buffer, Buffer]> } {
    const rootHash = this.rootKey(root);
    if (this.db.getBinaryFast(rootHash) === undefined) throw new UnknownRootError(root);
    const top = this.materialize(storedRef(rootHash));
    for (const [address, raw] of sets) this.applySet(top, parseHex(address, 'address', false), raw);
    for (const address of deletes) this.applyDelete(top, parseHex(address, 'address', false));
    if (!top.dirty) return { root, writes: [] };
    this.rehash(top); // a dirty node's hash is always recomputed as hex
    if (top.hash === null) top.hash = EMPTY_ROOT; // everything deleted
    const writes: Array<[Buffer, Buffer]> = [];
    this.writeBranch(top, writes); // the root is always a branch record
    return { root: top.hash as string, writes };
  }

  // ---------------------------------------------------------------------------------------

  private rootKey(root: string): Buffer {
    if (typeof root !== 'string' || !ROOT_RE.test(root)) throw new UnknownRootError(String(root));
    return Buffer.from(root, 'hex');
  }

  private load(hash: Buffer): MerkleRecord {
    const rec = this.db.getBinary(hash);
    if (rec === undefined) throw missingRecord(hash);
    return this.parse(hash, rec);
  }

  /** Turns the top node of a Ref into an MNode (its children stay unloaded). */
  private materialize(ref: Ref): MNode {
    const node = new MNode();
    node.hash = ref.hash;
    node.stored = ref.stored;
    if (ref.chain === null) {
      const r = this.load(ref.hash as Buffer);
      if (r.branch) {
        node.rec = r.rec;
        for (let i = 0, o = BRANCH_HEAD; i < r.n; i++, o += ENTRY) {
          node.toks.push(r.rec[o]!);
          node.kids.push(o + 1);
        }
        node.value = r.value;
        return node;
      }
      ref.chain = r.tokens;
      ref.end = r.end;
      ref.endLeaf = r.endLeaf;
    }
    const chain = ref.chain;
    if (chain.length === 0) {
      node.value = ref.end; // a leaf
      return node;
    }
    node.toks.push(chain[0]!);
    node.kids.push(chain.length === 1 && !ref.endLeaf ? storedRef(ref.end as Buffer) : new Ref(null, false, chain.subarray(1), ref.end, ref.endLeaf));
    return node;
  }

  /** The kid as an object (a stored offset becomes a Ref). */
  private kidRef(node: MNode, kid: Kid): MNode | Ref {
    return typeof kid === 'number' ? storedRef(node.rec!.subarray(kid, kid + 32)) : kid;
  }

  private child(node: MNode, i: number): MNode {
    const kid = node.kids[i]!;
    if (kid instanceof MNode) return kid;
    const m = this.materialize(typeof kid === 'number' ? storedRef(node.rec!.subarray(kid, kid + 32)) : kid);
    node.kids[i] = m;
    return m;
  }

  private applySet(top: MNode, addr: Buffer, raw: Uint8Array): void {
    let cur = top;
    cur.dirty = true;
    for (let d = 0; d < addr.length; d++) {
      const t = addr[d]!;
      const i = search(cur.toks, t);
      if (i < 0) {
        // New subtree: one unmaterialized chain straight down to the leaf.
        cur.toks.splice(~i, 0, t);
        cur.kids.splice(~i, 0, new Ref(null, false, addr.subarray(d + 1), raw, true));
        return;
      }
      cur = this.child(cur, i);
      cur.dirty = true;
    }
    cur.value = raw;
  }

  private applyDelete(top: MNode, addr: Buffer): void {
    const path: MNode[] = [top];
    let cur = top;
    for (let d = 0; d < addr.length; d++) {
      const i = search(cur.toks, addr[d]!);
      if (i < 0) return;
      cur = this.child(cur, i);
      path.push(cur);
    }
    if (cur.value === null) return;
    cur.value = null;
    for (const n of path) n.dirty = true;
  }

  /**
   * Post-order over dirty nodes: prune children left empty, then hash the node once.
   * Leaves node.hash null if the node itself is now empty (its parent drops it).
   */
  private rehash(node: MNode): void {
    const { toks, kids } = node;
    const hs: ChildHash[] = [];
    let w = 0;
    for (let i = 0; i < kids.length; i++) {
      const kid = kids[i]!;
      if (typeof kid === 'number') hs.push(kid);
      else {
        if (kid instanceof MNode && kid.dirty) {
          this.rehash(kid);
          if (kid.hash === null) continue; // pruned
        }
        hs.push(this.hashOf(kid));
      }
      toks[w] = toks[i]!;
      kids[w] = kid;
      w++;
    }
    toks.length = w;
    kids.length = w;
    node.stored = false;
    node.hs = hs;
    node.hash = w === 0 && node.value === null ? null : hashNode(toks, hs, node.value, node.rec, this.wrapped);
  }

  /** Hash of a clean subtree or a rehashed node (computed once and cached). */
  private hashOf(kid: MNode | Ref): Hash {
    if (kid.hash !== null) return kid.hash;
    if (kid instanceof Ref) {
      // Only unstored chains lack a hash, and their tokens are always known.
      const chain = kid.chain!;
      const end: Hash = kid.endLeaf ? hashLeaf(kid.end!, this.wrapped) : (kid.end as Buffer);
      const h = chain.length === 0 ? end : hashChain(chain, end);
      kid.hash = h;
      return h;
    }
    // A clean node without a known hash came from a chain, so its child is an object
    // (stored offsets only occur in nodes loaded from branch records, whose hash is known).
    const h = hashNode(
      kid.toks,
      kid.kids.map((k) => this.hashOf(k as MNode | Ref)),
      kid.value,
      null,
      this.wrapped,
    );
    kid.hash = h;
    return h;
  }

  /** Only for rehashed nodes: every new branch is dirty (clean unstored nodes are chain parts). */
  private writeBranch(node: MNode, writes: Array<[Buffer, Buffer]>): void {
    writes.push([keyOf(node.hash!), branchRecord(node.toks, node.hs!, node.value, node.rec)]);
    for (const kid of node.kids) if (typeof kid !== 'number') this.ensureStored(kid, writes);
  }

  /** Makes sure the subtree's top hash is a record key, writing records for new nodes. */
  private ensureStored(kid: MNode | Ref, writes: Array<[Buffer, Buffer]>): void {
    if (kid.stored) return;
    if (kid instanceof Ref) {
      writes.push([keyOf(this.hashOf(kid)), chainRecord(kid.chain!, kid.end!, kid.endLeaf)]);
    } else if (kid.value === null && kid.kids.length === 1) {
      this.writeChain(kid, writes);
    } else if (kid.kids.length === 0) {
      writes.push([keyOf(this.hashOf(kid)), chainRecord(NO_TOKENS, kid.value!, true)]);
    } else {
      this.writeBranch(kid, writes);
    }
  }

  /** One record for the maximal single-child chain starting at top. */
  private writeChain(top: MNode, writes: Array<[Buffer, Buffer]>): void {
    const toks: number[] = [];
    let cur: MNode | Ref = top;
    let rec: Buffer;
    for (;;) {
      if (cur instanceof MNode) {
        if (cur.value === null && cur.kids.length === 1) {
          toks.push(cur.toks[0]!);
          cur = this.kidRef(cur, cur.kids[0]!);
          continue;
        }
        if (cur.kids.length === 0) {
          rec = chainRecord(toks, cur.value!, true);
        } else {
          this.ensureStored(cur, writes);
          rec = chainRecord(toks, keyOf(this.hashOf(cur)), false);
        }
        break;
      }
      if (cur.chain === null) {
        // A stored subtree of unknown shape: continue the chain through it if it is one.
        const r = this.load(cur.hash as Buffer);
        if (r.branch) {
          if (r.n === 1 && r.value === null) {
            toks.push(r.rec[BRANCH_HEAD]!);
            cur = storedRef(r.rec.subarray(BRANCH_HEAD + 1, BRANCH_HEAD + ENTRY));
            continue;
          }
          rec = chainRecord(toks, cur.hash as Buffer, false);
          break;
        }
        cur.chain = r.tokens;
        cur.end = r.end;
        cur.endLeaf = r.endLeaf;
      }
      for (const t of cur.chain) toks.push(t);
      rec = chainRecord(toks, cur.end!, cur.endLeaf);
      break;
    }
    writes.push([keyOf(this.hashOf(top)), rec]);
  }
}
