/**
 * The families setting (`sawtooth.validator.transaction_families`): when set, the only
 * families (name and version) a transaction may use. Read by the component endpoint
 * (src/component/server.ts) from the state a block is built on.
 */
import { readSetting } from '../families/settings.js';
import type { StateReader } from '../ledger/executor.js';
import { log } from '../log.js';

/** The setting that, when set, lists the only families a transaction may use. */
export const TRANSACTION_FAMILIES_SETTING = 'sawtooth.validator.transaction_families';

/** A family's key in the sets below: name and version. */
export const familyKey = (name: string, version: string): string => `${name}\u0000${version}`;

/**
 * The families `sawtooth.validator.transaction_families` allows (name\0version), or null
 * when it is not set. A value that is not a JSON list of {family, version} counts as not
 * set (logged), so a typo does not stop every transaction.
 */
export function readAllowed(base: StateReader): Set<string> | null {
  let value: string | undefined;
  try {
    value = readSetting((a) => base.get(a), TRANSACTION_FAMILIES_SETTING);
  } catch {
    return null;
  }
  if (value === undefined) return null;
  try {
    const list = JSON.parse(value) as unknown;
    if (!Array.isArray(list)) throw new Error('not a list');
    const out = new Set<string>();
    for (const item of list) {
      const f = item as { family?: unknown; version?: unknown };
      if (typeof f.family !== 'string' || typeof f.version !== 'string') throw new Error('an entry without family and version');
      out.add(familyKey(f.family, f.version));
    }
    return out;
  } catch (err) {
    log.warn(`${TRANSACTION_FAMILIES_SETTING} is ignored: ${err instanceof Error ? err.message : String(err)}`);
    return null;
  }
}
