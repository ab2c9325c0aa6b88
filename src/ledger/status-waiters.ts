/**
 * Status waiters: requests that wait (`wait` on the batch status routes, the data API's
 * submissions) until none of their batches is pending any more, woken as the committer
 * settles batches, never by polling.
 */

interface Waiter {
  remaining: Set<string>;
  done(): void;
}

export class StatusWaiters {
  readonly #waiters = new Map<string, Set<Waiter>>();
  #closed = false;

  /** Resolves when none of `pendingIds` is pending any more, or after `timeoutMs`. */
  waitFor(pendingIds: string[], timeoutMs: number): Promise<void> {
    const remaining = new Set(pendingIds);
    if (remaining.size === 0 || timeoutMs <= 0 || this.#closed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const w: Waiter = {
        remaining,
        done: () => {
          clearTimeout(timer);
          for (const id of remaining) this.#waiters.get(id)?.delete(w);
          resolve();
        },
      };
      const timer = setTimeout(() => w.done(), timeoutMs);
      for (const id of remaining) {
        let set = this.#waiters.get(id);
        if (!set) {
          set = new Set();
          this.#waiters.set(id, set);
        }
        set.add(w);
      }
    });
  }

  /** `id` is settled: wakes the waiters that waited for it last; how many it woke. */
  settle(id: string): number {
    const ws = this.#waiters.get(id);
    if (!ws) return 0;
    this.#waiters.delete(id);
    let woken = 0;
    for (const w of ws) {
      w.remaining.delete(id);
      if (w.remaining.size === 0) {
        w.done();
        woken++;
      }
    }
    return woken;
  }

  /** Answers every waiter now; later waits return at once. */
  close(): void {
    this.#closed = true;
    for (const ws of this.#waiters.values()) for (const w of ws) w.done();
    this.#waiters.clear();
  }
}
