/**
 * Checks of hex ids on the hot paths. A batch or transaction id (a signature) is 128
 * lowercase hex characters; `/^[0-9a-f]{128}$/` costs ~550 ns a test here, and every batch
 * has its ids checked several times over its threads. Node's hex decoder (native) checks
 * the digits in ~1/3 of that, and a lowercase string is its own `toLowerCase()`.
 */
const scratch = Buffer.allocUnsafe(64);

/** True when `s` is `2 * bytes` lowercase hex characters; its bytes are then in `out` (from 0). */
export function hexBytesInto(s: string, bytes: number, out: Buffer): boolean {
  return s.length === 2 * bytes && out.write(s, 0, bytes, 'hex') === bytes && s.toLowerCase() === s;
}

/** True when `s` is an id: 128 lowercase hex characters (64 bytes). */
export function isHexId(s: string): boolean {
  return typeof s === 'string' && hexBytesInto(s, 64, scratch);
}
