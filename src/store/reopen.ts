/**
 * The main environment as the HTTP thread holds it, in a form that can be closed and opened
 * again under the stores that use it, for the one failure LMDB does not get over in place.
 *
 * When the write of a transaction's meta page fails (one EIO on one pwrite is enough), LMDB
 * marks the whole environment as broken (MDB_FATAL_ERROR): from then on every transaction
 * of the process on it, read or write, in any thread, fails with MDB_PANIC, until every
 * handle the process has on it is closed (lmdb-js shares one native environment between the
 * threads of a process, counted by handle). The data on disk is intact: the meta page that
 * counts is the previous one. A restart of the committer thread alone does not help, since
 * this thread still holds its handle; the ledger's recovery therefore ends the committer
 * thread first, then reopens this thread's handle here (src/ledger/ledger.ts), and the next
 * committer opens a sound environment.
 *
 * The stores of this thread keep the objects they were given: `reopenable` returns a proxy of
 * the root database, and of each sub-database opened through it, that forwards every access to
 * the current handle; a reopen points them all at the new one. Overrides set on a store (the
 * checksum layer's `get`, src/store/checksum.ts) stay on the proxy. What was under way on the
 * old handle (an iterator held across an await) fails with lmdb-js's "closed database" error.
 */
import type { RootDatabase } from 'lmdb';

/** The message of an error LMDB raises on an environment that had a fatal error (a failed meta-page write). */
const PANIC = /MDB_PANIC|No transaction to renew/;

interface Slot {
  /** The handle the proxy forwards to now. */
  current: object;
}

interface Control {
  open(): RootDatabase;
  root: Slot;
  /** Each sub-database opened through the root proxy, with the arguments it was opened with. */
  subs: Array<{ slot: Slot; args: unknown[] }>;
  reopens: number;
}

/** The control of each proxy handed out (root and sub-databases alike). */
const controls = new WeakMap<object, Control>();

/** A proxy that forwards to `slot.current`; `wrap` may replace what a key reads (openDB on the root). */
function forward<T extends object>(slot: Slot, wrap?: (key: string | symbol) => unknown): T {
  const overrides = new Map<string | symbol, unknown>();
  // One forwarding function per method name: it looks the method up on the current handle at
  // each call, so a function taken earlier (`db.get.bind(db)`) follows a reopen too.
  const methods = new Map<string | symbol, (...args: unknown[]) => unknown>();
  return new Proxy(Object.create(null) as T, {
    get(_, key) {
      if (overrides.has(key)) return overrides.get(key);
      const wrapped = wrap?.(key);
      if (wrapped !== undefined) return wrapped;
      const value: unknown = Reflect.get(slot.current, key);
      if (typeof value !== 'function') return value;
      let m = methods.get(key);
      if (!m) {
        m = (...args: unknown[]): unknown => Reflect.apply(Reflect.get(slot.current, key) as (...a: unknown[]) => unknown, slot.current, args);
        methods.set(key, m);
      }
      return m;
    },
    set(_, key, value) {
      overrides.set(key, value);
      return true;
    },
    has: (_, key) => overrides.has(key) || Reflect.has(slot.current, key),
    getPrototypeOf: () => Reflect.getPrototypeOf(slot.current),
    ownKeys: () => [...new Set([...Reflect.ownKeys(slot.current), ...overrides.keys()])],
    getOwnPropertyDescriptor(_, key) {
      if (overrides.has(key)) return { value: overrides.get(key), writable: true, enumerable: true, configurable: true };
      const d = Reflect.getOwnPropertyDescriptor(slot.current, key);
      return d ? { ...d, configurable: true } : undefined;
    },
  });
}

/**
 * Opens the environment with `open` and returns its root behind a proxy that `reopenEnv` can
 * point at a new handle. Only the HTTP thread's main environment needs it (the committer
 * threads are ended and started again instead).
 */
export function reopenable(open: () => RootDatabase): RootDatabase {
  const control: Control = { open, root: { current: open() }, subs: [], reopens: 0 };
  const openDB = (...args: unknown[]): object => {
    const slot: Slot = { current: Reflect.apply((control.root.current as RootDatabase).openDB, control.root.current, args) as object };
    control.subs.push({ slot, args });
    const sub = forward<object>(slot);
    controls.set(sub, control);
    return sub;
  };
  const root = forward<RootDatabase>(control.root, (key) => (key === 'openDB' ? openDB : undefined));
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
  // Write batches lmdb-js queued for the next turn start while the old handle is still open.
  await new Promise<void>((resolve) => setImmediate(resolve));
  const old = control.root.current as RootDatabase & { env?: { close(): void } };
  // lmdb-js's close stops reads and new writes on the old handle, then waits for its writes
  // in flight, which on a broken environment never settle: the native handle is closed here
  // instead (its later close is caught by lmdb-js).
  old.close().catch(() => undefined);
  try {
    old.env?.close();
  } catch {
    // closed already
  }
  const root = control.open();
  control.root.current = root;
  for (const s of control.subs) s.slot.current = Reflect.apply(root.openDB, root, s.args) as object;
  control.reopens++;
  if (envPanicked(db)) throw new Error('the environment is still broken after a reopen: another thread still holds it');
}
