/**
 * Runs the node as a child process (src/main.ts) on ephemeral ports, for tests that need
 * kill -9 or that check how the process itself ends.
 */
import { spawn } from 'node:child_process';

export interface ChildNode {
  ledgerUrl: string;
  dataUrl: string;
  /** Everything the node logged so far. */
  log(): string;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  kill(): Promise<void>;
}

export function startChild(dir: string, env: Record<string, string> = {}): Promise<ChildNode> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: {
      ...process.env,
      CAIRN_DATA_DIR: dir,
      CAIRN_LEDGER_BIND: '127.0.0.1:0',
      CAIRN_NODE_BIND: '127.0.0.1:0',
      CAIRN_DATA_BIND: '127.0.0.1:0',
      CAIRN_POOL_THREADS: '1',
      CAIRN_LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let log = '';
  child.stderr!.on('data', (d: Buffer) => {
    log += d.toString();
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`node did not start: ${log}`)), 60_000);
    const poll = setInterval(() => {
      const c = /ledger gateway \(C\) on 127\.0\.0\.1:(\d+), node \(A\) on 127\.0\.0\.1:\d+, data \(B\) on 127\.0\.0\.1:(\d+)/.exec(log);
      if (!c) return;
      clearInterval(poll);
      clearTimeout(timer);
      resolve({
        ledgerUrl: `http://127.0.0.1:${c[1]}`,
        dataUrl: `http://127.0.0.1:${c[2]}`,
        log: () => log,
        exited,
        kill: async () => {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
          await exited;
        },
      });
    }, 20);
    void exited.then((code) => {
      clearInterval(poll);
      clearTimeout(timer);
      reject(new Error(`node exited with ${code}: ${log}`));
    });
  });
}
