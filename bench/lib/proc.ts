/**
 * What /proc tells of a node process: CPU seconds, and the bytes it handed to write system
 * calls for files. /proc/<pid>/io `write_bytes` counts pages dirtied, and this kernel counts
 * a whole large folio of the page cache each time one 4 KiB page in it is dirtied, so it
 * reads several times what was written; `wchar` (bytes given to write calls) less the HTTP
 * bytes the bench received from the node is what its LMDB environments wrote.
 */
import { readFileSync } from 'node:fs';
import { received } from './raw.js';

/** A numeric field of /proc/<pid>/io (or a task's io file), or NaN where /proc lacks it. */
export function ioField(file: string, field = 'write_bytes'): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(readFileSync(file, 'utf8'));
    return m ? Number(m[1]) : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** Pages the process dirtied (write_bytes; see above). */
export function dirtiedBytes(pid: number): number {
  return ioField(`/proc/${pid}/io`);
}

/** Bytes the process gave to write calls for files so far: wchar less what this bench received over HTTP. */
export function fileWriteBytes(pid: number): number {
  return ioField(`/proc/${pid}/io`, 'wchar') - received.bytes;
}

/** CPU seconds (user + system, all threads) a process has used, from /proc/<pid>/stat. */
export function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return Number.NaN;
  }
}
