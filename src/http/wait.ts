/**
 * The `wait` query of the batch-status routes of the ledger gateway, the data API and the
 * scabbard services, read one way (scabbard with its own upper bound, upstream's 300 s).
 * Absent or `false` (any case): 0. An integer (as Python's int() reads one: blanks, a
 * sign, digits with single underscores): that many seconds, at most `max`; a negative
 * one (`-1`, `-0`) is 0, not the long wait upstream falls into (docs/http-hardening.md).
 * Anything else (`wait`, `wait=`, `wait=yes`): `max`, just under the server timeout.
 */
import type { Req } from './server.js';

export const LONG_WAIT_SECONDS = 285;

export function parseWaitQuery(w: string | null, max = LONG_WAIT_SECONDS): number {
  if (w === null || w.toLowerCase() === 'false') return 0;
  const m = /^\s*(?<sign>[+-]?)(?<digits>\d+(?:_\d+)*)\s*$/.exec(w);
  const digits = m?.groups?.digits;
  if (digits === undefined) return max;
  if (m?.groups?.sign === '-') return 0;
  return Math.min(Number(digits.replaceAll('_', '')), max);
}

/** The `wait` query of a request in seconds, read as parseWaitQuery reads it (a route's query parser). */
export function waitQuery(req: Req, max = LONG_WAIT_SECONDS): number {
  return parseWaitQuery(req.query.get('wait'), max);
}
