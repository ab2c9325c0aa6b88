/**
 * What a ledger description can name: the transaction families and read-model projectors
 * this build of the node carries. A description lists names (it crosses to the committer
 * thread and the verify workers as plain data); each thread resolves them here.
 */
import type { Family } from '../families/types.js';
import { intkey } from '../families/intkey.js';
import { settings } from '../families/settings.js';
import { gridFamilies } from '../families/grid/index.js';
import { gridProjector, type Projector } from './read-model/index.js';
import { GRID_DB } from '../store/names.js';

const FAMILIES: readonly Family[] = [intkey, settings, ...gridFamilies];

/** A read-model projector and the sub-databases it writes (opened before any block). */
export interface ProjectorEntry {
  projector: Projector;
  dbNames: readonly string[];
}

const PROJECTORS: Readonly<Record<string, ProjectorEntry>> = {
  grid: { projector: gridProjector, dbNames: Object.values(GRID_DB) },
};

/** Every family name the node knows. */
export const ALL_FAMILY_NAMES: readonly string[] = [...new Set(FAMILIES.map((f) => f.name))];

export type FamilyLookup = (name: string, version: string) => Family | undefined;

/**
 * Named in a verify worker's family list: a family the node does not carry is accepted
 * too, for a transaction processor to run (src/component). Never given to a committer.
 */
export const ANY_FAMILY = '*';
/** What the lookup answers for such a family: only its presence is used. */
const EXTERNAL_FAMILY: Family = {
  name: '*',
  versions: [],
  namespaces: [],
  apply(): void {
    throw new Error('a transaction processor family has no native implementation');
  },
};

/** The families named, by name and version; throws on a name the node does not carry. */
export function familyLookup(names: readonly string[]): FamilyLookup {
  const byKey = new Map<string, Family>();
  if (names.includes(ANY_FAMILY)) {
    const known = familyLookup(names.filter((n) => n !== ANY_FAMILY));
    return (name, version) => known(name, version) ?? (name !== '' && version !== '' ? EXTERNAL_FAMILY : undefined);
  }
  for (const name of names) {
    const found = FAMILIES.filter((f) => f.name === name);
    if (found.length === 0) throw new Error(`ledger description names an unknown transaction family ${JSON.stringify(name)}`);
    for (const f of found) for (const v of f.versions) byKey.set(`${f.name}\u0000${v}`, f);
  }
  return (name, version) => byKey.get(`${name}\u0000${version}`);
}

/** The projectors named; throws on a name the node does not carry. */
export function projectorEntries(names: readonly string[]): ProjectorEntry[] {
  return names.map((name) => {
    const p = PROJECTORS[name];
    if (!p) throw new Error(`ledger description names an unknown read-model projector ${JSON.stringify(name)}`);
    return p;
  });
}
