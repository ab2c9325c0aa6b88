/**
 * Making a directory and its missing parents, one level at a time. Node's
 * `mkdirSync(path, {recursive: true})` never returns on a file system that refuses a new
 * entry with ENOENT although the parent exists (procfs: `--data-dir /proc/cairn-data` spun
 * at 100% CPU): it climbs to the parent, finds it there, and tries the child again, forever.
 * Here each missing level is made once, and the first refusal is thrown with its code.
 */
import { mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/** Makes `path` and its missing parents (each with `mode`); returns the directories it made, outermost first. */
export function makeDirs(path: string, mode = 0o777): string[] {
  const missing: string[] = [];
  let p = resolve(path);
  for (;;) {
    try {
      if (statSync(p).isDirectory()) break;
      throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${p}'`), { code: 'ENOTDIR', path: p });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    missing.unshift(p);
    const up = dirname(p);
    if (up === p) break;
    p = up;
  }
  const made: string[] = [];
  for (const dir of missing) {
    try {
      mkdirSync(dir, { mode });
    } catch (err) {
      // Made meanwhile by another process: as good as made here.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || !statSync(dir).isDirectory()) throw err;
      continue;
    }
    made.push(dir);
  }
  return made;
}

/** A file system error in a few words, with its code (ENOENT: no such file or directory). */
export function fsReason(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  const words: Record<string, string> = {
    ENOENT: 'no such file or directory',
    EACCES: 'permission denied',
    EPERM: 'operation not permitted',
    EISDIR: 'it is a directory',
    ENOTDIR: 'a part of the path is not a directory',
    EEXIST: 'it exists already',
    EROFS: 'read-only file system',
    ENOSPC: 'no space left on the device',
  };
  if (code && words[code]) return `${words[code]} (${code})`;
  return code ?? (err instanceof Error ? err.message : String(err));
}
