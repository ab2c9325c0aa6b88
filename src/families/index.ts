/** The table of transaction families this node executes. */
import type { Family } from './types.js';
import { intkey } from './intkey.js';
import { settings } from './settings.js';
import { gridFamilies } from './grid/index.js';

const FAMILIES: Family[] = [intkey, settings, ...gridFamilies];

const byKey = new Map<string, Family>();
for (const f of FAMILIES) for (const v of f.versions) byKey.set(`${f.name}\u0000${v}`, f);

export function findFamily(name: string, version: string): Family | undefined {
  return byKey.get(`${name}\u0000${version}`);
}
