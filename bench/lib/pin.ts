/**
 * Pinning a benchmark's processes to cores of their own (Linux, `taskset` from util-linux), so
 * that a run on a many-core machine measures each node on its own cores instead of the
 * scheduler's mix. The layout for PIN_CORES = k on a machine of n cores:
 *
 *   node i (n0, n1, n2)  cores i·k … i·k+k−1   (the single node takes node 0's cores)
 *   etcd member j        core 3k + j           (one core each)
 *   the benchmark itself cores 3k+3 … n−1      (the load generator; at least one core)
 *
 * A child is started as `taskset -c LIST cmd …`: taskset execs cmd, so the child's pid is
 * cmd's own (the bench reads its CPU time from /proc/<pid>).
 */
import { execFileSync } from 'node:child_process';
import { cpus } from 'node:os';

export interface PinLayout {
  /** Cores per node. */
  perNode: number;
  /** Core list (taskset -c syntax) of node i (0, 1, 2); the single node uses node 0's. */
  node(i: number): string;
  /** Core of etcd member j (0, 1, 2). */
  etcd(j: number): string;
  /** The benchmark process's cores. */
  bench: string;
  /** Every assignment, for the report. */
  describe(): Record<string, string>;
}

const range = (from: number, to: number): string => (from === to ? String(from) : `${from}-${to}`);

/** The layout for `perNode` cores per node on a machine of `total` cores; throws when they do not fit. */
export function pinLayout(perNode: number, total = cpus().length): PinLayout {
  const benchFrom = 3 * perNode + 3;
  if (perNode < 1 || benchFrom >= total) {
    throw new Error(
      `PIN_CORES=${perNode} needs ${benchFrom + 1} cores (3 nodes × ${perNode}, 3 etcd members, 1 for the load) and this machine has ${total}`,
    );
  }
  const layout: PinLayout = {
    perNode,
    node: (i) => range(i * perNode, i * perNode + perNode - 1),
    etcd: (j) => String(3 * perNode + j),
    bench: range(benchFrom, total - 1),
    describe: () => ({
      n0: layout.node(0),
      n1: layout.node(1),
      n2: layout.node(2),
      single: layout.node(0),
      etcd: [0, 1, 2].map((j) => layout.etcd(j)).join(','),
      bench: layout.bench,
    }),
  };
  return layout;
}

/** The command line that runs `cmd args` on `cores` (unchanged when cores is undefined). */
export function pinned(cores: string | undefined, cmd: string, args: string[]): [string, string[]] {
  return cores === undefined ? [cmd, args] : ['taskset', ['-c', cores, cmd, ...args]];
}

/** Pins this process (every thread it has now; threads made later inherit it) to `cores`. */
export function pinSelf(cores: string): void {
  try {
    execFileSync('taskset', ['-a', '-c', '-p', cores, String(process.pid)], { stdio: 'ignore' });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new Error(e.code === 'ENOENT' ? 'PIN_CORES needs taskset (util-linux) on PATH' : `taskset could not pin to cores ${cores}: ${e.message}`);
  }
}
