// A small CBOR (RFC 8949) decoder for the values the explorer shows: intkey state is a map
// {name: value}, intkey payloads a map {Verb, Name, Value}. Maps decode to Map (their keys
// need not be strings); integers beyond 2^53 to BigInt. Throws on anything malformed.

export class CborError extends Error {}

/** The one value encoded in `bytes` (a Uint8Array), which must hold nothing after it. */
export function decodeCbor(bytes) {
  const r = { bytes, view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), pos: 0, depth: 0 };
  const v = item(r);
  if (r.pos !== bytes.length) throw new CborError(`${bytes.length - r.pos} bytes after the value`);
  return v;
}

function need(r, n) {
  if (r.pos + n > r.bytes.length) throw new CborError('truncated');
}

/** The argument of a head byte's additional info (a length, a count or an integer). */
function argument(r, info) {
  if (info < 24) return info;
  const sizes = { 24: 1, 25: 2, 26: 4, 27: 8 };
  const n = sizes[info];
  if (n === undefined) throw new CborError(`unsupported additional info ${info}`);
  need(r, n);
  let v;
  if (n === 1) v = r.view.getUint8(r.pos);
  else if (n === 2) v = r.view.getUint16(r.pos);
  else if (n === 4) v = r.view.getUint32(r.pos);
  else {
    const big = r.view.getBigUint64(r.pos);
    v = big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
  }
  r.pos += n;
  return v;
}

function length(r, info) {
  const n = argument(r, info);
  if (typeof n !== 'number' || n > r.bytes.length) throw new CborError('length out of range');
  return n;
}

function item(r) {
  need(r, 1);
  const head = r.view.getUint8(r.pos++);
  const major = head >> 5;
  const info = head & 31;
  if (++r.depth > 64) throw new CborError('nested too deeply');
  try {
    switch (major) {
      case 0:
        return argument(r, info);
      case 1: {
        const n = argument(r, info);
        return typeof n === 'bigint' ? -1n - n : -1 - n;
      }
      case 2: {
        const n = length(r, info);
        need(r, n);
        r.pos += n;
        return r.bytes.slice(r.pos - n, r.pos);
      }
      case 3: {
        const n = length(r, info);
        need(r, n);
        r.pos += n;
        return new TextDecoder('utf-8', { fatal: true }).decode(r.bytes.subarray(r.pos - n, r.pos));
      }
      case 4: {
        const n = length(r, info);
        const out = [];
        for (let i = 0; i < n; i++) out.push(item(r));
        return out;
      }
      case 5: {
        const n = length(r, info);
        const out = new Map();
        for (let i = 0; i < n; i++) {
          const k = item(r);
          out.set(k, item(r));
        }
        return out;
      }
      case 6:
        argument(r, info); // a tag: the explorer shows the tagged value as is
        return item(r);
      default:
        return simple(r, info);
    }
  } finally {
    r.depth--;
  }
}

function simple(r, info) {
  if (info === 20) return false;
  if (info === 21) return true;
  if (info === 22) return null;
  if (info === 23) return undefined;
  if (info === 25) {
    need(r, 2);
    const h = r.view.getUint16(r.pos);
    r.pos += 2;
    return half(h);
  }
  if (info === 26) {
    need(r, 4);
    r.pos += 4;
    return r.view.getFloat32(r.pos - 4);
  }
  if (info === 27) {
    need(r, 8);
    r.pos += 8;
    return r.view.getFloat64(r.pos - 8);
  }
  throw new CborError(`unsupported simple value ${info}`);
}

function half(h) {
  const exp = (h >> 10) & 31;
  const mant = h & 1023;
  const sign = h & 0x8000 ? -1 : 1;
  if (exp === 0) return sign * 2 ** -14 * (mant / 1024);
  if (exp === 31) return mant ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  return sign * 2 ** (exp - 15) * (1 + mant / 1024);
}

/** Standard base64 to bytes. */
export function fromBase64(s) {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** A decoded value as short readable text: maps as {k: v}, bytes as hex. */
export function showValue(v) {
  if (v instanceof Map) return `{${[...v].map(([k, x]) => `${showValue(k)}: ${showValue(x)}`).join(', ')}}`;
  if (Array.isArray(v)) return `[${v.map(showValue).join(', ')}]`;
  if (v instanceof Uint8Array) return `h'${[...v].map((b) => b.toString(16).padStart(2, '0')).join('')}'`;
  if (typeof v === 'string') return JSON.stringify(v);
  return String(v);
}
