/**
 * The range walk of the Merkle-Radix tree (merkle.ts): the leaves under a root whose
 * address starts with a prefix, ascending or descending, from a start address, as
 * `MerkleTree.entries` returns them. Lazy: it reads a record (through the tree's `load`,
 * which checks it when the tree verifies) only when the iteration reaches it, and prunes
 * whole subtrees outside the prefix or before (after, when reverse) the start.
 */
import { BRANCH_HEAD, ENTRY, findChild, lowerBound, type MerkleRecord } from './records.js';

/** A chain token's fate: outside the range, inside it, or inside and still on start's path. */
const SKIP = 0;
const FREE = 1;
const TIGHT = 2;

/** A branch on the walk's path: its record, depth, and the children [lo, hi) left to visit (next: i). */
interface Frame {
  rec: Buffer;
  value: Buffer | null;
  d: number;
  tight: boolean;
  lo: number;
  hi: number;
  i: number;
}

/**
 * Leaves under `rootHash` whose address starts with `pre`, from `start` (null: from the
 * first, or the last when `reverse`), read through `load`.
 */
export function* walk(
  load: (hash: Buffer) => MerkleRecord,
  rootHash: Buffer,
  pre: Buffer,
  start: Buffer | null,
  reverse: boolean,
): Generator<{ address: string; value: Buffer }> {
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
        const r = load(h);
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
