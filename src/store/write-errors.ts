/**
 * Failed commits that lmdb-js reports only on the console. When its write thread meets an
 * error while writing a transaction's pages (a short write on a full disk comes back as EIO),
 * lmdb-js prints the error with console.error and, unless a commit is already being rejected,
 * settles none of that transaction's promises: the writes wait for ever. A committer would
 * then hold its blocks in flight until its stall limit (60 s by default), acknowledging
 * nothing meanwhile. This turns that print into a call, so the thread that owns the writes
 * can fail at once and be recovered.
 *
 * A print names neither the transaction nor the environment it is about, so it is attributed
 * here: to the thread that printed it (console.error is per thread: a print reaches only the
 * watcher of the thread whose lmdb-js wrote), and to the oldest write of that thread still in
 * flight in one environment (LMDB commits one transaction at a time, in order, in each
 * environment; the environments of a thread commit side by side). The writes a thread makes
 * register with `trackWrite` until they settle. When writes of two environments are in flight
 * (a committer's block and its pending pool cleanup), the print is about the one whose oldest
 * write does not succeed: the other's settles, the failed one's never does (or is rejected).
 * A print while none is in flight comes from a write that already settled (its promise was
 * rejected or resolved before the print, or it was made before a recovery): it is reported as
 * stale, and does not stop anything; an error of a write in flight does.
 */
import { sep } from 'node:path';

/** Whether `v` is an error lmdb-js raised for a failed write: an errno code, thrown from its write path. */
export function isLmdbWriteError(v: unknown): v is Error & { code: number } {
  if (!(v instanceof Error)) return false;
  const code = (v as { code?: unknown }).code;
  return typeof code === 'number' && code > 0 && (v.stack ?? '').includes(`${sep}lmdb${sep}write.js`);
}

/** A write in flight: what it is (for the fault message), its number in this thread, and its environment. */
export interface TrackedWrite {
  id: number;
  what: string;
  /** The pending pool's environment, or the ledger's (the default). */
  env: 'ledger' | 'pending';
}

/** How long a print about writes of two environments waits for one of them to succeed. */
export const AMBIGUOUS_WAIT_MS = 2_000;

/**
 * The writes of one thread in flight, oldest first, and the attribution of an error print to
 * one of them. Pure bookkeeping (no lmdb-js), so that the rule is tested on its own.
 */
export class WriteAttribution {
  #next = 1;
  /** In start order (a Map keeps insertion order): the first entry is the oldest write. */
  readonly #inFlight = new Map<number, TrackedWrite>();
  /** Who waits for a write in flight to settle (attributeSettled): called with whether it succeeded. */
  readonly #watchers = new Map<number, Array<(ok: boolean) => void>>();

  /** A write starts; returns its record, to give to `end` once it settled. */
  begin(what: string, env: TrackedWrite['env'] = 'ledger'): TrackedWrite {
    const w = { id: this.#next++, what, env };
    this.#inFlight.set(w.id, w);
    return w;
  }

  /** The write settled (`ok`: it succeeded; false: it was rejected): a later print is not about it. */
  end(w: TrackedWrite, ok = true): void {
    this.#inFlight.delete(w.id);
    const watchers = this.#watchers.get(w.id);
    this.#watchers.delete(w.id);
    for (const f of watchers ?? []) f(ok);
  }

  /** The write an error print is about: the oldest one in flight, or null (a stale print). */
  attribute(): TrackedWrite | null {
    for (const w of this.#inFlight.values()) return w;
    return null;
  }

  /** The oldest write in flight of each environment, oldest first. */
  candidates(): TrackedWrite[] {
    const byEnv = new Map<TrackedWrite['env'], TrackedWrite>();
    for (const w of this.#inFlight.values()) if (!byEnv.has(w.env)) byEnv.set(w.env, w);
    return [...byEnv.values()];
  }

  /**
   * The write a print is about when `candidates` (of different environments) were in flight:
   * the first that is rejected, or the last left once the others succeeded; after `ms`
   * without an answer, the oldest still in flight (the rule of `attribute`).
   */
  attributeSettled(candidates: readonly [TrackedWrite, ...TrackedWrite[]], ms = AMBIGUOUS_WAIT_MS): Promise<TrackedWrite> {
    const [oldest] = candidates;
    return new Promise((resolve) => {
      let open = candidates.filter((w) => this.#inFlight.has(w.id));
      let done = false;
      const finish = (w: TrackedWrite = open[0] ?? oldest): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        resolve(w);
      };
      const timer = setTimeout(() => finish(), ms);
      if (open.length <= 1) return finish();
      for (const w of open) {
        const list = this.#watchers.get(w.id) ?? [];
        list.push((ok) => {
          if (!ok) return finish(w);
          open = open.filter((o) => o !== w);
          if (open.length <= 1) finish(open[0] ?? w);
        });
        this.#watchers.set(w.id, list);
      }
    });
  }

  get size(): number {
    return this.#inFlight.size;
  }
}

/** This thread's writes in flight (module state is per thread: each worker loads its own copy). */
const writes = new WriteAttribution();

/**
 * Registers `p`, a write of this thread (an LMDB transaction, a put, a flush), as in flight
 * until it settles; returns it unchanged. A write that never settles stays in flight: an error
 * print is then attributed to it, which is the case the watcher exists for.
 */
export function trackWrite<T>(what: string, p: Promise<T>, env: TrackedWrite['env'] = 'ledger'): Promise<T> {
  const w = writes.begin(what, env);
  p.then(
    () => writes.end(w, true),
    () => writes.end(w, false),
  );
  return p;
}

export interface WriteErrorHandlers {
  /** A failed write of this thread: `write` is the write in flight the print is attributed to. */
  onError(err: Error & { code: number }, write: TrackedWrite): void;
  /** A print that no write in flight can have made (printed after its write had settled). */
  onStale?(err: Error & { code: number }): void;
}

/** lmdb-js's code of MDB_PANIC (an environment that had a fatal error, src/store/reopen.ts). */
const MDB_PANIC = -30795;
/** Set once this thread's lmdb-js printed MDB_PANIC from its write path (see writerStuck). */
let stuck = false;

/**
 * Whether this thread's lmdb-js writer holds an environment handle's write lock for good.
 * lmdb-js (3.5) returns from a batch of writes whose transaction cannot begin, on an
 * environment broken by a failed meta-page write (MDB_PANIC), without releasing that lock,
 * and prints the error: closing the handle then waits for ever, a thread's end included. Such
 * a thread must not close its handles (nor end), and the environment cannot be reopened in
 * this process. Known from the print: the watcher of this thread must be installed
 * (watchLmdbWriteErrors or watchStuckWriter).
 */
export function writerStuck(): boolean {
  return stuck;
}

let installed: WriteErrorHandlers | null = null;
/** The attribution the installed watcher reads (this thread's writes, or a test's own). */
let current: WriteAttribution = writes;
/** The console.error this module put in place (wrapped again if something replaced it since). */
let wrapper: ((...args: unknown[]) => void) | null = null;

/**
 * Calls the handlers for every failed-write error lmdb-js prints in this thread (the print
 * itself still happens), attributed by `attribution` (this thread's writes by default). One
 * watcher per thread: a second call replaces the first.
 */
export function watchLmdbWriteErrors(handlers: WriteErrorHandlers, attribution: WriteAttribution = writes): void {
  hook();
  installed = handlers;
  current = attribution;
}

/** Watches this thread's prints for a stuck writer only (writerStuck), without a committer's handlers. */
export function watchStuckWriter(): void {
  hook();
}

function hook(): void {
  if (console.error === wrapper) return;
  const print = console.error.bind(console);
  wrapper = (...args: unknown[]): void => {
    print(...args);
    const err = args[0];
    if (err instanceof Error && (err as { code?: unknown }).code === MDB_PANIC && (err.stack ?? '').includes(`${sep}lmdb${sep}write.js`))
      stuck = true;
    if (!installed || !isLmdbWriteError(err)) return;
    const handlers = installed;
    const [first, ...others] = current.candidates();
    if (!first) handlers.onStale?.(err);
    else if (others.length === 0) handlers.onError(err, first);
    // Writes of two environments in flight: the one that fails is the one the print is about.
    else void current.attributeSettled([first, ...others]).then((write) => installed === handlers && handlers.onError(err, write));
  };
  console.error = wrapper;
}
