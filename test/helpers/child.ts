/**
 * Runs the node as a separate process (`src/main.ts` through tsx), as an operator would:
 * for tests that need a second process, kill -9, or the exit code and message of a refusal.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { killOnExit, running, startDeadline, startTook, stopChild, TIME_SCALE } from './procs.js';

/**
 * How long stop() lets a node end cleanly after SIGTERM before it SIGKILLs it: a node stops in
 * well under a second; a stop that hangs (a bug, or a machine starved of CPU) must not hold the
 * test, and a SIGKILLed node only loses its coverage.
 */
const STOP_GRACE_MS = 30_000;

export interface ChildNode {
  child: ChildProcess;
  pid: number;
  ledgerUrl: string;
  dataUrl: string;
  ports: { ledger: number; node: number; data: number; network: number };
  /** Everything the process wrote to stderr so far. */
  log(): string;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  kill9(): Promise<void>;
  /** Same as kill9. */
  kill(): Promise<void>;
  stop(): Promise<number | null>;
}

export interface Exited {
  code: number | null;
  log: string;
}

/**
 * Node arguments that run a TypeScript entry in a child process. Under tap these are the
 * test process's own loader flags (test/loader/register.mjs, made absolute so that a child
 * started in another directory finds it): the child compiles the sources exactly as the
 * tests do, so the coverage tap collects from it merges with theirs (a child compiled by
 * another loader records the same files with other offsets and garbles the report). Where
 * the tests' coverage is V8's own (NODE_V8_COVERAGE, set by register.mjs), tap's recorder is
 * left out: the child's coverage is V8's.
 */
export const TS_ARGS: string[] = process.execArgv.some((a) => a.includes('@tapjs/'))
  ? process.execArgv
      .filter((a) => !(process.env.NODE_V8_COVERAGE && a.includes('@tapjs/processinfo')))
      .map((a) => (a.startsWith('--import=./') ? `--import=${pathToFileURL(resolve(a.slice('--import='.length))).href}` : a))
  : ['--import', 'tsx'];

/** The tests' compiled copy of the sources (test/loader/test-js.mjs), when register.mjs made one. */
const DEV_BUILD = process.env.CAIRN_DEV_BUILD || undefined;

/**
 * Node arguments that run `entry`, a TypeScript file of the package (`src/main.ts`,
 * `src/cli/cairn.ts`), then `rest`: from the tests' compiled copy where there is one, with no
 * loader (a node starts in ~3 CPU-s instead of ~5), else through TS_ARGS. Other arguments
 * pass through TS_ARGS unchanged.
 */
export function nodeArgs(entry: string, ...rest: string[]): string[] {
  if (DEV_BUILD && /^(src|workers)\/.+\.ts$/.test(entry)) {
    return [...process.execArgv.filter((a) => a === '--enable-source-maps'), join(DEV_BUILD, entry.replace(/\.ts$/, '.js')), ...rest];
  }
  return [...TS_ARGS, entry, ...rest];
}

/** The environment of a node the tests start on `dir`: ephemeral ports, one verify thread, `env` on top. */
export const childEnv = (dir: string, env: Record<string, string> = {}): NodeJS.ProcessEnv => ({
  ...process.env,
  CAIRN_DATA_DIR: dir,
  CAIRN_LEDGER_BIND: '127.0.0.1:0',
  CAIRN_NODE_BIND: '127.0.0.1:0',
  CAIRN_DATA_BIND: '127.0.0.1:0',
  CAIRN_NETWORK_BIND: '127.0.0.1:0',
  CAIRN_COMPONENT_BIND: 'off',
  CAIRN_POOL_THREADS: '1',
  CAIRN_LOG_LEVEL: 'info',
  ...env,
});

const START = /ledger gateway \(C\) on [\d.]+:(\d+), node \(A\) on [\d.]+:(\d+), data \(B\) on [\d.]+:(\d+)(?:, peer network on [\d.]+:(\d+))?/;

/** The message of a log line: `msg` of a JSON line, else the line itself (readable format). */
export function logMessage(line: string): string {
  if (!line.startsWith('{')) return line;
  try {
    const o = JSON.parse(line) as { msg?: unknown };
    return typeof o.msg === 'string' ? o.msg : '';
  } catch {
    return ''; // a JSON line still being written
  }
}

/** The node's start line (ports of C, A, B and the peer network), in either log format. */
export function startLine(log: string): RegExpExecArray | null {
  for (const line of log.split('\n')) {
    const m = START.exec(logMessage(line));
    if (m) return m;
  }
  return null;
}

/**
 * Spawns a node; resolves with it once it listens, or rejects with the log if it exits or
 * misses its start deadline. The process is registered for a kill at exit the moment it is
 * spawned (procs.ts), and one that misses its deadline is stopped (SIGKILL) before the
 * rejection (the error carries its `pid`): nothing holds its data directory when the caller
 * goes on. `deadlineMs` replaces the measured deadline (the harness's own test).
 */
export function startChild(dir: string, env: Record<string, string> = {}, opts: { deadlineMs?: number } = {}): Promise<ChildNode> {
  const t0 = Date.now();
  const child = spawn(process.execPath, nodeArgs('src/main.ts'), { env: childEnv(dir, env), stdio: ['ignore', 'ignore', 'pipe'] });
  killOnExit(child);
  let log = '';
  child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const deadline = opts.deadlineMs ?? startDeadline('node', 60_000);
    let late = false;
    const timer = setTimeout(() => {
      late = true;
      child.stderr!.off('data', onData);
      if (running(child)) child.kill('SIGKILL');
      void exited.then(() => reject(Object.assign(new Error(`node did not start within ${deadline} ms (stopped): ${log}`), { pid: child.pid })));
    }, deadline);
    const onData = (): void => {
      const m = startLine(log);
      if (!m) return;
      clearTimeout(timer);
      startTook('node', Date.now() - t0);
      child.stderr!.off('data', onData);
      const kill9 = async (): Promise<void> => {
        if (running(child)) child.kill('SIGKILL');
        await exited;
      };
      resolve({
        child,
        pid: child.pid!,
        ledgerUrl: `http://127.0.0.1:${m[1]}`,
        dataUrl: `http://127.0.0.1:${m[3]}`,
        exited,
        ports: { ledger: Number(m[1]), node: Number(m[2]), data: Number(m[3]), network: Number(m[4] ?? 0) },
        log: () => log,
        kill9,
        kill: kill9,
        // SIGTERM (a clean stop writes the process's coverage), SIGKILL if it has not exited after a grace.
        stop: async () => {
          await stopChild(child, STOP_GRACE_MS);
          return exited;
        },
      });
    };
    child.stderr!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      if (!late) reject(new Error(`node exited with ${code}: ${log}`));
    });
  });
}

/** Runs a process that is expected to end (a refused start, a CLI command); resolves with its exit code and stderr+stdout. */
export function runToExit(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 90_000): Promise<Exited> {
  const child = spawn(process.execPath, nodeArgs(...(args as [string, ...string[]])), { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const onData = (d: Buffer): void => {
    log += d.toString();
    // A node that should have refused but serves: end it, the log tells what happened.
    if (args[0] === 'src/main.ts' && startLine(log)) child.kill('SIGKILL');
  };
  killOnExit(child);
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs * TIME_SCALE);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? -1 : null), log: log + (signal ? `\n[killed by ${signal}]` : '') });
    });
  });
}

/** Starts a node that must refuse to start; resolves with its exit code and log. */
export function startRefused(dir: string, env: Record<string, string> = {}): Promise<Exited> {
  return runToExit(['src/main.ts'], childEnv(dir, env));
}
