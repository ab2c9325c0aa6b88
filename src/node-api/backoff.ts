/**
 * Slows down password guessing per username. After FREE_FAILURES failed checks, each
 * further failure locks the username for base × 2^(n-1) ms (capped); attempts during the
 * lock get 429 before any password check. Concurrent attempts are bounded too: at most
 * FREE_FAILURES + 1 checks run before the first lock can start, and one at a time after.
 * Unknown usernames are treated exactly like known ones, so answers never tell which
 * exist. Memory is bounded: the oldest entries are dropped beyond MAX_ENTRIES.
 */
import { HttpError } from '../http/server.js';

const FREE_FAILURES = 3;
const MAX_ENTRIES = 10_000;
/** Failures older than this (and not locking) are forgotten. */
const FORGET_MS = 15 * 60_000;

interface Entry {
  failures: number;
  lockedUntil: number;
  lastFailure: number;
  inFlight: number;
}

export class LoginBackoff {
  readonly #entries = new Map<string, Entry>();
  readonly #baseMs: number;
  readonly #maxMs: number;

  constructor(baseMs: number, maxMs = 60_000) {
    this.#baseMs = baseMs;
    this.#maxMs = Math.max(maxMs, baseMs);
  }

  /** Runs one password check for `username`; `check` resolves null for a failed check. */
  async attempt<T>(username: string, check: () => Promise<T | null>): Promise<T | null> {
    const e = this.#enter(username, Date.now());
    let ok = false;
    try {
      const result = await check();
      ok = result !== null;
      return result;
    } finally {
      e.inFlight--;
      if (ok) {
        e.failures = 0;
        e.lockedUntil = 0;
      } else {
        this.#fail(e, Date.now());
      }
      if (e.failures === 0 && e.inFlight === 0 && this.#entries.get(username) === e) this.#entries.delete(username);
    }
  }

  #enter(username: string, now: number): Entry {
    let e = this.#entries.get(username);
    if (e && e.inFlight === 0 && e.lockedUntil < now && now - e.lastFailure > FORGET_MS) e = undefined;
    e ??= { failures: 0, lockedUntil: 0, lastFailure: 0, inFlight: 0 };
    const wait = e.lockedUntil - now;
    if (wait > 0 || (e.inFlight > 0 && e.failures + e.inFlight > FREE_FAILURES)) {
      const sec = Math.max(1, Math.ceil(wait / 1000));
      throw new HttpError(429, `Too many failed login attempts for this username; retry in ${sec} s`, undefined, {
        'retry-after': String(sec),
      });
    }
    e.inFlight++;
    this.#entries.delete(username);
    this.#entries.set(username, e);
    if (this.#entries.size > MAX_ENTRIES) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
    return e;
  }

  #fail(e: Entry, now: number): void {
    e.failures++;
    e.lastFailure = now;
    if (e.failures > FREE_FAILURES) {
      const exp = Math.min(e.failures - FREE_FAILURES - 1, 30);
      e.lockedUntil = now + Math.min(this.#maxMs, this.#baseMs * 2 ** exp);
    }
  }
}
