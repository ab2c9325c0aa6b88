/**
 * The pending pool's record format. The pool is written in segments: each hand-off of
 * verified batches becomes ONE record, keyed by the sequence number of its first batch,
 * holding the serialized batches length-prefixed. A segment is deleted once every batch in
 * it is settled (committed or invalid) durably. Under load this turns two writes per batch
 * (put, then delete) into two per hand-off.
 */
export function encodeSegment(batches: Array<{ bytes: Uint8Array }>): Buffer {
  let size = 0;
  for (const b of batches) size += 4 + b.bytes.length;
  const out = Buffer.allocUnsafe(size);
  let o = 0;
  for (const b of batches) {
    out.writeUInt32BE(b.bytes.length, o);
    out.set(b.bytes, o + 4);
    o += 4 + b.bytes.length;
  }
  return out;
}

export function decodeSegment(buf: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  const view = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  for (let o = 0; o + 4 <= view.length; ) {
    const len = view.readUInt32BE(o);
    out.push(Uint8Array.prototype.slice.call(view, o + 4, o + 4 + len));
    o += 4 + len;
  }
  return out;
}
