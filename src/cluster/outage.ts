/**
 * A failure that repeats while etcd is away (the follower retries every half second): said
 * when it starts, then once every `repeatMs` with the count of tries and the latest reason,
 * and its end said once. An operator sees that it goes on and when it ended, not two lines a
 * second for the whole outage.
 */
import { log } from '../log.js';

const REPEAT_MS = 30_000;

export class Outage {
  #since = 0;
  #saidAt = 0;
  #tries = 0;

  constructor(
    private readonly what: string,
    private readonly now: () => number = Date.now,
    private readonly repeatMs = REPEAT_MS,
  ) {}

  /** One more failed try, for `reason`. */
  fail(reason: string): void {
    const t = this.now();
    this.#tries++;
    if (this.#tries === 1) {
      this.#since = t;
      this.#saidAt = t;
      log.warn(`${this.what} (${reason}); retrying`);
    } else if (t - this.#saidAt >= this.repeatMs) {
      this.#saidAt = t;
      log.warn(`${this.what} for ${seconds(t - this.#since)} s, ${this.#tries} tries (the last: ${reason}); retrying`);
    }
  }

  /** It worked: the end of the outage, if there was one. */
  ok(): void {
    if (this.#tries === 0) return;
    log.info(`${this.what}: over after ${seconds(this.now() - this.#since)} s, ${this.#tries} failed tries`);
    this.#tries = 0;
  }
}

const seconds = (ms: number): string => (ms / 1000).toFixed(1);
