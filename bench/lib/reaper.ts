/**
 * Child processes a benchmark must not leave behind (etcd members, nodes): each registered
 * one is SIGKILLed when the bench process exits however it exits. A normal exit, an
 * uncaught error or Ctrl-C run the exit hook; a bench killed outright (SIGKILL, a CI
 * timeout) leaves it to a small shell that holds the pids and kills them once its stdin,
 * the bench's end of a pipe, closes.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import type { Writable } from 'node:stream';

const live = new Set<ChildProcess>();
const dirs = new Set<string>();
let hooked = false;
let watchdog: Writable | undefined;

const WATCHDOG = `pids=' '
while read -r op pid; do
  case $op in
    +) pids="$pids$pid " ;;
    -) pids=$(printf '%s' "$pids" | sed "s/ $pid / /") ;;
  esac
done
kill -9 $pids 2>/dev/null`;

function tell(line: string): void {
  if (!watchdog) {
    const w = spawn('sh', ['-c', WATCHDOG], { stdio: ['pipe', 'ignore', 'ignore'] });
    w.on('error', () => undefined);
    w.unref();
    const stdin = w.stdin as Writable & { unref?: () => void };
    stdin.on('error', () => undefined);
    stdin.unref?.();
    watchdog = stdin;
  }
  watchdog.write(`${line}\n`);
}

function hook(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', () => {
    for (const c of live) c.kill('SIGKILL');
    // A child not registered yet (a node still starting when its start failed) is this
    // process's child all the same: /proc names its parent.
    for (const pid of childPids()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    for (const d of dirs) {
      try {
        rmSync(d, { recursive: true, force: true });
      } catch {
        // a process still dying wrote into it: left in tmpdir
      }
    }
  });
  // Ctrl-C or a kill of the bench: the exit hook runs (exit status as a shell reports a signal).
  for (const [sig, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
    ['SIGHUP', 129],
  ] as const)
    process.once(sig, () => process.exit(code));
}

/** Pids of this process's direct children (from /proc; none where /proc is missing). */
function childPids(): number[] {
  const out: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid) out.push(Number(e));
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/** Kills `child` with SIGKILL when this process exits, if it still runs then. */
export function reap(child: ChildProcess): void {
  hook();
  const pid = child.pid;
  if (pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  live.add(child);
  tell(`+ ${pid}`);
  child.once('exit', () => {
    live.delete(child);
    tell(`- ${pid}`);
  });
}

/** Removes `dir` when this process exits (unless `keepDir` is called first). */
export function removeOnExit(dir: string): void {
  hook();
  dirs.add(dir);
}

export function keepDir(dir: string): void {
  dirs.delete(dir);
}

/** Whether the process has exited (by a code or a signal). */
export function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/** SIGKILLs `child` (if it runs) and resolves once it has exited. */
export function kill9(child: ChildProcess): Promise<void> {
  if (exited(child)) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the process has exited. */
export function terminate(child: ChildProcess, graceMs = 5000): Promise<void> {
  if (exited(child)) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
