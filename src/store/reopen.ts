/**
 * The main environment (and the pending pool's) as the HTTP thread holds it, in a form that
 * can be closed and opened again under the stores that use it, for the one failure LMDB does
 * not get over in place.
 *
 * When the write of a transaction's meta page fails (one EIO on one pwrite is enough), LMDB
 * marks the whole environment as broken (MDB_FATAL_ERROR): from then on every transaction
 * of the process on it, read or write, in any thread, fails with MDB_PANIC, until every
 * handle the process has on it is closed (lmdb-js shares one native environment between the
 * threads of a process, counted by handle). The data on disk is intact: the meta page that
 * counts is the previous one. A restart of the committer thread alone does not help, since
 * this thread still holds its handle; the ledger's recovery therefore ends the committer
 * thread first, then reopens this thread's handle here (src/ledger/recovery.ts), and the next
 * committer opens a sound environment.
 *
 * The stores of this thread keep the objects they were given. lmdb-js keeps an environment's
 * state in the class it makes for it (its methods close over the native handle), and a store's
 * own in the store's own properties: a reopen makes a new root and a new store for each one
 * opened before, and moves each new store's class and own properties into the old object. A
 * store object is thus a plain lmdb-js store before and after (no indirection on reads: a
 * forwarding proxy measured 1.5 times the cost of a `get`). What a store's user set on it
 * (the checksum layer's `get`, src/store/checksum.ts) is kept, as it declares with
 * `keepOnReopen`. What was under way on the old handle (an iterator held across an await)
 * fails with lmdb-js's "closed database" error.
 */
import type { RootDatabase } from 'lmdb';
import { watchStuckWriter, writerStuck } from './write-errors.js';

/** Why a broken environment cannot be reopened in this process; the alarm's cause keeps its file. */
export const STUCK =
  'MDB_PANIC: the environment had a fatal error, and a thread of this process cannot close it (the storage library holds its write lock): restart the node to reopen it';

/** The message of an error LMDB raises on an environment that had a fatal error (a failed meta-page write). */
const PANIC = /MDB_PANIC|No transaction to renew/;

type Key = string | symbol;

interface Control {
  open(): RootDatabase;
  /** Each sub-database opened through the root, with the arguments it was opened with. */
  subs: Array<{ db: object; args: unknown[] }>;
  reopens: number;
}

/** The control of each root made by `reopenable`. */
const controls = new WeakMap<object, Control>();
/** Per store: own properties its user set (kept by a reopen), and what to run after one. */
const kept = new WeakMap<object, { keys: Set<Key>; after: Array<() => void> }>();

/**
 * Declares `key`, an own property the caller set on `store`, to be kept when the store is
 * reopened; `rebind` runs after a reopen (to take the new handle's methods, say).
 */
export function keepOnReopen(store: object, key: Key, rebind?: () => void): void {
  let k = kept.get(store);
  if (!k) {
    k = { keys: new Set(), after: [] };
    kept.set(store, k);
  }
  k.keys.add(key);
  if (rebind) k.after.push(rebind);
}

/** The method `key` of the lmdb-js class behind `store` now (not an override set on the store). */
export function storeMethod<F>(store: object, key: string): F {
  return (Reflect.getPrototypeOf(store) as Record<string, F>)[key] as F;
}

/** Makes `target` the store `fresh` is: its class and its own properties, but for those kept. */
function transplant(target: object, fresh: object): void {
  const keep = kept.get(target)?.keys ?? new Set<Key>();
  for (const k of Reflect.ownKeys(target)) if (!keep.has(k)) Reflect.deleteProperty(target, k);
  for (const k of Reflect.ownKeys(fresh)) {
    const d = Reflect.getOwnPropertyDescriptor(fresh, k);
    if (d && !keep.has(k)) Reflect.defineProperty(target, k, d);
  }
  Reflect.setPrototypeOf(target, Reflect.getPrototypeOf(fresh));
}

/**
 * Opens the environment with `open` and returns its root, made reopenable by `reopenEnv`: the
 * sub-databases opened through it are recorded. Only the HTTP thread needs it (the committer
 * threads are ended and started again instead).
 */
export function reopenable<R extends RootDatabase>(open: () => R): R {
  // A reopen must know whether this thread's writer is stuck (it then cannot close its handle).
  watchStuckWriter();
  const root = open();
  const control: Control = { open, subs: [], reopens: 0 };
  const openDB = (...args: unknown[]): unknown => {
    const db = Reflect.apply(storeMethod<(...a: unknown[]) => unknown>(root, 'openDB'), root, args);
    if (db && typeof db === 'object') control.subs.push({ db, args });
    return db;
  };
  Reflect.defineProperty(root, 'openDB', { value: openDB, writable: true, configurable: true, enumerable: false });
  keepOnReopen(root, 'openDB');
  controls.set(root, control);
  return root;
}

/** Whether `db`'s environment had a fatal error: every transaction on it fails until it is reopened. */
export function envPanicked(db: RootDatabase): boolean {
  try {
    // A fresh read transaction: the one held may predate the error.
    db.resetReadTxn();
    db.getStats();
    return false;
  } catch (err) {
    return PANIC.test(err instanceof Error ? err.message : String(err));
  }
}

/** How many times the environment behind `db` was reopened (0 for a handle that is not reopenable). */
export function reopenCount(db: RootDatabase): number {
  return controls.get(db)?.reopens ?? 0;
}

/**
 * Closes this thread's handle on `db`'s environment and opens it again, under the same store
 * objects. Every other thread's handle must be closed first (the committer thread ended): else
 * the environment lmdb-js opens is the same broken one, and this throws. Throws too for a
 * database that `reopenable` did not make.
 */
export async function reopenEnv(db: RootDatabase): Promise<void> {
  const control = controls.get(db);
  if (!control) throw new Error('this environment cannot be reopened in place');
  // Closing the handle would wait for ever (writerStuck): the process must be restarted.
  if (writerStuck()) throw new Error(STUCK);
  // Write batches lmdb-js queued for the next turn start while the old handle is still open.
  await new Promise<void>((resolve) => setImmediate(resolve));
  // lmdb-js's close, run on a copy of the old root (what it sets on the store stays there):
  // it ends the read transaction and refuses new writes, then waits for the writes in flight,
  // which on a broken environment never settle; the native handle is closed here instead
  // (lmdb-js's own later attempt is caught by it).
  const old = Object.create(Reflect.getPrototypeOf(db)) as RootDatabase & { env?: { close(): void } };
  for (const k of Reflect.ownKeys(db)) {
    const d = Reflect.getOwnPropertyDescriptor(db, k);
    if (d) Reflect.defineProperty(old, k, d);
  }
  old.close().catch(() => undefined);
  try {
    old.env?.close();
  } catch {
    // closed already
  }
  transplant(db, control.open());
  for (const s of control.subs) transplant(s.db, Reflect.apply(storeMethod<(...a: unknown[]) => unknown>(db, 'openDB'), db, s.args) as object);
  for (const store of [db, ...control.subs.map((s) => s.db)]) for (const f of kept.get(store)?.after ?? []) f();
  control.reopens++;
  if (envPanicked(db)) throw new Error('the environment is still broken after a reopen: another thread still holds it');
}
