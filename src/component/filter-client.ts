/**
 * The HTTP thread's side of the event filter thread (workers/event-filter.ts,
 * filter-thread.ts): started on the first request that needs it, one answer per request in
 * the order asked. The client event service (client-service.ts) hands it every subscriber's
 * filters and every block to match, so no client pattern ever runs on the HTTP thread.
 *
 * A thread that fails or exits (a fault of this code, or its heap limit reached) rejects
 * whatever waits on it and is replaced on the next request; the subscriptions it held are
 * gone with it, which `onLost` tells the service.
 */
import { Worker } from 'node:worker_threads';
import { workerFile, workerStart } from '../ledger/worker-file.js';
import type { FromFilters, ToFilters } from './filter-thread.js';

/**
 * Heap of the filter thread. What it holds is bounded by the caps (at most 64 MiB of DFA
 * states and 65,536 compiled instructions, filters.ts) plus the blocks in flight; past this
 * the thread ends (ERR_WORKER_OUT_OF_MEMORY) instead of the process.
 */
const HEAP_MB = 512;

/** How long a closing thread is given to end by itself. */
const CLOSE_MS = 2000;

type Request = ToFilters extends infer T ? (T extends { req: number } ? Omit<T, 'req'> : never) : never;

export class FilterThreadError extends Error {}

export class FilterClient {
  #worker: Worker | null = null;
  #nextReq = 1;
  readonly #waiting = new Map<number, { resolve: (m: FromFilters) => void; reject: (err: Error) => void }>();
  readonly #onLost: (why: string) => void;
  #closed = false;

  constructor(onLost: (why: string) => void) {
    this.#onLost = onLost;
  }

  /** Sends a request; resolves with its answer. `req` is the number it goes by (a subscription's name). */
  ask(m: Request, req = this.reserve()): Promise<FromFilters> {
    if (this.#closed) return Promise.reject(new FilterThreadError('closed'));
    const w = this.#start();
    return new Promise((resolve, reject) => {
      this.#waiting.set(req, { resolve, reject });
      w.postMessage({ ...m, req } as ToFilters);
    });
  }

  /** A request number, for a subscription whose name the caller needs before the answer. */
  reserve(): number {
    return this.#nextReq++;
  }

  /** Forgets a subscription (no answer). */
  drop(set: number): void {
    if (this.#worker && !this.#closed) this.#worker.postMessage({ op: 'drop', set } satisfies ToFilters);
  }

  /** Ends the thread (tests: a thread lost). */
  terminate(): Promise<number> | undefined {
    return this.#worker?.terminate();
  }

  /** Ends the thread: it is asked to (so it ends as a thread that returns), then ended after CLOSE_MS. */
  close(): void {
    this.#closed = true;
    const w = this.#worker;
    this.#worker = null;
    this.#fail('closed');
    if (!w) return;
    w.postMessage({ op: 'close' } satisfies ToFilters);
    setTimeout(() => void w.terminate(), CLOSE_MS).unref();
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const w = new Worker(workerFile('event-filter'), { ...workerStart(), resourceLimits: { maxOldGenerationSizeMb: HEAP_MB } });
    w.unref();
    w.on('message', (m: FromFilters) => {
      const waiter = this.#waiting.get(m.req);
      if (!waiter) return;
      this.#waiting.delete(m.req);
      waiter.resolve(m);
    });
    const lost = (why: string): void => {
      if (this.#worker !== w) return;
      this.#worker = null;
      this.#fail(why);
      if (!this.#closed) this.#onLost(why);
    };
    w.on('error', (err) => lost(`failed: ${err instanceof Error ? err.message : String(err)}`));
    w.on('exit', (code) => lost(`exited (code ${code})`));
    this.#worker = w;
    return w;
  }

  #fail(why: string): void {
    const waiting = [...this.#waiting.values()];
    this.#waiting.clear();
    for (const w of waiting) w.reject(new FilterThreadError(`event filter thread ${why}`));
  }
}
