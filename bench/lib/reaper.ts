/**
 * Child processes a benchmark must not leave behind (etcd members, nodes): each registered
 * one is SIGKILLed when the bench process exits however it exits. A normal exit, an
 * uncaught error or Ctrl-C run the exit hooks; a bench killed outright (SIGKILL, a CI
 * timeout) leaves it to a small shell that holds the pids and kills them once its stdin,
 * the bench's end of a pipe, closes. Both are test/helpers/etcd.ts's (killOnExit), which
 * tracks the etcd members it starts so already; this module adds the rest a bench needs: a
 * sweep of every direct child at exit, the exit hooks on SIGINT/SIGTERM/SIGHUP, the removal
 * of its temp directory, and kill helpers.
 */
import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
// The test harness's etcd launcher holds the one exit hook and watchdog for child processes;
// the bench shares it rather than keeping a copy (bench/ importing test/helpers/ is intended).
import { killOnExit } from '../../test/helpers/etcd.js';

const dirs = new Set<string>();
let hooked = false;

function hook(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', () => {
    // A child not registered yet (a node still starting when its start failed) is this
    // process's child all the same: /proc names its parent. (The registered ones are killed
    // by killOnExit's exit hook.)
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
  // Ctrl-C or a kill of the bench: the exit hooks run (exit status as a shell reports a signal).
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
  killOnExit(child);
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
function exited(child: ChildProcess): boolean {
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
