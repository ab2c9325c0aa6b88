/**
 * A ledger is an instance of the engine built from a description: where its stores live,
 * which families it executes, how its Merkle leaves are encoded, how its chain starts and
 * which read models it keeps. The node's own ledger is one description; a circuit's ledger
 * is another, running beside it in the same process and the same LMDB environment.
 * Plain data only: it is handed to the committer thread and the verify workers as is.
 */
import type { LeafEncoding } from '../state/merkle.js';
import { NODE_LEDGER_PREFIX } from '../store/names.js';
import { ALL_FAMILY_NAMES } from './catalog.js';

/**
 * How block 0 is made. 'devmode-settings': one batch of the node's own settings proposals
 * (the node key as the only authorized settings key, consensus Devmode 0.1), as a Sawtooth
 * validator's genesis does.
 */
export type GenesisKind = 'devmode-settings';

export interface LedgerDescription {
  /** Prefix of its sub-database names in the LMDB environment (see store/names.ts). */
  storePrefix: string;
  /** File of its pending pool under the data directory: an environment of its own per ledger. */
  pendingFile: string;
  /** Transaction families it executes and accepts, by name (see catalog.ts). */
  families: string[];
  /** Merkle leaf value encoding: 'cbor' (Sawtooth) or 'raw' (transact). */
  leafEncoding: LeafEncoding;
  genesis: GenesisKind;
  /** Read-model projectors run inside each block's transaction, by name (see catalog.ts). */
  projectors: string[];
}

/** The node's own ledger: the Sawtooth-compatible chain behind the ledger gateway and the data API. */
export const NODE_LEDGER: Readonly<LedgerDescription> = {
  storePrefix: NODE_LEDGER_PREFIX,
  pendingFile: 'pending.mdb',
  families: [...ALL_FAMILY_NAMES],
  leafEncoding: 'cbor',
  genesis: 'devmode-settings',
  projectors: ['grid'],
};
