/**
 * Storage alarms, modelled on the NOSPACE alarm of Raft key-value stores: a failed storage write (a full disk, an
 * I/O error, a write that never became durable), a record that fails its checksum, or a
 * committer that keeps dying puts the node in a read-only state. While an alarm is raised,
 * every interface refuses writes with 503 (the cause and a Retry-After) and serves reads;
 * `/status`, the node API's alarm route and the `cairn_alarm` metric show it. The ledger
 * retries by itself (a bounded back-off, src/ledger/recovery.ts) and clears the storage
 * alarms once writes succeed again; a corrupt record stays raised until an operator clears it.
 *
 * One board per process, on the HTTP thread: the committer threads report through their
 * ledger's messages.
 */
import { statfsSync } from 'node:fs';
import { log } from '../log.js';

export type AlarmKind =
  /** ENOSPC or the map is full. */
  | 'NOSPACE'
  /** EIO and other write errors. */
  | 'IO'
  /** A write did not become durable in time (the device hangs). */
  | 'STALLED'
  /** A stored record failed its checksum, or LMDB found a damaged page. */
  | 'CORRUPT'
  /** A committer thread died for another reason, more often than the restart bound. */
  | 'COMMITTER'
  /** A cluster member's chain differs from another member's at the same height (src/cluster). */
  | 'DIVERGED';

export interface Alarm {
  kind: AlarmKind;
  /** What an operator reads: `disk full (pending.mdb)`, `I/O error on ledger.mdb`, … */
  cause: string;
  /** When it was raised (ISO 8601). */
  since: string;
}

/** Seconds a client is told to wait before it tries a write again. */
export const RETRY_AFTER_SEC = 5;

/** errno codes of a failing file system (besides EIO and ENOSPC, classified on their own). */
const STORAGE_CODES = new Set(['EROFS', 'EDQUOT', 'EFBIG', 'EBADF', 'ENXIO', 'EMFILE', 'ENFILE']);

/** Message of an errno or an LMDB code, as lmdb-js and node report them. */
const NOSPACE = /ENOSPC|No space left on device|MDB_MAP_FULL|map full|environment mapsize limit reached/i;
const CORRUPT = /MDB_CORRUPTED|MDB_PAGE_NOTFOUND|located page was wrong type|checksum mismatch/i;
/**
 * LMDB's answer on an environment whose meta-page write failed: an I/O error, not damage (the
 * previous meta page still counts); it clears once every handle is reopened (src/store/reopen.ts).
 */
const PANIC = /MDB_PANIC/;

/** The storage alarm an error from a store stands for, or null when it is not a storage error. */
export function classifyStorageError(err: unknown, file: string): { kind: AlarmKind; cause: string } | null {
  if (err instanceof CorruptRecordError) return { kind: 'CORRUPT', cause: err.message };
  if (err instanceof StorageStalled) return { kind: 'STALLED', cause: `${err.message} (${file})` };
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = e?.code;
  const message = typeof e?.message === 'string' ? e.message : String(err);
  const stalled = /storage stalled: .*/.exec(message);
  if (stalled) return { kind: 'STALLED', cause: `${stalled[0]} (${file})` };
  if (code === 'ENOSPC' || code === 28 || NOSPACE.test(message)) return { kind: 'NOSPACE', cause: `disk full (${file})` };
  if (CORRUPT.test(message)) return { kind: 'CORRUPT', cause: `damaged page in ${file}: ${message.slice(0, 160)}` };
  if (PANIC.test(message)) return { kind: 'IO', cause: `I/O error on ${file}` };
  if (code === 'EIO' || code === 5 || /EIO|Input\/output error/.test(message)) return { kind: 'IO', cause: `I/O error on ${file}` };
  // Only a file system's errors: a network error a handler met (ECONNREFUSED from an OAuth
  // provider, say) is not a storage fault.
  if (/Commit failed|Write error|Attempting to write page/.test(message) || (typeof code === 'string' && STORAGE_CODES.has(code)))
    return { kind: 'IO', cause: `write error on ${file}: ${message.slice(0, 160)}` };
  return null;
}

/** Free space under which a write error counts as a full disk (LMDB reports a short write as EIO). */
const FULL_BELOW_BYTES = 1024 * 1024;

/**
 * classifyStorageError, with LMDB's EIO for a short write told apart from a failing device:
 * an I/O error while the data directory's file system has (almost) no room is a full disk.
 */
export function classifyInDir(err: unknown, file: string, dir: string): { kind: AlarmKind; cause: string } | null {
  const s = classifyStorageError(err, file);
  if (s?.kind !== 'IO') return s;
  return freeBytes(dir) < FULL_BELOW_BYTES ? { kind: 'NOSPACE', cause: `disk full (${file})` } : s;
}

/** Free space a NOSPACE alarm needs before it clears (a probe write of a few bytes fits in far less). */
export const ROOM_TO_CLEAR_BYTES = 4 * FULL_BELOW_BYTES;

/** Bytes free for this process on the file system of `dir`, or Infinity when unknown. */
export function freeBytes(dir: string): number {
  try {
    const fs = statfsSync(dir);
    return fs.bavail * fs.bsize;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

/** A stored record whose checksum does not match its bytes: never served, never built on. */
export class CorruptRecordError extends Error {
  override name = 'CorruptRecordError';
  constructor(
    readonly file: string,
    readonly record: string,
    why = 'checksum mismatch',
  ) {
    super(`corrupt record in ${file}: ${record} (${why})`);
  }
}

/** A write that did not become durable within its time limit. */
export class StorageStalled extends Error {
  override name = 'StorageStalled';
}

/** Rejects with StorageStalled when `p` has not settled after `ms`. */
export function withinTime<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StorageStalled(`storage stalled: ${what} did not complete within ${ms / 1000} s`)), ms);
  });
  return Promise.race([p, limit]).finally(() => clearTimeout(timer));
}

export class AlarmBoard {
  readonly #alarms = new Map<AlarmKind, Alarm>();
  readonly #listeners = new Set<(raised: boolean, a: Alarm) => void>();

  /** Raises (or keeps) the alarm of `kind`; the first cause of a kind stays until it clears. Logs once at error level. */
  raise(kind: AlarmKind, cause: string): Alarm {
    const had = this.#alarms.get(kind);
    if (had) return had;
    const a: Alarm = { kind, cause, since: new Date().toISOString() };
    this.#alarms.set(kind, a);
    log.error(`alarm raised: ${kind} (${cause}); writes are refused until it clears, reads are served`);
    for (const l of this.#listeners) l(true, a);
    return a;
  }

  /** Clears the given kinds (all when none given); logs one line per alarm cleared. */
  clear(kinds?: readonly AlarmKind[]): Alarm[] {
    const out: Alarm[] = [];
    for (const [kind, a] of this.#alarms) {
      if (kinds && !kinds.includes(kind)) continue;
      this.#alarms.delete(kind);
      out.push(a);
      log.info(`alarm cleared: ${kind} (${a.cause}); writes are accepted again`);
      for (const l of this.#listeners) l(false, a);
    }
    return out;
  }

  list(): Alarm[] {
    return [...this.#alarms.values()];
  }

  has(kind?: AlarmKind): boolean {
    return kind ? this.#alarms.has(kind) : this.#alarms.size > 0;
  }

  /** One line for error messages, or null when no alarm is raised. */
  summary(): string | null {
    if (this.#alarms.size === 0) return null;
    return [...this.#alarms.values()].map((a) => `${a.kind}: ${a.cause}`).join('; ');
  }

  onChange(listener: (raised: boolean, a: Alarm) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
