/**
 * Slows down password guessing, per username and per client address. The `lockAfter`-th
 * failed check in a row locks the key for base × 2^(n - lockAfter) ms (capped); attempts
 * during the lock get 429 before any password check. Concurrent attempts are bounded too:
 * at most `lockAfter` checks run before the first lock can start, and one at a time after.
 * Unknown usernames are treated exactly like known ones, so answers never tell which
 * exist. Only a failed check counts: a check refused for load (503) does not. Memory is
 * bounded: the oldest entries are dropped beyond MAX_ENTRIES.
 */
import { nodeErrors } from './errors.js';

/** Per username: the third failed password in a row starts the lock (the fourth attempt gets 429). */
export const USERNAME_LOCK_AFTER = 3;
const MAX_ENTRIES = 10_000;
/** Failures older than this (and not locking) are forgotten. */
const FORGET_MS = 15 * 60_000;

interface Entry {
  failures: number;
  lockedUntil: number;
  lastFailure: number;
  inFlight: number;
}

export interface BackoffOptions {
  /** Failed checks in a row that start the lock (default USERNAME_LOCK_AFTER). */
  lockAfter?: number;
  /** Longest lock (default 60 s). */
  maxMs?: number;
  /** Whether a successful check clears the count (default true; off for addresses, which many users may share). */
  resetOnSuccess?: boolean;
  /** Names the key in the 429 message, e.g. "username" or "client address". */
  what?: string;
}

export class LoginBackoff {
  readonly #entries = new Map<string, Entry>();
  readonly #baseMs: number;
  readonly #maxMs: number;
  readonly #lockAfter: number;
  readonly #reset: boolean;
  readonly #what: string;

  constructor(baseMs: number, opts: BackoffOptions = {}) {
    this.#baseMs = baseMs;
    this.#maxMs = Math.max(opts.maxMs ?? 60_000, baseMs);
    this.#lockAfter = Math.max(1, opts.lockAfter ?? USERNAME_LOCK_AFTER);
    this.#reset = opts.resetOnSuccess ?? true;
    this.#what = opts.what ?? 'username';
  }

  /** Runs one password check for `key`; `check` resolves null for a failed check. */
  async attempt<T>(key: string, check: () => Promise<T | null>): Promise<T | null> {
    const e = this.#enter(key, Date.now());
    let outcome: 'ok' | 'failed' | 'error' = 'error';
    try {
      const result = await check();
      outcome = result !== null ? 'ok' : 'failed';
      return result;
    } finally {
      e.inFlight--;
      if (outcome === 'ok' && this.#reset) {
        e.failures = 0;
        e.lockedUntil = 0;
      } else if (outcome === 'failed') {
        this.#fail(e, Date.now());
      }
      if (e.failures === 0 && e.inFlight === 0 && this.#entries.get(key) === e) this.#entries.delete(key);
    }
  }

  #enter(key: string, now: number): Entry {
    let e = this.#entries.get(key);
    if (e && e.inFlight === 0 && e.lockedUntil < now && now - e.lastFailure > FORGET_MS) e = undefined;
    e ??= { failures: 0, lockedUntil: 0, lastFailure: 0, inFlight: 0 };
    const wait = e.lockedUntil - now;
    if (wait > 0 || (e.inFlight > 0 && e.failures + e.inFlight >= this.#lockAfter)) {
      const sec = Math.max(1, Math.ceil(wait / 1000));
      throw nodeErrors.tooManyLogins({ what: this.#what, sec }, { 'retry-after': String(sec) });
    }
    e.inFlight++;
    this.#entries.delete(key);
    this.#entries.set(key, e);
    if (this.#entries.size > MAX_ENTRIES) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
    return e;
  }

  #fail(e: Entry, now: number): void {
    e.failures++;
    e.lastFailure = now;
    if (e.failures >= this.#lockAfter) {
      const exp = Math.min(e.failures - this.#lockAfter, 30);
      e.lockedUntil = now + Math.min(this.#maxMs, this.#baseMs * 2 ** exp);
    }
  }
}
