/**
 * Exact Sawtooth Merkle-Radix node encoding.
 *
 * A node is the canonical CBOR map {"c": {token: childHashHex, ...}, "v": null | bstr}.
 * Leaves carry v = bstr(cbor_bstr(raw)), i.e. the raw value is wrapped twice (Sawtooth's
 * leaf encoding, 'cbor'); with transact's leaf encoding ('raw') v = bstr(raw).
 * The node hash is the first 32 bytes of SHA-512 over those bytes.
 *
 * Two encoders live here:
 * - `encodeNode` / `decodeNode`: general, text-keyed, used for vectors and debugging;
 * - `hashNode` / `nodeBytes`: the hot path. Children are token bytes plus hashes (hex text
 *   or binary); the node is written straight into one reused scratch buffer, so hashing a
 *   node allocates nothing but the hex digest.
 */
import crypto from 'node:crypto';
import { decode } from '../codec/cbor.js';

/** HEX[2b], HEX[2b+1] = the two lowercase ASCII hex digits of byte b. */
const HEX = new Uint8Array(512);
for (let b = 0; b < 256; b++) {
  const s = b.toString(16).padStart(2, '0');
  HEX[2 * b] = s.charCodeAt(0);
  HEX[2 * b + 1] = s.charCodeAt(1);
}

/** Size of a CBOR head for argument n (n < 2^32). */
export function headLen(n: number): number {
  return n < 24 ? 1 : n < 0x100 ? 2 : n < 0x10000 ? 3 : 5;
}

/** Writes a minimal CBOR head at off; returns the offset after it. n must be < 2^32. */
function writeHead(major: number, n: number, out: Uint8Array, off: number): number {
  const m = major << 5;
  if (n < 24) {
    out[off] = m | n;
    return off + 1;
  }
  if (n < 0x100) {
    out[off] = m | 24;
    out[off + 1] = n;
    return off + 2;
  }
  if (n < 0x10000) {
    out[off] = m | 25;
    out[off + 1] = n >>> 8;
    out[off + 2] = n & 0xff;
    return off + 3;
  }
  out[off] = m | 26;
  out[off + 1] = n >>> 24;
  out[off + 2] = (n >>> 16) & 0xff;
  out[off + 3] = (n >>> 8) & 0xff;
  out[off + 4] = n & 0xff;
  return off + 5;
}

/** Writes len bytes of src (from srcOff) as lowercase hex ASCII into out at off. */
function writeHex(src: Uint8Array, srcOff: number, len: number, out: Uint8Array, off: number): void {
  for (let i = 0; i < len; i++) {
    const b = src[srcOff + i]! << 1;
    out[off++] = HEX[b]!;
    out[off++] = HEX[b + 1]!;
  }
}

// ---------------------------------------------------------------------------------------
// Hot path

/**
 * A child hash as the hot path passes it around: a 64-char lowercase hex string (hashes we
 * computed; `crypto.hash(..., 'hex')` is markedly faster than a Buffer digest and the parent
 * needs the hex text anyway), a 32-byte binary hash, or a number: the offset of a 32-byte
 * hash inside the `rec` buffer passed alongside (children of a branch record, left in place).
 */
export type ChildHash = string | Uint8Array | number;

export function sha512Hex(bytes: Uint8Array): string {
  return crypto.hash('sha512', bytes, 'hex').slice(0, 64);
}

/** Writes the 64 hex chars of h at off. */
function writeChild(out: Buffer, off: number, h: ChildHash, rec: Uint8Array | null): void {
  if (typeof h === 'string') out.write(h, off, 64, 'latin1');
  else if (typeof h === 'number') writeHex(rec!, h, 32, out, off);
  else writeHex(h, 0, 32, out, off);
}

/**
 * How a leaf's raw value sits in its node's "v": 'cbor' (Sawtooth: the value is CBOR-wrapped
 * once more before the node is encoded) or 'raw' (transact: the value bytes as they are).
 */
export type LeafEncoding = 'cbor' | 'raw';

/** Bytes of the "v" entry for a leaf whose raw value has length L: [head(2, L2)] head(2, L) raw. */
function leafValueLen(rawLen: number, wrapped: boolean): number {
  const inner = headLen(rawLen) + rawLen;
  return wrapped ? headLen(inner) + inner : inner;
}

/** One child entry in the "c" map: 62 t t 78 40 <64 hex>. */
const CHILD_LEN = 69;
const MAX_HEAD_LEN = 5;

let scratch = Buffer.allocUnsafe(1 << 16);

/**
 * A node with exactly one child and no value is by far the most common node (chains to
 * the leaves); its bytes have a fixed 78-byte layout, so only the token and hash change:
 * a2 61 63 a1 62 T T 78 40 <64 hex> 61 76 f6
 */
const single = Buffer.from(`a26163a16230307840${'30'.repeat(64)}6176f6`, 'hex');

/** Hash of the node {"c": {hex(token): child}, "v": null}. */
export function hashSingle(token: number, child: ChildHash, rec: Uint8Array | null = null): string {
  single[5] = HEX[token << 1]!;
  single[6] = HEX[(token << 1) + 1]!;
  writeChild(single, 9, child, rec);
  return sha512Hex(single);
}

/**
 * Hash (64 hex) of a chain of single-child nodes: `tokens[0]` is the top node's token, the
 * last token's node has `child` as its one child. A new key's chain is ~30 nodes; the
 * digests between them never become strings: each is written as hex straight into the next
 * node's bytes (a 'binary', that is latin1, digest is the cheapest one Node gives), and
 * only the top's is kept.
 */
export function hashChain(tokens: Uint8Array, child: string | Uint8Array): string {
  if (tokens.length === 0) return typeof child === 'string' ? child : Buffer.from(child).toString('hex');
  writeChild(single, 9, child, null);
  for (let i = tokens.length - 1; ; i--) {
    const t = tokens[i]! << 1;
    single[5] = HEX[t]!;
    single[6] = HEX[t + 1]!;
    const d = crypto.hash('sha512', single, 'binary');
    if (i === 0) return hexDigest(d, hexScratch, 0).toString('latin1', 0, 64);
    hexDigest(d, single, 9);
  }
}

const hexScratch = Buffer.allocUnsafe(64);

/** Writes the first 32 bytes of a latin1 digest as 64 hex characters into out at off. */
function hexDigest(d: string, out: Buffer, off: number): Buffer {
  for (let k = 0; k < 32; k++, off += 2) {
    const b = d.charCodeAt(k) << 1;
    out[off] = HEX[b]!;
    out[off + 1] = HEX[b + 1]!;
  }
  return out;
}

/** Writes the node's CBOR into the scratch buffer; returns its length. */
function writeNode(
  tokens: ArrayLike<number>,
  hashes: ArrayLike<ChildHash>,
  raw: Uint8Array | null,
  rec: Uint8Array | null,
  wrapped: boolean,
): number {
  const n = tokens.length;
  const size = 3 + MAX_HEAD_LEN + n * CHILD_LEN + 2 + (raw === null ? 1 : leafValueLen(raw.length, wrapped));
  if (size > scratch.length) scratch = Buffer.allocUnsafe(Math.max(size, scratch.length * 2));
  const out = scratch;
  out[0] = 0xa2;
  out[1] = 0x61;
  out[2] = 0x63; // "c"
  let o = writeHead(5, n, out, 3);
  for (let i = 0; i < n; i++) {
    const t = tokens[i]! << 1;
    out[o] = 0x62;
    out[o + 1] = HEX[t]!;
    out[o + 2] = HEX[t + 1]!;
    out[o + 3] = 0x78;
    out[o + 4] = 0x40;
    writeChild(out, o + 5, hashes[i]!, rec);
    o += CHILD_LEN;
  }
  out[o] = 0x61;
  out[o + 1] = 0x76; // "v"
  o += 2;
  if (raw === null) {
    out[o++] = 0xf6;
  } else {
    if (wrapped) o = writeHead(2, headLen(raw.length) + raw.length, out, o);
    o = writeHead(2, raw.length, out, o);
    out.set(raw, o);
    o += raw.length;
  }
  return o;
}

/**
 * Hash (64 hex) of a node given its children (tokens ascending) and its raw leaf value
 * (null for interior nodes; the double CBOR wrap is applied here unless `wrapped` is false,
 * the 'raw' leaf encoding). `rec` holds the hashes given as offsets.
 */
export function hashNode(
  tokens: ArrayLike<number>,
  hashes: ArrayLike<ChildHash>,
  raw: Uint8Array | null,
  rec: Uint8Array | null = null,
  wrapped = true,
): string {
  if (raw === null && tokens.length === 1) return hashSingle(tokens[0]!, hashes[0]!, rec);
  const len = writeNode(tokens, hashes, raw, rec, wrapped); // may replace scratch: call before reading it
  return sha512Hex(scratch.subarray(0, len));
}

const EMPTY: number[] = [];

/** Hash (64 hex) of a leaf node (no children) holding raw. */
export function hashLeaf(raw: Uint8Array, wrapped = true): string {
  const len = writeNode(EMPTY, EMPTY, raw, null, wrapped);
  return sha512Hex(scratch.subarray(0, len));
}

/** The exact node bytes the hot path hashes (a copy; for tests and debugging). */
export function nodeBytes(tokens: ArrayLike<number>, hashes: ArrayLike<ChildHash>, raw: Uint8Array | null, wrapped = true): Buffer {
  const len = writeNode(tokens, hashes, raw, null, wrapped);
  return Buffer.from(scratch.subarray(0, len));
}

// ---------------------------------------------------------------------------------------
// General text form

export interface NodeText {
  /** token (2 hex chars) -> child hash (hex text) */
  c: Map<string, string>;
  /** content of the "v" byte string (for leaves: cbor_bstr(raw)), or null */
  v: Buffer | null;
}

function pushText(s: string, out: number[]): void {
  const b = Buffer.from(s, 'utf8');
  pushHead(3, b.length, out);
  for (const x of b) out.push(x);
}

function pushHead(major: number, n: number, out: number[]): void {
  const tmp = new Uint8Array(MAX_HEAD_LEN);
  const len = writeHead(major, n, tmp, 0);
  for (let i = 0; i < len; i++) out.push(tmp[i]!);
}

/**
 * Node bytes from the text form. `v` is the content of the "v" byte string as given (no
 * extra wrapping), so a leaf must pass cbor_bstr(raw). Children are sorted by key bytes, as
 * upstream's BTreeMap orders them (tokens are all 2 chars, so any sensible order agrees).
 */
export function encodeNode(c: Iterable<[string, string]>, v: Uint8Array | null): Buffer {
  const entries = [...c].map(([k, h]) => ({ k, kb: Buffer.from(k, 'utf8'), h }));
  entries.sort((a, b) => Buffer.compare(a.kb, b.kb));
  const out: number[] = [0xa2];
  pushText('c', out);
  pushHead(5, entries.length, out);
  for (const e of entries) {
    pushText(e.k, out);
    pushText(e.h, out);
  }
  pushText('v', out);
  if (v === null) out.push(0xf6);
  else {
    pushHead(2, v.length, out);
    for (const x of v) out.push(x);
  }
  return Buffer.from(out);
}

/** Parses node bytes into the text form; throws on anything that is not a node. */
export function decodeNode(bytes: Uint8Array): NodeText {
  const m = decode(bytes);
  if (!(m instanceof Map) || m.size !== 2 || !m.has('c') || !m.has('v')) {
    throw new Error('merkle node must be a map with keys "c" and "v"');
  }
  const c = m.get('c');
  const v = m.get('v');
  if (!(c instanceof Map)) throw new Error('merkle node "c" must be a map');
  const children = new Map<string, string>();
  for (const [k, h] of c) {
    if (typeof k !== 'string' || typeof h !== 'string') throw new Error('merkle node children must be text -> text');
    children.set(k, h);
  }
  if (v !== null && !Buffer.isBuffer(v)) throw new Error('merkle node "v" must be null or a byte string');
  return { c: children, v };
}
