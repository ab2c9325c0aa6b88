/**
 * Password storage: the client's `hashed_password` is hashed again with bcrypt
 * (@node-rs/bcrypt, which runs on the libuv pool, off the HTTP thread). bcrypt reads at
 * most 72 bytes, so the input is first reduced to base64(SHA-256(hashed_password)):
 * two different long inputs can never share a stored hash.
 *
 * The libuv pool (4 threads) also runs the pending-pool writes that every ledger
 * acknowledgement waits for. So every bcrypt call (hash, check, and the dummy check for
 * unknown usernames) goes through one gate: at most `concurrency` run at once, at most
 * `queue` wait, and any more are refused at once with 503 and Retry-After. A login flood
 * then costs the ledger one pool thread at most, never the whole pool.
 */
import { createHash, randomBytes } from 'node:crypto';
import { hash, verify } from '@node-rs/bcrypt';
import { authErrors } from './errors.js';

function prehash(password: string): string {
  return createHash('sha256').update(password, 'utf8').digest('base64');
}

/** A counting semaphore with a bounded wait list. */
class Gate {
  readonly #max: number;
  readonly #queueMax: number;
  #running = 0;
  readonly #waiting: Array<() => void> = [];
  /** Moving average of one run in ms, for Retry-After. */
  #avgMs = 100;

  constructor(max: number, queueMax: number) {
    this.#max = Math.max(1, max);
    this.#queueMax = Math.max(0, queueMax);
  }

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.#running >= this.#max) {
      if (this.#waiting.length >= this.#queueMax) {
        const sec = Math.max(1, Math.ceil(((this.#waiting.length + this.#running) * this.#avgMs) / this.#max / 1000));
        throw authErrors.passwordsBusy({ sec }, { 'retry-after': String(sec) });
      }
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    } else {
      this.#running++;
    }
    const start = performance.now();
    try {
      return await work();
    } finally {
      this.#avgMs = this.#avgMs * 0.8 + (performance.now() - start) * 0.2;
      // Hand the slot straight to the next waiter (the running count stays the same).
      const next = this.#waiting.shift();
      if (next) next();
      else this.#running--;
    }
  }
}

export interface PasswordLimits {
  /** bcrypt calls running at once (default 1). */
  concurrency?: number;
  /** bcrypt calls waiting for a slot before 503 (default 8). */
  queue?: number;
}

export class PasswordHasher {
  readonly #cost: number;
  readonly #gate: Gate;
  /** A hash of nothing, made once at start so the first unknown-username login is not faster. */
  readonly #dummy: Promise<string>;

  constructor(cost: number, limits: PasswordLimits = {}) {
    this.#cost = cost;
    this.#gate = new Gate(limits.concurrency ?? 1, limits.queue ?? 8);
    this.#dummy = hash(randomBytes(16).toString('hex'), cost);
    this.#dummy.catch(() => undefined);
  }

  hash(password: string): Promise<string> {
    return this.#gate.run(() => hash(prehash(password), this.#cost));
  }

  verify(password: string, stored: string): Promise<boolean> {
    return this.#gate.run(() => verify(prehash(password), stored));
  }

  /** Spends the same time, through the same gate, as a real check, for usernames that do not exist. */
  async verifyNothing(password: string): Promise<false> {
    const dummy = await this.#dummy;
    await this.#gate.run(() => verify(prehash(password), dummy));
    return false;
  }
}
