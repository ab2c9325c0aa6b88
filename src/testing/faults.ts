/**
 * TEST-ONLY fault injection for the storage layer: lets the tests make a pending-pool
 * write or a ledger transaction fail (EIO, ENOSPC) or slow down, to check what the node
 * does then. Read from CAIRN_TEST_FAULTS once per thread, when a store writer starts; the
 * variable is never set in production, and then every hook is `null` (one null check per
 * write, nothing else).
 *
 * CAIRN_TEST_FAULTS is a comma-separated list of `point:action`:
 *   point   `pending.write`  a write of verified batches to the pending pool (HTTP thread)
 *           `ledger.write`   a block or verdict transaction of the committer thread
 *           `circuit.write`  a round transaction of a circuit ledger's committer thread
 *   action  `EIO@3`          the 3rd write at that point (counting from 1) fails with EIO
 *           `ENOSPC@2+`      the 2nd and every later write fails with ENOSPC
 *           `delay=500`      every write waits 500 ms first (pending.write only)
 */
export type FaultPointName = 'pending.write' | 'ledger.write' | 'circuit.write';

export class FaultPoint {
  #count = 0;
  constructor(
    readonly name: FaultPointName,
    readonly delayMs: number,
    readonly fail: { code: string; from: number; onward: boolean } | null,
  ) {}

  /** Counts one write and throws the configured error if this write must fail. */
  check(): void {
    this.#count++;
    const f = this.fail;
    if (!f || this.#count < f.from || (!f.onward && this.#count !== f.from)) return;
    const err = new Error(`${f.code}: injected fault at ${this.name} (write ${this.#count})`) as NodeJS.ErrnoException;
    err.code = f.code;
    throw err;
  }
}

/** The hook for `point`, or null when no fault is configured there (always in production). */
export function faultPoint(point: FaultPointName, spec = process.env.CAIRN_TEST_FAULTS): FaultPoint | null {
  if (!spec) return null;
  let delayMs = 0;
  let fail: FaultPoint['fail'] = null;
  for (const rule of spec.split(',')) {
    const [name, action] = rule.trim().split(':');
    if (name !== point || !action) continue;
    const delay = /^delay=(\d+)$/.exec(action);
    const err = /^([A-Z]+)@(\d+)(\+?)$/.exec(action);
    if (delay) delayMs = Number(delay[1]);
    else if (err?.[1]) fail = { code: err[1], from: Number(err[2]), onward: err[3] === '+' };
    else throw new Error(`CAIRN_TEST_FAULTS: cannot parse ${JSON.stringify(rule)}`);
  }
  return delayMs || fail ? new FaultPoint(point, delayMs, fail) : null;
}
