/**
 * The one length bound on ids that become store keys, shared by the three interfaces.
 * LMDB refuses keys over 1978 bytes (and lmdb-js throws, which used to surface as a 500);
 * composite keys join up to three ids, so each id is held well under a third of that.
 */
export const MAX_ID_BYTES = 512;

/** True when `s` is short enough to be (part of) a store key. */
export function idFits(s: string): boolean {
  // Cheap check first: a UTF-8 character is at most 3 bytes per UTF-16 unit.
  return s.length * 3 <= MAX_ID_BYTES || Buffer.byteLength(s, 'utf8') <= MAX_ID_BYTES;
}
