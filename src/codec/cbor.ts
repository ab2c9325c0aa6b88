/**
 * Canonical CBOR (RFC 8949) for the subset the ledger needs: unsigned and negative
 * integers, byte strings, text strings, arrays, maps, booleans and null. Encoding uses
 * definite lengths and the shortest heads, and writes text map keys in sorted order,
 * which is what the Sawtooth Merkle tree and the intkey reference client produce.
 */

export type CborValue =
  | number
  | bigint
  | string
  | Uint8Array
  | boolean
  | null
  | CborValue[]
  | Map<CborValue, CborValue>
  | { [key: string]: CborValue };

export class CborError extends Error {
  override name = 'CborError';
}

function head(major: number, n: number | bigint, out: number[]): void {
  const m = major << 5;
  if (typeof n === 'bigint') {
    if (n < 0x1_0000_0000n) return head(major, Number(n), out);
    out.push(m | 27);
    for (let s = 56n; s >= 0n; s -= 8n) out.push(Number((n >> s) & 0xffn));
    return;
  }
  if (n < 24) out.push(m | n);
  else if (n < 0x100) out.push(m | 24, n);
  else if (n < 0x10000) out.push(m | 25, n >> 8, n & 0xff);
  else if (n < 0x1_0000_0000) out.push(m | 26, (n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);
  else head(major, BigInt(n), out);
}

function compareBytes(a: number[], b: number[]): number {
  if (a.length !== b.length) return a.length - b.length;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
}

function enc(v: CborValue, out: number[]): void {
  if (v === null) out.push(0xf6);
  else if (v === true) out.push(0xf5);
  else if (v === false) out.push(0xf4);
  else if (typeof v === 'number') {
    if (!Number.isInteger(v)) throw new CborError('only integers are supported');
    if (v >= 0) head(0, v, out);
    else head(1, -1 - v, out);
  } else if (typeof v === 'bigint') {
    if (v >= 0n) head(0, v, out);
    else head(1, -1n - v, out);
  } else if (typeof v === 'string') {
    const b = Buffer.from(v, 'utf8');
    head(3, b.length, out);
    for (const x of b) out.push(x);
  } else if (v instanceof Uint8Array) {
    head(2, v.length, out);
    for (const x of v) out.push(x);
  } else if (Array.isArray(v)) {
    head(4, v.length, out);
    for (const x of v) enc(x, out);
  } else {
    const entries: Array<[CborValue, CborValue]> = v instanceof Map ? [...v.entries()] : Object.entries(v);
    const encoded = entries.map(([k, val]) => {
      const kb: number[] = [];
      enc(k, kb);
      return { k, kb, val };
    });
    // Sorted keys as the upstream encoders write them (Python's sort_keys, Rust's BTreeMap):
    // text keys by their UTF-8 bytes, other keys by their encoding.
    encoded.sort((a, b) =>
      typeof a.k === 'string' && typeof b.k === 'string' ? Buffer.compare(Buffer.from(a.k), Buffer.from(b.k)) : compareBytes(a.kb, b.kb),
    );
    head(5, encoded.length, out);
    for (const e of encoded) {
      for (const x of e.kb) out.push(x);
      enc(e.val, out);
    }
  }
}

export function encode(v: CborValue): Buffer {
  const out: number[] = [];
  enc(v, out);
  return Buffer.from(out);
}

/** Encodes a byte string head + body without building intermediate arrays. */
export function encodeBytes(b: Uint8Array): Buffer {
  const h: number[] = [];
  head(2, b.length, h);
  const out = Buffer.allocUnsafe(h.length + b.length);
  for (let i = 0; i < h.length; i++) out[i] = h[i]!;
  out.set(b, h.length);
  return out;
}

const MAX_DEPTH = 64;

class Decoder {
  pos = 0;
  constructor(readonly buf: Uint8Array) {}

  byte(): number {
    if (this.pos >= this.buf.length) throw new CborError('unexpected end of CBOR data');
    return this.buf[this.pos++]!;
  }

  arg(info: number): number | bigint {
    if (info < 24) return info;
    let n = 0;
    const len = info === 24 ? 1 : info === 25 ? 2 : info === 26 ? 4 : info === 27 ? 8 : -1;
    if (len < 0) throw new CborError('indefinite or reserved length is not supported');
    if (len === 8) {
      let big = 0n;
      for (let i = 0; i < 8; i++) big = (big << 8n) | BigInt(this.byte());
      return big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
    }
    for (let i = 0; i < len; i++) n = n * 256 + this.byte();
    return n;
  }

  length(info: number): number {
    const n = this.arg(info);
    if (typeof n === 'bigint' || n > this.buf.length - this.pos + 8 * 1024 * 1024) {
      throw new CborError('CBOR length out of range');
    }
    return n;
  }

  slice(n: number): Uint8Array {
    if (this.pos + n > this.buf.length) throw new CborError('unexpected end of CBOR data');
    const s = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return s;
  }

  value(depth: number): CborValue {
    if (depth > MAX_DEPTH) throw new CborError('CBOR nesting too deep');
    const ib = this.byte();
    const major = ib >> 5;
    const info = ib & 31;
    switch (major) {
      case 0:
        return this.arg(info);
      case 1: {
        const n = this.arg(info);
        return typeof n === 'bigint' ? -1n - n : -1 - n;
      }
      case 2:
        return Buffer.from(this.slice(this.length(info)));
      case 3:
        return Buffer.from(this.slice(this.length(info))).toString('utf8');
      case 4: {
        const n = this.length(info);
        const arr: CborValue[] = [];
        for (let i = 0; i < n; i++) arr.push(this.value(depth + 1));
        return arr;
      }
      case 5: {
        const n = this.length(info);
        const m = new Map<CborValue, CborValue>();
        for (let i = 0; i < n; i++) {
          const k = this.value(depth + 1);
          m.set(k, this.value(depth + 1));
        }
        return m;
      }
      case 7:
        if (info === 20) return false;
        if (info === 21) return true;
        if (info === 22) return null;
        throw new CborError(`unsupported CBOR simple value ${info}`);
      default:
        throw new CborError(`unsupported CBOR major type ${major}`);
    }
  }
}

/** Decodes one CBOR item; maps come back as Map, byte strings as Buffer. Throws CborError. */
export function decode(buf: Uint8Array): CborValue {
  const d = new Decoder(buf);
  const v = d.value(0);
  if (d.pos !== buf.length) throw new CborError('trailing bytes after CBOR item');
  return v;
}
