/**
 * A read shared by its callers, one in flight at a time, and never older than the call: a
 * caller that comes while a read is in flight cannot use its answer (what it reads may have
 * changed after that read started), so it shares the next read, which starts when that one
 * ends. However many callers ask, the source gets at most one read in flight.
 */
export class FreshRead<T> {
  #inFlight: Promise<T> | null = null;
  #next: Promise<T> | null = null;

  /** `read` must not reject: give failures back as a value. */
  constructor(private readonly read: () => Promise<T>) {}

  get(): Promise<T> {
    if (!this.#inFlight) {
      const read = this.read();
      this.#inFlight = read;
      void read.then(() => {
        this.#inFlight = null;
      });
      return read;
    }
    this.#next ??= this.#inFlight.then(() => {
      this.#next = null;
      return this.get();
    });
    return this.#next;
  }
}
