/**
 * Starts a node for a benchmark as a child process on loopback ephemeral ports, from the
 * compiled build when present (what `npm start` runs) or from sources, and reports its
 * pid, URLs and peak RSS.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pinned } from './pin.js';

export interface BenchNode {
  pid: number;
  ledgerUrl: string;
  nodeUrl: string;
  dataUrl: string;
  /** The circuit peer network port. */
  networkPort: number;
  dataDir: string;
  child: ChildProcess;
  rssMiB(): number;
  /** Anonymous memory only (heap, stacks, buffers): RSS less the mapped LMDB file pages. */
  rssAnonMiB(): number;
  peakRssMiB(): number;
  stop(): Promise<void>;
  /** CPU seconds per thread name (from /proc), for finding the busy thread. */
  threadCpu(): Record<string, number>;
  /** The node's stderr so far (its last 50,000 to 100,000 characters). */
  log(): string;
}

function statusField(pid: number, field: string): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

/**
 * The start line with the ports of C, A, B and the peer network. JSON log lines carry it in
 * `msg`; readable lines (and older builds run through BENCH_NODE_DIR) are the text itself.
 */
function startLine(log: string): RegExpExecArray | null {
  const re = /\(C\) on [^:]+:(\d+), node \(A\) on [^:]+:(\d+), data \(B\) on [^:]+:(\d+)(?:, peer network on [^:]+:(\d+))?/;
  for (const line of log.split('\n')) {
    let text = line;
    if (line.startsWith('{')) {
      try {
        text = String((JSON.parse(line) as { msg?: unknown }).msg ?? '');
      } catch {
        continue; // not complete yet
      }
    }
    const m = re.exec(text);
    if (m) return m;
  }
  return null;
}

/** `cores`: a taskset core list to pin the node to (bench/lib/pin.ts); unpinned when undefined. */
export async function startBenchNode(env: Record<string, string> = {}, dataDir?: string, cores?: string): Promise<BenchNode> {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'cairn-bench-'));
  // BENCH_NODE_DIR runs another checkout's build (e.g. an older commit) with this bench.
  const cwd = process.env.BENCH_NODE_DIR ?? process.cwd();
  const built = existsSync(join(cwd, 'dist/src/main.js')) && process.env.BENCH_FROM_SOURCE !== '1';
  const extra = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  // The V8 setting `npm start` runs the node with (scripts/start.mjs), so that a bench measures the node as it is run.
  const args = ['--initial-old-space-size=64', ...extra, ...(built ? ['dist/src/main.js'] : ['--import', 'tsx', 'src/main.ts'])];
  const [cmd, argv] = pinned(cores, process.execPath, args);
  const child = spawn(cmd, argv, {
    env: {
      ...process.env,
      CAIRN_DATA_DIR: dir,
      CAIRN_LEDGER_BIND: '127.0.0.1:0',
      CAIRN_NODE_BIND: '127.0.0.1:0',
      CAIRN_DATA_BIND: '127.0.0.1:0',
      CAIRN_NETWORK_BIND: '127.0.0.1:0',
      CAIRN_COMPONENT_BIND: 'off',
      CAIRN_LOG_LEVEL: 'info',
      ...env,
    },
    // BENCH_NODE_LOG also takes the node's stdout (V8's --trace-gc and the like write there).
    stdio: ['ignore', process.env.BENCH_NODE_LOG ? 'pipe' : 'ignore', 'pipe'],
    cwd,
  });
  let log = '';
  if (process.env.BENCH_NODE_LOG) {
    const logFile = process.env.BENCH_NODE_LOG;
    child.stdout!.on('data', (d: Buffer) => appendFileSync(logFile, d));
  }
  const ports = await new Promise<string[]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`node did not start: ${log}`)), 60_000);
    const logFile = process.env.BENCH_NODE_LOG;
    child.stderr!.on('data', (d: Buffer) => {
      if (logFile) appendFileSync(logFile, d);
      log += d.toString();
      if (log.length > 100_000) log = log.slice(-50_000);
      const m = startLine(log);
      if (m) {
        clearTimeout(timer);
        resolve([m[1]!, m[2]!, m[3]!, m[4] ?? '0']);
      }
    });
    child.once('exit', (code) => reject(new Error(`node exited with ${code}: ${log}`)));
  });
  const pid = child.pid!;
  return {
    pid,
    child,
    dataDir: dir,
    ledgerUrl: `http://127.0.0.1:${ports[0]}`,
    nodeUrl: `http://127.0.0.1:${ports[1]}`,
    dataUrl: `http://127.0.0.1:${ports[2]}`,
    networkPort: Number(ports[3]),
    log: () => log,
    rssMiB: () => statusField(pid, 'VmRSS'),
    rssAnonMiB: () => statusField(pid, 'RssAnon'),
    peakRssMiB: () => statusField(pid, 'VmHWM'),
    threadCpu(): Record<string, number> {
      const out: Record<string, number> = {};
      try {
        for (const tid of readdirSync(`/proc/${pid}/task`)) {
          const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
          const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
          const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
          const secs = (Number(f[11]) + Number(f[12])) / 100;
          if (secs > 0.05) out[`${name}#${tid}`] = secs;
        }
      } catch {
        // process gone
      }
      return out;
    },
    async stop(): Promise<void> {
      await new Promise<void>((resolve) => {
        // Gone already (an exit code, or a signal: a crash): nothing to wait for.
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
      });
      if (!dataDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
