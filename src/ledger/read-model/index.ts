/**
 * The supply-chain read model: the projector the committer runs inside each block's
 * transaction, the keys it writes under, and the JSON records it stores; the data API reads
 * them (reader.ts). The committer imports only this module (no HTTP code), so it stays
 * light enough for the committer thread.
 */
export { gridProjector, gridRecords, type BlockInfo, type Projector, type ReadModelWriter } from './projector.js';
export { GRID_DB, KEY_SEP, agentRoleKey, gridKeys, gridPrefixes, safeKey } from './keys.js';
export type * from './records.js';
