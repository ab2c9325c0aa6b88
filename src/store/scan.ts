/**
 * A read of every record of ledger.mdb and pending.mdb, in a child process, once the node serves.
 *
 * Every record carries a checksum (checksum.ts), so a damaged value is refused when read;
 * but a bit flip in LMDB's own page structure (a node offset, a key size, a child page
 * number) can make the storage library read out of bounds and die by a signal, on the first
 * read that reaches the page. Reading everything once in a throw-away process turns that into
 * an alarm that names the files (the node turns read-only), instead of a node that crashes
 * (and, under a supervisor, crashes again) on its first unlucky request. It ran before the
 * node served until its time, proportional to the ledger, was most of a restart.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { statSync } from 'node:fs';
import { setPriority } from 'node:os';
import { basename } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { log } from '../log.js';

const fromSource = import.meta.url.endsWith('.ts');
/** The child's entry (plain JavaScript, not built: the same file from the sources and from dist/). */
const entry = fileURLToPath(new URL(`${fromSource ? '../..' : '../../..'}/workers/scan-ledger.mjs`, import.meta.url));

/** What /status shows of the scan of a running node. */
export interface ScanProgress {
  /** `running`, `done` (every record read), `damaged` (the read crashed: an alarm is raised), `stopped` (no verdict: time limit, or the node closed). */
  state: 'running' | 'done' | 'damaged' | 'stopped';
  /** Value bytes read so far, and the size of the files (an upper bound of what there is to read). */
  read_bytes: number;
  total_bytes: number;
}

/** The scan's time limit in the background: long enough for a ledger of tens of GB on a slow disk. */
const BACKGROUND_LIMIT_MS = 6 * 60 * 60 * 1000;

/**
 * The scan of a node that serves meanwhile: the same child as at start, at a lower CPU
 * priority, with its progress (read by lines the child prints) in `progress` and the logs.
 * A child killed by a signal calls `onDamage` with a cause naming the files; the node then
 * raises the CORRUPT alarm (read-only until an operator clears it after a restore). Reading
 * every record costs time proportional to the ledger (minutes at tens of GB): the node
 * serves from the start instead of waiting, and every record is checksummed on each read anyway.
 */
export class BackgroundScan {
  readonly progress: ScanProgress;
  readonly #child: ChildProcess | null = null;

  constructor(paths: string[], onDamage: (cause: string) => void, opts: { script?: string; limitMs?: number; logEveryMs?: number } = {}) {
    const total = paths.reduce((n, p) => n + sizeOf(p), 0);
    this.progress = { state: paths.length ? 'running' : 'done', read_bytes: 0, total_bytes: total };
    if (!paths.length) return;
    const names = paths.map((p) => basename(p)).join(' and ');
    const started = Date.now();
    const logEvery = opts.logEveryMs ?? 10_000;
    let lastLog = started;
    const child = spawn(process.execPath, [opts.script ?? entry, ...paths], {
      env: { PATH: process.env.PATH ?? '' },
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    this.#child = child;
    log.info(`start scan: reading every record of ${names} (${mib(total)}) in the background`);
    try {
      // Behind the node's own threads: the scan takes what CPU they leave.
      if (child.pid !== undefined) setPriority(child.pid, 10);
    } catch {
      // not permitted here: it runs at the node's priority
    }
    createInterface({ input: child.stdout as NonNullable<ChildProcess['stdout']> }).on('line', (line) => {
      const n = Number(line);
      if (!Number.isFinite(n)) return;
      this.progress.read_bytes = n;
      const now = Date.now();
      if (now - lastLog >= logEvery) {
        lastLog = now;
        log.info(`start scan: ${mib(n)} of ${mib(total)} read`);
      }
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.limitMs ?? BACKGROUND_LIMIT_MS);
    timer.unref();
    child.once('error', () => {
      clearTimeout(timer);
      this.progress.state = 'stopped';
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (this.progress.state !== 'running') return;
      const secs = ((Date.now() - started) / 1000).toFixed(1);
      if (signal && signal !== 'SIGKILL' && signal !== 'SIGTERM') {
        this.progress.state = 'damaged';
        const cause = `reading every record of ${names} made the storage library crash (${signal}): the file's page structure is damaged; restore the directory from a backup`;
        log.error(`start scan: ${cause}`);
        onDamage(cause);
        return;
      }
      this.progress.state = code === 0 ? 'done' : 'stopped';
      if (code === 0) log.info(`start scan: every record of ${names} read in ${secs} s (${mib(this.progress.read_bytes)})`);
      else log.warn(`start scan: ended without a verdict after ${secs} s (${signal ?? `exit ${code}`})`);
    });
  }

  /** Ends the scan (the node closes). */
  stop(): void {
    if (this.progress.state === 'running') this.progress.state = 'stopped';
    this.#child?.kill('SIGKILL');
  }
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

function mib(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}
