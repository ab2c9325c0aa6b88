/**
 * Waits that commits end: each waiter re-checks its condition when a block is committed
 * (no polling), and gives up at its deadline or when the API closes. Ended waits resume at
 * a bounded pace (src/http/wait.ts), so a block that ends many answers them over several turns.
 */
import type { Ledger } from '../ledger/ledger.js';
import { log } from '../log.js';
import { paced } from '../http/wait.js';

export class CommitWaits {
  readonly #ledger: Ledger;
  readonly #open = new Set<() => void>();
  #closed = false;

  constructor(ledger: Ledger) {
    this.#ledger = ledger;
  }

  /** Resolves once `done()` holds (checked now and after every new block), or after `ms`. */
  until(done: () => boolean, ms: number): Promise<void> {
    if (this.#closed || ms <= 0 || done()) return Promise.resolve();
    return paced(this.#wait(done, ms));
  }

  #wait(done: () => boolean, ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const finish = (): void => {
        clearTimeout(timer);
        off();
        this.#open.delete(finish);
        resolve();
      };
      const timer = setTimeout(finish, ms);
      const off = this.#ledger.onBlock((e) => {
        // Runs in the committer's message handler, where a throw would end the process:
        // a condition that cannot be checked ends the wait (the request then answers).
        let ready = true;
        try {
          ready = Boolean(e.head) && done();
        } catch (err) {
          log.error('a commit wait could not check its condition', err);
        }
        if (ready) finish();
      });
      this.#open.add(finish);
    });
  }

  close(): void {
    this.#closed = true;
    for (const finish of [...this.#open]) finish();
  }
}
