/**
 * Reads of a ledger's state at any readable root, for threads other than the committer
 * (the query service, the storage tools): a checkpoint's root straight from its Merkle
 * records; a root between checkpoints as its checkpoint's tree under an overlay of the
 * deltas after it (deltas.ts), built in memory from the delta records and extended as
 * the chain grows.
 *
 * How far back: `history` blocks behind the head (0 = every root still stored), and not
 * below what was pruned. A root beyond it, or whose checkpoint was pruned, is an unknown root (UnknownRootError, which
 * the ledger gateway answers 404 code 50, as upstream answers a root it no longer holds).
 */
import { MerkleTree, UnknownRootError } from './merkle.js';
import type { LeafEncoding } from './node.js';
import type { StateView } from './state-store.js';
import { PRUNED_BELOW, decodeDelta, deltaHead, type StateStores } from './deltas.js';

export interface StateReaderOptions {
  leafEncoding: LeafEncoding;
  /** Check every Merkle record read against its hash. */
  verify?: boolean;
  /** Blocks behind the head whose roots are readable (0 or absent: all). */
  history?: number;
  /** The head's block number (needed with `history`). */
  headNum?: () => number;
}

/** One address's values in an overlay, newest first. */
interface Version {
  b: number;
  v: Buffer | null;
  older: Version | null;
}

/** The changes of the blocks after one checkpoint, up to `upTo`, by address. */
class Overlay {
  readonly map = new Map<string, Version>();
  upTo: number;
  constructor(
    readonly base: number,
    readonly baseRoot: string,
  ) {
    this.upTo = base;
  }

  apply(b: number, changes: Map<string, Uint8Array | null>): void {
    for (const [a, v] of changes) this.map.set(a, { b, v: v as Buffer | null, older: this.map.get(a) ?? null });
    this.upTo = b;
  }

  /** The value at block b: a Buffer, null (deleted), or undefined (unchanged since the checkpoint). */
  at(address: string, b: number): Buffer | null | undefined {
    for (let x: Version | null | undefined = this.map.get(address); x; x = x.older) if (x.b <= b) return x.v;
    return undefined;
  }
}

/** Overlays kept (the head's, and one for reads at an older checkpoint). */
const OVERLAYS = 2;
/** Resolved roots remembered. */
const RESOLVED = 4096;
const ROOT_RE = /^[0-9a-f]{64}$/;

export class StateReader implements StateView {
  readonly #s: StateStores;
  readonly #tree: MerkleTree;
  readonly #history: number;
  readonly #headNum: () => number;
  /** Roots of blocks below this were pruned (only offline, so read once). */
  readonly #prunedBelow: number;
  #overlays: Overlay[] = [];
  /**
   * Roots resolved before (a root's block and state never change; the head is read at
   * every request, and resolving reads and checks its delta): root -> block and overlay
   * (null: the root's records are stored).
   */
  #resolved = new Map<string, { b: number | undefined; ov: Overlay | null }>();

  constructor(stores: StateStores, opts: StateReaderOptions) {
    this.#s = stores;
    this.#tree = new MerkleTree(stores.merkle, { verify: opts.verify === true, leafEncoding: opts.leafEncoding });
    this.#history = opts.history ?? 0;
    this.#headNum = opts.headNum ?? (() => Number.MAX_SAFE_INTEGER);
    this.#prunedBelow = PRUNED_BELOW.get(stores.meta) ?? 0;
  }

  /** Whether `root` is readable here. */
  hasRoot(root: string): boolean {
    try {
      this.#resolve(root);
      return true;
    } catch (err) {
      if (err instanceof UnknownRootError) return false;
      throw err;
    }
  }

  get(root: string, address: string): Buffer | undefined {
    const r = this.#resolve(root);
    if (r === null) return this.#tree.get(root, address);
    const v = r.ov.at(address, r.b);
    if (v === undefined) return this.#tree.get(r.ov.baseRoot, address);
    return v === null ? undefined : Buffer.from(v);
  }

  entries(root: string, prefix: string, opts: { start?: string; reverse?: boolean } = {}): Generator<{ address: string; value: Buffer }> {
    const r = this.#resolve(root);
    if (r === null) return this.#tree.entries(root, prefix, opts);
    // Checks prefix and start, and throws now (not at the first next()) for a pruned base.
    const base = this.#tree.entries(r.ov.baseRoot, prefix, opts);
    const reverse = opts.reverse === true;
    const start = opts.start;
    const mine: Array<{ address: string; value: Buffer | null }> = [];
    for (const [address] of r.ov.map) {
      if (!address.startsWith(prefix)) continue;
      if (start !== undefined && (reverse ? address > start : address < start)) continue;
      const v = r.ov.at(address, r.b);
      if (v !== undefined) mine.push({ address, value: v });
    }
    mine.sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
    if (reverse) mine.reverse();
    return merge(base, mine, reverse);
  }

  /** null: the root's records are stored; else its overlay and block. */
  #resolve(root: string): { ov: Overlay; b: number } | null {
    const hit = this.#resolved.get(root);
    // An overlay no longer kept is not used from here (it would hold its memory).
    if (hit !== undefined && (hit.ov === null || this.#overlays.includes(hit.ov))) {
      this.#checkHistory(root, hit.b);
      return hit.ov === null ? null : { ov: hit.ov, b: hit.b as number };
    }
    const r = this.#lookup(root);
    if (this.#resolved.size >= RESOLVED) this.#resolved.clear();
    this.#resolved.set(root, r);
    return r.ov === null ? null : { ov: r.ov, b: r.b as number };
  }

  #checkHistory(root: string, b: number | undefined): void {
    if (b !== undefined && (b < this.#prunedBelow || (this.#history > 0 && this.#headNum() - b >= this.#history))) {
      throw new UnknownRootError(root);
    }
  }

  #lookup(root: string): { b: number | undefined; ov: Overlay | null } {
    if (typeof root !== 'string' || !ROOT_RE.test(root)) throw new UnknownRootError(String(root));
    const key = Buffer.from(root, 'hex');
    const b = this.#s.roots.get(key);
    this.#checkHistory(root, b);
    if (this.#tree.hasRoot(root)) return { b, ov: null };
    if (b === undefined) throw new UnknownRootError(root);
    const raw = this.#s.deltas.get(b);
    if (raw === undefined) throw new UnknownRootError(root);
    const head = deltaHead(raw);
    // Its checkpoint pruned away: the root is gone as a pruned root is.
    if (head.root !== root || !this.#tree.hasRoot(head.baseRoot)) throw new UnknownRootError(root);
    let ov = this.#overlays.find((o) => o.base === head.base && o.baseRoot === head.baseRoot);
    if (ov === undefined) {
      ov = new Overlay(head.base, head.baseRoot);
      this.#overlays.unshift(ov);
      if (this.#overlays.length > OVERLAYS) this.#overlays.length = OVERLAYS;
    }
    for (let x = ov.upTo + 1; x <= b; x++) {
      const d = x === b ? raw : this.#s.deltas.get(x);
      if (d === undefined) throw new UnknownRootError(root);
      ov.apply(x, decodeDelta(d).changes);
    }
    return { b, ov };
  }
}

/** The base tree's leaves with the overlay's (sorted the same way) in place; null values are deletions. */
function* merge(
  base: Generator<{ address: string; value: Buffer }>,
  mine: Array<{ address: string; value: Buffer | null }>,
  reverse: boolean,
): Generator<{ address: string; value: Buffer }> {
  let i = 0;
  const before = (a: string, b: string): boolean => (reverse ? a > b : a < b);
  for (const e of base) {
    for (let m = mine[i]; m !== undefined && (before(m.address, e.address) || m.address === e.address); m = mine[i]) {
      i++;
      if (m.value !== null) yield { address: m.address, value: Buffer.from(m.value) };
      if (m.address === e.address) break;
    }
    if (i > 0 && mine[i - 1]?.address === e.address) continue; // the overlay's value replaced it
    yield e;
  }
  for (; i < mine.length; i++) {
    const m = mine[i];
    if (m !== undefined && m.value !== null) yield { address: m.address, value: Buffer.from(m.value) };
  }
}
