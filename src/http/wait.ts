/**
 * The `wait` query of the batch-status routes of the ledger gateway, the data API and the
 * scabbard services, read one way (scabbard with its own upper bound, upstream's 300 s).
 * Absent or `false` (any case): 0. An integer (as Python's int() reads one: blanks, a
 * sign, digits with single underscores): that many seconds, at most `max`; a negative
 * one (`-1`, `-0`) is 0, not the long wait upstream falls into (docs/http-hardening.md).
 * Anything else (`wait`, `wait=`, `wait=yes`): `max`, just under the server timeout.
 *
 * And the pace at which ended waits are answered (`paced`): a block that settles the batch
 * thousands of waits wait for, or thousands of waits that time out together, would otherwise
 * answer them all in one turn of the event loop, during which the thread serves nothing else
 * (20,000 ZeroMQ status waits woken at once held it 2.3 s: GET /status waited as long).
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

/**
 * Ended waits answered per turn of the event loop. Each answer costs the HTTP thread about
 * 0.1 ms (the statuses read, the reply encoded and sent), so a turn stays near 5 ms; between
 * turns the thread reads its sockets. Fewer per turn: more turns (each one loop round) for
 * the same answers.
 */
export const WAKE_SLICE = 48;

const woken: Array<() => void> = [];
let draining = false;

function drain(): void {
  // The waits resumed here run in this turn's microtasks; the next slice waits for the next
  // turn, after the poll phase (setImmediate from a check-phase callback).
  for (const resume of woken.splice(0, WAKE_SLICE)) resume();
  if (woken.length > 0) setImmediate(drain);
  else draining = false;
}

/**
 * `ended` (a wait), resolved in its turn: at most WAKE_SLICE ended waits resume per turn of
 * the event loop, in the order they ended. A wait that throws rejects as it would have.
 */
export async function paced<T>(ended: Promise<T>): Promise<T> {
  const v = await ended;
  await new Promise<void>((resume) => {
    woken.push(resume);
    if (!draining) {
      draining = true;
      setImmediate(drain);
    }
  });
  return v;
}
