/**
 * An envelope: verified batches a member appends to the cluster's log in etcd, as one
 * value, signed by that member's node key (the members check it before executing).
 *
 *   "CEV1" | signer public key (33) | time ms (u64) | count (u32) |
 *   count × (length (u32) | batch bytes) | signature (64, compact r||s over SHA-256 of all before)
 *
 * The time is the ingesting member's clock when it packed the envelope: the round's time
 * on every member (nothing in a block depends on a member's own clock).
 *
 * An envelope that also closes a block (a cut carried by an envelope, so that a log under
 * load needs no cut entries): the same with "CEV2" and, after the time, the revision of the
 * first envelope of the block it closes (u64). Its batches are the block's last ones when
 * that block is still open where the envelope comes in the log; otherwise the mark is stale
 * and the envelope is an ordinary one.
 *
 *   "CEV2" | signer public key (33) | time ms (u64) | closes (u64) | count (u32) | … as CEV1
 *
 * A cut: the log's other kind of entry, after the time-to-cut messages of Fabric's Kafka
 * orderer. It closes the block that the envelope at revision `target` opened:
 *
 *   "CUT1" | signer public key (33) | target revision (u64) | signature (64)
 *
 * A removal (`cairn cluster remove`): a member's key taken out of the cluster, signed by the
 * chain key. Envelopes and cuts that key signs at later revisions of the log are refused.
 *
 *   "RMV1" | chain public key (33) | removed member's public key (33) | signature (64)
 */
import { type Signer, verify } from '../crypto/secp256k1.js';

const MAGIC = Buffer.from('CEV1');
const CLOSING_MAGIC = Buffer.from('CEV2');
const CUT_MAGIC = Buffer.from('CUT1');
const CUT_SIZE = 4 + 33 + 8 + 64;
const REMOVAL_MAGIC = Buffer.from('RMV1');
const REMOVAL_SIZE = 4 + 33 + 33 + 64;
const HEAD = 4 + 33 + 8 + 4;
/** The header of an envelope that closes a block: the block's first revision after the time. */
const CLOSING_HEAD = HEAD + 8;
const SIG = 64;
/** Bytes an envelope of one batch adds to it at most: header, the batch's length, signature. */
export const ENVELOPE_OVERHEAD = CLOSING_HEAD + 4 + SIG;

export interface EnvelopeBatch {
  id: string;
  bytes: Uint8Array;
}

export interface Envelope {
  signer: string;
  ts: number;
  /** The revision of the first envelope of the block this one closes; 0: none. */
  closes: number;
  batches: EnvelopeBatch[];
}

export class EnvelopeError extends Error {}

/**
 * Encodes and signs an envelope of `batches` (whose ids the caller has verified); `closes`,
 * when not 0, the revision of the first envelope of the block it closes (CEV2).
 */
export function encodeEnvelope(signer: Signer, ts: number, batches: readonly Uint8Array[], closes = 0): Buffer {
  const head = closes > 0 ? CLOSING_HEAD : HEAD;
  let size = head + SIG;
  for (const b of batches) size += 4 + b.length;
  const out = Buffer.allocUnsafe(size);
  (closes > 0 ? CLOSING_MAGIC : MAGIC).copy(out, 0);
  Buffer.from(signer.publicKey, 'hex').copy(out, 4);
  out.writeBigUInt64BE(BigInt(ts), 37);
  if (closes > 0) out.writeBigUInt64BE(BigInt(closes), 45);
  out.writeUInt32BE(batches.length, head - 4);
  let o = head;
  for (const b of batches) {
    out.writeUInt32BE(b.length, o);
    out.set(b, o + 4);
    o += 4 + b.length;
  }
  Buffer.from(signer.sign(out.subarray(0, o)), 'hex').copy(out, o);
  return out;
}

/** Encodes and signs a cut of the block that the envelope at revision `target` opened. */
export function encodeCut(signer: Signer, target: number): Buffer {
  const out = Buffer.allocUnsafe(CUT_SIZE);
  CUT_MAGIC.copy(out, 0);
  Buffer.from(signer.publicKey, 'hex').copy(out, 4);
  out.writeBigUInt64BE(BigInt(target), 37);
  Buffer.from(signer.sign(out.subarray(0, 45)), 'hex').copy(out, 45);
  return out;
}

/** Whether a log value is a cut (by its magic; decodeCut checks the rest). */
export function isCut(value: Uint8Array): boolean {
  return value.length >= 4 && Buffer.from(value.buffer, value.byteOffset, 4).equals(CUT_MAGIC);
}

/** Decodes a cut and checks its signature; throws EnvelopeError naming what is wrong. */
export function decodeCut(value: Uint8Array, known: (signer: string) => boolean): { signer: string; target: number } {
  const buf = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  if (buf.length !== CUT_SIZE || !isCut(buf)) throw new EnvelopeError('not a cut (bad magic or size)');
  const signer = buf.toString('hex', 4, 37);
  if (!known(signer)) throw new EnvelopeError(`signed by ${signer.slice(0, 16)}…, not a member of this cluster`);
  if (!verify(buf.toString('hex', 45), buf.subarray(0, 45), signer)) throw new EnvelopeError('bad signature');
  return { signer, target: Number(buf.readBigUInt64BE(37)) };
}

/** Encodes a removal of `member` (a public key), signed by the chain key. */
export function encodeRemoval(chain: Signer, member: string): Buffer {
  if (!/^0[23][0-9a-f]{64}$/.test(member)) throw new EnvelopeError(`not a public key: ${member.slice(0, 70)}`);
  const out = Buffer.allocUnsafe(REMOVAL_SIZE);
  REMOVAL_MAGIC.copy(out, 0);
  Buffer.from(chain.publicKey, 'hex').copy(out, 4);
  Buffer.from(member, 'hex').copy(out, 37);
  Buffer.from(chain.sign(out.subarray(0, 70)), 'hex').copy(out, 70);
  return out;
}

/** Whether a log value is a removal (by its magic; decodeRemoval checks the rest). */
export function isRemoval(value: Uint8Array): boolean {
  return value.length >= 4 && Buffer.from(value.buffer, value.byteOffset, 4).equals(REMOVAL_MAGIC);
}

/** Decodes a removal and checks it is signed by `chainKey`; returns the removed member's key. Throws EnvelopeError. */
export function decodeRemoval(value: Uint8Array, chainKey: string): string {
  const buf = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  if (buf.length !== REMOVAL_SIZE || !isRemoval(buf)) throw new EnvelopeError('not a removal (bad magic or size)');
  const signer = buf.toString('hex', 4, 37);
  if (signer !== chainKey) throw new EnvelopeError(`a removal signed by ${signer.slice(0, 16)}…, not by the chain key`);
  if (!verify(buf.toString('hex', 70), buf.subarray(0, 70), signer)) throw new EnvelopeError('bad signature');
  return buf.toString('hex', 37, 70);
}

/**
 * Decodes an envelope and checks its signature. `known(signer)` says whether the signer
 * may append (a registered member). Throws EnvelopeError naming what is wrong; a batch
 * whose id cannot be read is refused with the envelope (an honest member never packs one).
 */
export function decodeEnvelope(value: Uint8Array, known: (signer: string) => boolean): Envelope {
  const buf = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  const closing = buf.length >= 4 && buf.subarray(0, 4).equals(CLOSING_MAGIC);
  const head = closing ? CLOSING_HEAD : HEAD;
  if (buf.length < head + SIG || !(closing || buf.subarray(0, 4).equals(MAGIC))) throw new EnvelopeError('not an envelope (bad magic or too short)');
  const signer = buf.toString('hex', 4, 37);
  const ts = Number(buf.readBigUInt64BE(37));
  const closes = closing ? Number(buf.readBigUInt64BE(45)) : 0;
  if (closing && closes === 0) throw new EnvelopeError('closes no block (revision 0)');
  const count = buf.readUInt32BE(head - 4);
  const body = buf.length - SIG;
  const batches: EnvelopeBatch[] = [];
  let o = head;
  for (let i = 0; i < count; i++) {
    if (o + 4 > body) throw new EnvelopeError(`batch ${i} runs past the end`);
    const len = buf.readUInt32BE(o);
    if (len === 0 || o + 4 + len > body) throw new EnvelopeError(`batch ${i} runs past the end`);
    const bytes = buf.subarray(o + 4, o + 4 + len);
    const id = batchIdOf(bytes);
    if (id === null) throw new EnvelopeError(`batch ${i} has no readable header signature`);
    batches.push({ id, bytes });
    o += 4 + len;
  }
  if (o !== body) throw new EnvelopeError('bytes after the last batch');
  if (!known(signer)) throw new EnvelopeError(`signed by ${signer.slice(0, 16)}…, not a member of this cluster`);
  if (!verify(buf.toString('hex', body), buf.subarray(0, body), signer)) throw new EnvelopeError('bad signature');
  return { signer, ts, closes, batches };
}

/** The length-delimited top-level fields of a protobuf message: field number and bytes; null if malformed. */
export function delimitedFields(b: Uint8Array): Array<{ field: number; bytes: Uint8Array }> | null {
  const out: Array<{ field: number; bytes: Uint8Array }> = [];
  let o = 0;
  const varint = (): number => {
    let v = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      const x = b[o++];
      if (x === undefined) return -1;
      v += (x & 0x7f) * 2 ** shift;
      if (x < 0x80) return v;
    }
    return -1;
  };
  while (o < b.length) {
    const tag = varint();
    if (tag < 0) return null;
    const wire = tag & 7;
    if (wire === 2) {
      const l = varint();
      if (l < 0 || o + l > b.length) return null;
      out.push({ field: tag >>> 3, bytes: b.subarray(o, o + l) });
      o += l;
    } else if (wire === 0) {
      if (varint() < 0) return null;
    } else if (wire === 1) o += 8;
    else if (wire === 5) o += 4;
    else return null;
  }
  return o === b.length ? out : null;
}

/** The id (header_signature, field 2) of an encoded Batch, read without decoding it; null unless a 128-hex id. */
export function batchIdOf(b: Uint8Array): string | null {
  const fields = delimitedFields(b);
  let f: { bytes: Uint8Array } | undefined;
  for (const x of fields ?? []) if (x.field === 2) f = x;
  if (!f) return null;
  const id = Buffer.from(f.bytes.buffer, f.bytes.byteOffset, f.bytes.byteLength).toString('latin1');
  return /^[0-9a-f]{128}$/.test(id) ? id : null;
}
