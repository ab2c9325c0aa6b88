/**
 * The pending pool's record format. The pool is written in segments: each hand-off of
 * verified batches becomes ONE record, keyed by the sequence number of its first batch,
 * holding the serialized batches length-prefixed. A segment is deleted once every batch in
 * it is settled (committed or invalid) durably. Under load this turns two writes per batch
 * (put, then delete) into two per hand-off.
 *
 * A record carries a checksum: a batch in the pool was verified once, at submission, and
 * is executed as stored, so a damaged record must be refused, never executed.
 *
 *   ff ff ff ff | sha256(entries)[0..16] | entries          entries = (len:u32be | bytes)*
 *
 * Records written before the checksum existed are the bare entries (a first length of
 * 0xffffffff is impossible for them); they are still read, with the framing checked.
 */
import { createHash } from 'node:crypto';

const MARK = 0xffffffff;
const SUM_LEN = 16;
const HEAD = 4 + SUM_LEN;

/**
 * Key of the pool's identity record (segments have keys >= 0). The same identity is kept
 * in the main environment, so a pool that was deleted, emptied or swapped is noticed.
 */
export const POOL_ID_KEY = -1;

export class PendingRecordError extends Error {
  override name = 'PendingRecordError';
}

function sum(body: Uint8Array): Buffer {
  return createHash('sha256').update(body).digest().subarray(0, SUM_LEN);
}

export function encodeSegment(batches: Array<{ bytes: Uint8Array }>): Buffer {
  let size = HEAD;
  for (const b of batches) size += 4 + b.bytes.length;
  // Its own ArrayBuffer (never a slice of Node's shared pool): the segment's bytes are
  // handed on to the committer by transfer once durable.
  const out = Buffer.allocUnsafeSlow(size);
  let o = HEAD;
  for (const b of batches) {
    out.writeUInt32BE(b.bytes.length, o);
    out.set(b.bytes, o + 4);
    o += 4 + b.bytes.length;
  }
  out.writeUInt32BE(MARK, 0);
  sum(out.subarray(HEAD)).copy(out, 4);
  return out;
}

/**
 * The batches of a record written by encodeSegment, as views into it (no copies, no
 * checks: the caller wrote it). Same order as the batches given to encodeSegment.
 */
export function segmentViews(seg: Buffer): Uint8Array[] {
  const out: Uint8Array[] = [];
  let o = HEAD;
  while (o < seg.length) {
    const len = seg.readUInt32BE(o);
    out.push(seg.subarray(o + 4, o + 4 + len));
    o += 4 + len;
  }
  return out;
}

/** The batches of a record; throws PendingRecordError when the record is damaged. */
export function decodeSegment(buf: Uint8Array): Uint8Array[] {
  const view = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  let o = 0;
  if (view.length >= 4 && view.readUInt32BE(0) === MARK) {
    if (view.length < HEAD) throw new PendingRecordError('record is too short for its checksum');
    if (!sum(view.subarray(HEAD)).equals(view.subarray(4, HEAD))) throw new PendingRecordError('checksum mismatch');
    o = HEAD;
  }
  const out: Uint8Array[] = [];
  while (o < view.length) {
    if (o + 4 > view.length) throw new PendingRecordError(`truncated length prefix at byte ${o}`);
    const len = view.readUInt32BE(o);
    if (len === 0 || o + 4 + len > view.length) throw new PendingRecordError(`bad batch length ${len} at byte ${o}`);
    out.push(Uint8Array.prototype.slice.call(view, o + 4, o + 4 + len));
    o += 4 + len;
  }
  if (out.length === 0) throw new PendingRecordError('record holds no batch');
  return out;
}
