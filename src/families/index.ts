/** The table of transaction families this node executes. */
import type { Family, Projector } from './types.js';
import { intkey } from './intkey.js';
import { settings } from './settings.js';
import { gridFamilies, gridProjector, GRID_DB } from './grid/index.js';

const FAMILIES: Family[] = [intkey, settings, ...gridFamilies];

const byKey = new Map<string, Family>();
for (const f of FAMILIES) for (const v of f.versions) byKey.set(`${f.name}\u0000${v}`, f);

export function findFamily(name: string, version: string): Family | undefined {
  return byKey.get(`${name}\u0000${version}`);
}

/** Read-model projectors the committer runs inside each block's transaction. */
export const projectors: readonly Projector[] = [gridProjector];

/** Names of the read-model sub-databases, opened up front (never inside a write transaction). */
export const readModelDbNames: readonly string[] = Object.values(GRID_DB);
