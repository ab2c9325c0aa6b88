/**
 * Slows down password guessing per username. After FREE_FAILURES failed attempts,
 * each further failure locks the username for base × 2^(n-1) ms (capped); attempts
 * during the lock are refused with 429 before any password check. At most one
 * attempt per username runs at a time once failures started. Unknown usernames are
 * treated exactly like known ones, so the answers never tell which exist.
 * Memory is bounded: the oldest entries are dropped beyond MAX_ENTRIES.
 */
import { HttpError } from '../http/server.js';

const FREE_FAILURES = 3;
const MAX_ENTRIES = 10_000;
/** Entries older than this (since the last failure) are forgotten. */
const FORGET_MS = 15 * 60_000;

interface Entry {
  failures: number;
  lockedUntil: number;
  lastFailure: number;
  inFlight: boolean;
}

export class LoginBackoff {
  readonly #entries = new Map<string, Entry>();
  readonly #baseMs: number;
  readonly #maxMs: number;

  constructor(baseMs: number, maxMs = 60_000) {
    this.#baseMs = baseMs;
    this.#maxMs = Math.max(maxMs, baseMs);
  }

  /** Runs one password check for `username` under the backoff rules. */
  async attempt<T>(username: string, check: () => Promise<T | null>): Promise<T | null> {
    const now = Date.now();
    let e = this.#entries.get(username);
    if (e && now - e.lastFailure > FORGET_MS && e.lockedUntil < now && !e.inFlight) {
      this.#entries.delete(username);
      e = undefined;
    }
    if (e) {
      const wait = e.lockedUntil - now;
      if (wait > 0 || e.inFlight) {
        const sec = Math.max(1, Math.ceil(wait / 1000));
        throw new HttpError(429, `Too many failed login attempts for this username; retry in ${sec} s`, undefined, {
          'retry-after': String(sec),
        });
      }
      e.inFlight = true;
    }
    try {
      const result = await check();
      if (result === null) this.#fail(username, Date.now());
      else this.#entries.delete(username);
      return result;
    } finally {
      const cur = this.#entries.get(username);
      if (cur) cur.inFlight = false;
    }
  }

  #fail(username: string, now: number): void {
    const e = this.#entries.get(username) ?? { failures: 0, lockedUntil: 0, lastFailure: now, inFlight: false };
    e.failures++;
    e.lastFailure = now;
    if (e.failures > FREE_FAILURES) {
      const exp = Math.min(e.failures - FREE_FAILURES - 1, 30);
      e.lockedUntil = now + Math.min(this.#maxMs, this.#baseMs * 2 ** exp);
    }
    this.#entries.delete(username);
    this.#entries.set(username, e);
    if (this.#entries.size > MAX_ENTRIES) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
  }
}
