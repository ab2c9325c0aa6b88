/**
 * Failed commits that lmdb-js reports only on the console. When its write thread meets an
 * error while writing a transaction's pages (a short write on a full disk comes back as EIO),
 * lmdb-js prints the error with console.error and, unless a commit is already being rejected,
 * settles none of that transaction's promises: the writes wait for ever. A committer would
 * then hold its blocks in flight until its stall limit (60 s by default), acknowledging
 * nothing meanwhile. This turns that print into a call, so the thread that owns the writes
 * can fail at once and be recovered.
 */
import { sep } from 'node:path';

/** Whether `v` is an error lmdb-js raised for a failed write: an errno code, thrown from its write path. */
export function isLmdbWriteError(v: unknown): v is Error & { code: number } {
  if (!(v instanceof Error)) return false;
  const code = (v as { code?: unknown }).code;
  return typeof code === 'number' && code > 0 && (v.stack ?? '').includes(`${sep}lmdb${sep}write.js`);
}

let installed: ((err: Error & { code: number }) => void) | null = null;

/**
 * Calls `onError` for every failed-write error lmdb-js prints in this thread (the print
 * itself still happens). One watcher per thread: a second call replaces the first.
 */
export function watchLmdbWriteErrors(onError: (err: Error & { code: number }) => void): void {
  if (installed === null) {
    const print = console.error.bind(console);
    console.error = (...args: unknown[]): void => {
      print(...args);
      const err = args[0];
      if (installed && isLmdbWriteError(err)) installed(err);
    };
  }
  installed = onError;
}
