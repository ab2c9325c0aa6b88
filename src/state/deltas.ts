/**
 * State deltas: what a block changed in the state, stored instead of its Merkle records.
 *
 * A block's transaction writes one delta record, keyed by its block number (an ordered,
 * appending key: one new page at the end of the tree, not a random page per leaf), and
 * its root in the roots index. The Merkle records themselves are written only at a
 * checkpoint, every N blocks, for the checkpoint's root; the state at a root between
 * checkpoints is the checkpoint's tree with the deltas after it applied, in memory.
 *
 *   version:u8 (1) | root:32 | base:i32be | baseRoot:32 | count:u32be |
 *   count x ( addrLen:u8 | addr | set:u8 | [valueLen:u32be | value] ) | sum:8
 *
 * `base` is the block number of the checkpoint the delta applies over (-1: the empty root
 * before genesis), `baseRoot` its root; changes are in the order the block wrote them.
 * `sum` is the first 8 bytes of the SHA-256 of everything before it: a delta is not
 * content-addressed like a Merkle record, and a damaged one must never be served.
 */
import crypto from 'node:crypto';
import type { Database } from 'lmdb';
import { fields, isCount, MetaRecord, type MetaDb } from '../store/meta-record.js';
import { CorruptStateError } from './merkle.js';

const VERSION = 1;
const HEAD = 1 + 32 + 4 + 32 + 4;
const SUM = 8;

function sum(buf: Buffer, end: number): Buffer {
  return crypto.createHash('sha256').update(buf.subarray(0, end)).digest().subarray(0, SUM);
}

export interface Delta {
  root: string;
  base: number;
  baseRoot: string;
  /** address (hex) -> raw value, null = deleted. */
  changes: Map<string, Uint8Array | null>;
}

/** Where a checkpoint is: the block whose root's Merkle records are all stored. */
export interface Checkpoint {
  blockNum: number;
  root: string;
}

/** ledger.meta key of the last checkpoint (a Checkpoint). */
export const CHECKPOINT_KEY = 'state_checkpoint';

/** ledger.meta key: state roots of blocks below this number were pruned (src/maintenance/prune.ts). */
export const PRUNED_BELOW_KEY = 'state_pruned_below';

export const CHECKPOINT = new MetaRecord<Checkpoint>(CHECKPOINT_KEY, fields<Checkpoint>({ blockNum: 'number', root: 'string' }));
export const PRUNED_BELOW = new MetaRecord<number>(PRUNED_BELOW_KEY, isCount);

/** The stores the state engine and its readers use. */
export interface StateStores {
  merkle: Database<Buffer, Buffer>;
  /** block number -> encoded Delta */
  deltas: Database<Buffer, number>;
  /** 32-byte root -> newest block number with that root */
  roots: Database<number, Buffer>;
  meta: MetaDb;
}

export class CorruptDeltaError extends CorruptStateError {
  override name = 'CorruptDeltaError';
}

export function encodeDelta(d: Delta): Buffer {
  let size = HEAD + SUM;
  const addrs: Buffer[] = [];
  for (const [a, v] of d.changes) {
    const ab = Buffer.from(a, 'hex');
    addrs.push(ab);
    size += 1 + ab.length + 1 + (v === null ? 0 : 4 + v.length);
  }
  const out = Buffer.allocUnsafe(size);
  out[0] = VERSION;
  out.write(d.root, 1, 32, 'hex');
  out.writeInt32BE(d.base, 33);
  out.write(d.baseRoot, 37, 32, 'hex');
  out.writeUInt32BE(d.changes.size, 69);
  let o = HEAD;
  let i = 0;
  for (const v of d.changes.values()) {
    const ab = addrs[i++] as Buffer;
    if (ab.length > 0xff) throw new RangeError('state address too long');
    out[o++] = ab.length;
    ab.copy(out, o);
    o += ab.length;
    if (v === null) out[o++] = 0;
    else {
      out[o++] = 1;
      out.writeUInt32BE(v.length, o);
      out.set(v, o + 4);
      o += 4 + v.length;
    }
  }
  sum(out, o).copy(out, o);
  return out;
}

/** The header fields only (no changes decoded). */
export function deltaHead(buf: Buffer): { root: string; base: number; baseRoot: string } {
  if (buf.length < HEAD + SUM || buf[0] !== VERSION || !sum(buf, buf.length - SUM).equals(buf.subarray(buf.length - SUM))) {
    throw new CorruptDeltaError('state delta record is damaged (checksum mismatch)');
  }
  return { root: buf.toString('hex', 1, 33), base: buf.readInt32BE(33), baseRoot: buf.toString('hex', 37, 69) };
}

/** Decodes a delta; values are views into `buf` (pass a buffer that is not reused). */
export function decodeDelta(buf: Buffer): Delta {
  const head = deltaHead(buf);
  const n = buf.readUInt32BE(69);
  const changes = new Map<string, Uint8Array | null>();
  const end = buf.length - SUM;
  let o = HEAD;
  try {
    for (let i = 0; i < n; i++) {
      const len = buf[o++] as number;
      if (o + len + 1 > end) throw new RangeError('short');
      const a = buf.toString('hex', o, o + len);
      o += len;
      if (buf[o++] === 0) changes.set(a, null);
      else {
        const vl = buf.readUInt32BE(o);
        if (o + 4 + vl > end) throw new RangeError('short');
        changes.set(a, buf.subarray(o + 4, o + 4 + vl));
        o += 4 + vl;
      }
    }
  } catch {
    throw new CorruptDeltaError('state delta record is damaged');
  }
  if (o !== end) throw new CorruptDeltaError('state delta record is damaged');
  return { ...head, changes };
}
