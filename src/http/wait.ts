/**
 * The `wait` query of the batch-status routes of the data API and the ledger gateway, read one way.
 * Absent or `false` (any case): 0. An integer (as Python's int() reads one: blanks, a
 * sign, digits with single underscores): that many seconds, at most `max`; a negative
 * one (`-1`, `-0`) is 0, not the long wait upstream falls into (docs/http-hardening.md).
 * Anything else (`wait`, `wait=`, `wait=yes`): `max`, just under the server timeout.
 */
export const LONG_WAIT_SECONDS = 285;

export function parseWaitQuery(w: string | null, max = LONG_WAIT_SECONDS): number {
  if (w === null || w.toLowerCase() === 'false') return 0;
  const m = /^\s*(?<sign>[+-]?)(?<digits>\d+(?:_\d+)*)\s*$/.exec(w);
  const digits = m?.groups?.digits;
  if (digits === undefined) return max;
  if (m?.groups?.sign === '-') return 0;
  return Math.min(Number(digits.replaceAll('_', '')), max);
}
