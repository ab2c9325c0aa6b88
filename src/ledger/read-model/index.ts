/**
 * The data API's read model: the projector the committer runs inside each block's
 * transaction, the keys it writes under, and the JSON records it stores. The committer
 * imports only this module (no HTTP code), so it stays light enough for the committer
 * thread.
 */
import { gridProjector, type Projector } from './projector.js';
import { GRID_DB } from './keys.js';

/** Read-model projectors the committer runs inside each block's transaction. */
export const projectors: readonly Projector[] = [gridProjector];

/** Names of the read-model sub-databases, opened up front (never inside a write transaction). */
export const readModelDbNames: readonly string[] = Object.values(GRID_DB);

export { gridProjector, gridRecords, type BlockInfo, type Projector, type ReadModelWriter } from './projector.js';
export { GRID_DB, KEY_SEP, agentRoleKey, gridKeys, gridPrefixes, safeKey } from './keys.js';
export type * from './records.js';
