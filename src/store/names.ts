/**
 * Every sub-database name of the node's LMDB environment, in one place: a name is never
 * reused for something else, and two ledgers in one environment differ only by their
 * prefix. Modules open their stores by these names and define none of their own.
 */

/** Names of one ledger's sub-databases (written only by its committer thread). */
export interface LedgerDbNames {
  merkle: string;
  blocks: string;
  blockByNum: string;
  /** Batch and transaction ids of each block, by block number (src/store/id-index.ts). */
  blockIds: string;
  /** Transaction receipts of each block, by block number. */
  receipts: string;
  /** The id index's runs on disk: descriptors, and their chunks and fences (src/store/id-runs.ts). */
  idRuns: string;
  idChunks: string;
  /** Former id indexes keyed by id (read once, to build the records above, then emptied). */
  legacyBatchIndex: string;
  legacyTxnIndex: string;
  meta: string;
  invalid: string;
  /** State deltas by block number (src/state/deltas.ts). */
  stateDeltas: string;
  /** State root -> block number. */
  stateRoots: string;
}

/** Prefix of the node's own ledger: its stores are `ledger.merkle`, `ledger.blocks`, … */
export const NODE_LEDGER_PREFIX = 'ledger';

/** The sub-database names of the ledger whose stores carry `prefix`. */
export function ledgerDbNames(prefix: string): LedgerDbNames {
  return {
    merkle: `${prefix}.merkle`,
    blocks: `${prefix}.blocks`,
    blockByNum: `${prefix}.block_by_num`,
    blockIds: `${prefix}.block_ids`,
    receipts: `${prefix}.receipts`,
    idRuns: `${prefix}.id_runs`,
    idChunks: `${prefix}.id_chunks`,
    legacyBatchIndex: `${prefix}.batch_index`,
    legacyTxnIndex: `${prefix}.txn_index`,
    meta: `${prefix}.meta`,
    invalid: `${prefix}.invalid`,
    stateDeltas: `${prefix}.state_deltas`,
    stateRoots: `${prefix}.state_roots`,
  };
}

/** The state service's own sub-databases beside its ledger stores (see src/scabbard). */
export interface ScabbardDbNames {
  /** Accepted batches not yet settled (durable intake). */
  intake: string;
  /** Settled batch statuses (Committed / Invalid). */
  status: string;
  /** Committed rounds by height, handed to a member that catches up. */
  rounds: string;
}

export function scabbardDbNames(prefix: string): ScabbardDbNames {
  return { intake: `${prefix}.intake`, status: `${prefix}.batch_status`, rounds: `${prefix}.rounds` };
}

/**
 * Read-model sub-database name of a circuit ledger: the node ledger's name (e.g.
 * `grid.agent`) under the ledger's prefix; the node ledger's own prefix is ''.
 */
export function readModelDbName(prefix: string, name: string): string {
  return prefix ? `${prefix}.${name}` : name;
}

/** Supply-chain read model the grid projector keeps in step with each block (msgpack values). */
export const GRID_DB = {
  organization: 'grid.organization',
  agent: 'grid.agent',
  agentByKey: 'grid.agent_key',
  role: 'grid.role',
  alternateId: 'grid.alternate_id',
  schema: 'grid.schema',
  product: 'grid.product',
  location: 'grid.location',
  purchaseOrder: 'grid.purchase_order',
  poVersion: 'grid.po_version',
  poRevision: 'grid.po_revision',
  poAlternateId: 'grid.po_alternate_id',
  /** Bookkeeping: state address → [db, key] pairs it produced. */
  address: 'grid.address',
} as const;

/** Data-change events of the data API, written from the HTTP thread (never the ledger's). */
export const DATA_DB = {
  events: 'data.events',
  batchEvents: 'data.batch_events',
} as const;

/** The circuit admin service's stores (src/circuits/store.ts), written from the HTTP thread. */
export const CIRCUITS_DB = {
  /** Pending circuit proposals by circuit id (canonical CircuitProposal bytes). */
  proposals: 'circuits.proposals',
  /** Circuits by id (canonical Circuit bytes). */
  circuits: 'circuits.circuits',
  /** The admin event log by sequence number. */
  events: 'circuits.events',
  /** Accepted circuits whose members have not all reported ready. */
  ready: 'circuits.ready',
} as const;

/** The node API's stores (users, keys, sessions, roles, registry…): `node.<name>`. */
export function nodeDbName(name: string): string {
  return `node.${name}`;
}
