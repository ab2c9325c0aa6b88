/**
 * Compact LMDB records for the Merkle-Radix tree. Key = 32-byte binary node hash; value
 * starts with a tag byte:
 *
 *   BRANCH        01 | n:u16be | n x (token:u8 | hash:32)            node with n children, v = null
 *   BRANCH_VALUE  02 | n:u16be | n x (token:u8 | hash:32) | raw       same, plus a leaf value
 *   CHAIN_LEAF    03 | k:u16be | k tokens | raw                       k single-child nodes, then a leaf
 *   CHAIN_NODE    04 | k:u16be | k tokens | hash:32                   k >= 1 single-child nodes, then the
 *                                                                     node stored under `hash`
 *
 * A chain record is keyed by the hash of its top node; the hashes of the nodes inside it
 * are not stored and are recomputed when needed. Branch children are sorted by token.
 * Every hash a record references is itself a record key. Values are the raw bytes the
 * transaction stored (the double CBOR wrap is applied only when hashing).
 */
import type { ChildHash } from './node.js';

export const TAG_BRANCH = 0x01;
export const TAG_BRANCH_VALUE = 0x02;
export const TAG_CHAIN_LEAF = 0x03;
export const TAG_CHAIN_NODE = 0x04;

/** Offset of the first child entry in a branch record, and the stride of entries. */
export const BRANCH_HEAD = 3;
export const ENTRY = 33;

export interface BranchRecord {
  branch: true;
  /** The whole record; child i has token rec[3+33i] and hash rec[4+33i .. 36+33i]. */
  rec: Buffer;
  n: number;
  value: Buffer | null;
}

export interface ChainRecord {
  branch: false;
  tokens: Buffer;
  /** The leaf's raw value (endLeaf) or the 32-byte hash of the node the chain ends at. */
  end: Buffer;
  endLeaf: boolean;
}

export type MerkleRecord = BranchRecord | ChainRecord;

export class CorruptRecordError extends Error {
  override name = 'CorruptRecordError';
}

export function parseRecord(rec: Buffer): MerkleRecord {
  if (rec.length < 3) throw new CorruptRecordError('merkle record too short');
  const tag = rec[0];
  const n = rec.readUInt16BE(1);
  if (tag === TAG_BRANCH || tag === TAG_BRANCH_VALUE) {
    const end = BRANCH_HEAD + n * ENTRY;
    if (rec.length < end || (tag === TAG_BRANCH && rec.length !== end) || n > 256) {
      throw new CorruptRecordError('merkle branch record has a bad length');
    }
    return { branch: true, rec, n, value: tag === TAG_BRANCH_VALUE ? rec.subarray(end) : null };
  }
  if (tag === TAG_CHAIN_LEAF || tag === TAG_CHAIN_NODE) {
    const tokens = rec.subarray(3, 3 + n);
    const end = rec.subarray(3 + n);
    if (tokens.length !== n || (tag === TAG_CHAIN_NODE && (end.length !== 32 || n === 0))) {
      throw new CorruptRecordError('merkle chain record has a bad length');
    }
    return { branch: false, tokens, end, endLeaf: tag === TAG_CHAIN_LEAF };
  }
  throw new CorruptRecordError(`unknown merkle record tag ${tag}`);
}

/**
 * Child hashes as hex, binary, or offsets into `src` (see node.ts ChildHash). An offset
 * must point at a hash inside a branch record entry whose token byte (just before it) is
 * the child's token, which holds for children left in place from a loaded branch record.
 */
export function branchRecord(tokens: ArrayLike<number>, hashes: ArrayLike<ChildHash>, value: Uint8Array | null, src: Buffer | null = null): Buffer {
  const n = tokens.length;
  const end = BRANCH_HEAD + n * ENTRY;
  const rec = Buffer.allocUnsafe(end + (value === null ? 0 : value.length));
  rec[0] = value === null ? TAG_BRANCH : TAG_BRANCH_VALUE;
  rec.writeUInt16BE(n, 1);
  for (let i = 0, o = BRANCH_HEAD; i < n; i++, o += ENTRY) {
    const h = hashes[i]!;
    if (typeof h === 'number') {
      // Entries left in place in src (token at h-1): copy the whole run of adjacent ones.
      let j = i + 1;
      while (j < n && hashes[j] === h + (j - i) * ENTRY) j++;
      src!.copy(rec, o, h - 1, h - 1 + (j - i) * ENTRY);
      o += (j - i - 1) * ENTRY;
      i = j - 1;
      continue;
    }
    rec[o] = tokens[i]!;
    if (typeof h === 'string') rec.write(h, o + 1, 32, 'hex');
    else rec.set(h, o + 1);
  }
  if (value !== null) rec.set(value, end);
  return rec;
}

/** tokens: the chain's path tokens; end: raw leaf value (endLeaf) or 32-byte end hash. */
export function chainRecord(tokens: ArrayLike<number>, end: Uint8Array, endLeaf: boolean): Buffer {
  const k = tokens.length;
  if (k > 0xffff) throw new RangeError('merkle chain too long');
  const rec = Buffer.allocUnsafe(3 + k + end.length);
  rec[0] = endLeaf ? TAG_CHAIN_LEAF : TAG_CHAIN_NODE;
  rec.writeUInt16BE(k, 1);
  for (let i = 0; i < k; i++) rec[3 + i] = tokens[i]!;
  rec.set(end, 3 + k);
  return rec;
}

/** Index of the child with token t in a branch record, or -1 (children are sorted). */
export function findChild(rec: Buffer, n: number, t: number): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const x = rec[BRANCH_HEAD + mid * ENTRY]!;
    if (x === t) return mid;
    if (x < t) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

/** First child index whose token is >= t. */
export function lowerBound(rec: Buffer, n: number, t: number): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (rec[BRANCH_HEAD + mid * ENTRY]! < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
