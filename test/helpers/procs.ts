/**
 * Process hygiene for the test helpers (child.ts, etcd.ts, cluster.ts) and the cluster bench
 * (bench/lib/reaper.ts): every child process a helper starts is registered here the moment it
 * is spawned, before anything waits for it to be ready, and is SIGKILLed when the test process
 * exits however it exits (the exit hook, or a watchdog shell when the test process is killed
 * outright, by tap's timeout for one). A helper stops a child with stopChild: SIGTERM, then
 * SIGKILL after a grace. Start deadlines come from startDeadline(): a generous multiple of the
 * slowest start this process has measured, never below a base that CAIRN_TEST_TIME_SCALE
 * stretches, so that a loaded machine is given the time it takes, not a guess.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import type { Writable } from 'node:stream';

/**
 * How much slower than a quiet 2-core machine this run may be: CAIRN_TEST_TIME_SCALE (e.g. 3
 * on a machine shared with a CPU burner), default 1. It stretches the base of every deadline
 * below; the measured starts stretch them further by themselves.
 */
export const TIME_SCALE = Math.max(1, Number(process.env.CAIRN_TEST_TIME_SCALE) || 1);

/**
 * Start deadlines: `base` ms (times TIME_SCALE) for the first start of a kind in this process,
 * then at least START_MULTIPLE times the slowest start of that kind measured so far. A node
 * under the tests starts in about 2-3 s on a quiet 2-core machine (60 s leaves room for a
 * machine twenty times slower); a start is a failure only when it takes START_MULTIPLE times
 * the slowest one seen, which a load spike does not reach and a hung start soon does.
 */
const START_MULTIPLE = 8;
const slowest = new Map<string, number>();

/** The deadline (ms) for the next start of `kind` (e.g. 'node', 'etcd'). */
export function startDeadline(kind: string, base: number): number {
  return Math.max(base * TIME_SCALE, START_MULTIPLE * (slowest.get(kind) ?? 0));
}

/** Records a start of `kind` that took `ms`, for the deadlines of the next ones. */
export function startTook(kind: string, ms: number): void {
  if (ms > (slowest.get(kind) ?? 0)) slowest.set(kind, ms);
}

// Every child registered that still runs, and directories to remove at exit.
const live = new Set<ChildProcess>();
const dirs = new Set<string>();
let exitHook = false;
let watchdog: (Writable & { unref?: () => void }) | undefined;

// A shell that holds the pids of running children and SIGKILLs them when its stdin closes: the
// test process died without running its exit hook (a signal, such as tap's timeout).
const WATCHDOG = `pids=' '
while read -r op pid; do
  case $op in
    +) pids="$pids$pid " ;;
    -) pids=$(printf '%s' "$pids" | sed "s/ $pid / /") ;;
  esac
done
kill -9 $pids 2>/dev/null`;

function tellWatchdog(line: string): void {
  if (!watchdog) {
    const w = spawn('sh', ['-c', WATCHDOG], { stdio: ['pipe', 'ignore', 'ignore'], detached: false });
    w.on('error', () => {});
    w.unref();
    watchdog = w.stdin as Writable & { unref?: () => void };
    watchdog.on('error', () => {}); // the watchdog is gone: the exit hook still covers a normal exit
    watchdog.unref?.();
  }
  watchdog.write(`${line}\n`);
}

/** On exit (a failed test that never reached its stop, an uncaught error), SIGKILL what runs. */
function hookExit(): void {
  if (exitHook) return;
  exitHook = true;
  process.on('exit', () => {
    for (const c of live) c.kill('SIGKILL');
    for (const d of dirs) {
      try {
        rmSync(d, { recursive: true, force: true });
      } catch {
        // a child still dying wrote into it: left in tmpdir
      }
    }
  });
}

/**
 * SIGKILLs `child`, if it still runs, when this process exits however it exits: the exit hook,
 * or the watchdog shell when this process dies without running it. Call it right after the
 * spawn, before waiting for anything.
 */
export function killOnExit(child: ChildProcess): void {
  hookExit();
  const pid = child.pid;
  if (pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  live.add(child);
  tellWatchdog(`+ ${pid}`);
  child.once('exit', () => {
    live.delete(child);
    tellWatchdog(`- ${pid}`);
  });
}

/** Removes `dir` when this process exits, unless keepDir(dir) is called first. */
export function removeOnExit(dir: string): void {
  hookExit();
  dirs.add(dir);
}

/** Forgets a directory given to removeOnExit (its owner removed it, or keeps it). */
export function keepDir(dir: string): void {
  dirs.delete(dir);
}

/** Whether `child` still runs (no exit seen yet). */
export function running(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** Resolves once `child` has exited (at once if it has). */
export function exitOf(child: ChildProcess): Promise<void> {
  if (!running(child) || child.pid === undefined) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/**
 * Stops `child`: `signal` (SIGTERM: a clean stop, which also writes the process's coverage),
 * then SIGKILL if it still runs after `graceMs` (times TIME_SCALE). Resolves once it has exited.
 */
export async function stopChild(child: ChildProcess, graceMs = 20_000, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (!running(child) || child.pid === undefined) return;
  const gone = exitOf(child);
  child.kill(signal);
  const timer = setTimeout(() => {
    if (running(child)) child.kill('SIGKILL');
  }, graceMs * TIME_SCALE);
  await gone;
  clearTimeout(timer);
}
