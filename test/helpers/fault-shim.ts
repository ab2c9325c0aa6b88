/**
 * Builds the LD_PRELOAD storage-fault library (fault-shim.c) with the system C compiler,
 * once per test process, and gives a child node the environment that loads it. A test then
 * turns faults on and off with `set('EIO ledger.mdb')` / `set('')` while the node runs, or
 * sets a transient one (`set('EIO ledger.mdb count=1 call=pwrite')`: one write fails) and
 * reads with `fired()` the calls it failed.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface FaultShim {
  /** Environment for startChild: LD_PRELOAD and the control file. */
  env: Record<string, string>;
  /**
   * The rule in force: `EIO <file part>`, `ENOSPC <file part>`, or '' for none, optionally
   * followed by `count=N` (only the next N matching calls fail), `call=pwrite|pwritev|write|writev|sync`
   * `skip=N` (the first N matching calls pass), `below=N` / `from=N` (only writes at a file offset under N / from N): see fault-shim.c.
   */
  set(rule: string): void;
  /** The calls the shim failed so far, oldest first: `<errno> <call> <fd> <offset>` (-1: a call without one). */
  fired(): string[];
}

let built: string | null | undefined;

/** The compiled library's path, or null with the reason when no compiler is available. */
function build(): string | null {
  if (built !== undefined) return built;
  const dir = mkdtempSync(join(tmpdir(), 'cairn-shim-'));
  const out = join(dir, 'fault-shim.so');
  try {
    execFileSync('cc', ['-shared', '-fPIC', '-O2', '-o', out, join(import.meta.dirname, 'fault-shim.c'), '-ldl'], { stdio: 'pipe' });
    built = out;
  } catch {
    built = null;
  }
  return built;
}

/** A shim with its own control file, or a skip reason when it cannot be built here. */
export function faultShim(): FaultShim | string {
  const lib = build();
  if (!lib) return 'no C compiler (cc) to build the fault-injection library';
  const ctl = join(mkdtempSync(join(tmpdir(), 'cairn-shim-ctl-')), 'rule');
  writeFileSync(ctl, '');
  return {
    env: { LD_PRELOAD: lib, CAIRN_FAULT_SHIM: ctl },
    set: (rule) => writeFileSync(ctl, rule),
    fired: () => {
      try {
        return readFileSync(`${ctl}.fired`, 'utf8').split('\n').filter(Boolean);
      } catch {
        return [];
      }
    },
  };
}
