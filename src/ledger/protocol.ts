/**
 * Messages between the HTTP thread and the ledger's threads (committer thread, verify
 * workers). Plain data only. Workers import these types from here; src/ never imports
 * from workers/.
 */
import type { ChainHead } from '../store/ledger-stores.js';
import type { LedgerDescription } from './description.js';
import type { ComponentOptions } from '../component/server.js';

export interface CommitterOptions {
  dataDir: string;
  /** The ledger this committer writes (the node's own when absent). */
  description?: LedgerDescription;
  /** File holding the node's private key (mode 0600); read by the committer itself. */
  nodeKeyFile: string;
  maxBatchesPerBlock: number;
  minBlockIntervalMs: number;
  queueMultiplier: number;
  queueInitialAverage: number;
  /**
   * How long a batch may wait for a dependency that is not committed, counted from its
   * acceptance (from the start of the committer for batches found in the pending pool at
   * start); then it is settled INVALID. Default 60 000.
   */
  dependencyWaitMs?: number;
  /** The component endpoint for transaction processors (src/component); absent: none. */
  component?: ComponentOptions;
  /** Blocks between state checkpoints (default 256; see src/state/engine.ts). */
  stateCheckpointBlocks?: number;
  /** Merkle records a block writes for a checkpoint at most (default 4096). */
  stateCheckpointChunk?: number;
  /** Set on a committer started by a recovery (src/ledger/ledger.ts) rather than at the node's start. */
  recovery?: boolean;
  /** Longest a block's transaction may take to become durable before it counts as failed (ms; default 15 000). */
  storageStallMs?: number;
}

/** One piscina task: many submitted bodies, verified together (see ledger/verify-pool.ts). */
export interface VerifyTask {
  /** The bodies back to back in one buffer (moved to the worker, not copied). */
  packed: ArrayBuffer;
  /** Where each body ends in `packed`. */
  ends: number[];
  /** When set, a body must contain a batch signed by this key (queue-full exemption). */
  nodeKeyOnly: Array<string | undefined>;
  /** The families to accept for this task only (a circuit ledger's); absent: the worker's own list. */
  families?: string[];
}

/** What a verify task answers: one verdict per body, and the packed bodies (handed back by transfer). */
export interface VerifyReply {
  results: import('./verify.js').VerifyResult[];
  packed: ArrayBuffer;
}

/** Set once per verify worker (piscina workerData): the families its ledger accepts. */
export interface VerifyWorkerData {
  families: string[];
}

export type ToCommitter =
  /** Batches already durable in the pending pool as segment `seg`. */
  | { type: 'enqueue'; seg: number; batches: Array<{ id: string; bytes: Uint8Array }> }
  /** An envelope for a client of the component endpoint (hex routing id). */
  | { type: 'client-send'; peer: string; body: Uint8Array }
  | { type: 'shutdown' };

/** Client traffic of the component endpoint, relayed to the HTTP thread (src/component/client-service.ts). */
export type ClientTraffic =
  | { type: 'client'; peer: string; body: Uint8Array }
  | { type: 'client-gone'; peer: string; why: 'disconnected' | 'cut off' };

export interface BlockEvent {
  type: 'block';
  /** Null when the round produced no block (only invalid batches). */
  head: ChainHead | null;
  committed: string[];
  invalid: string[];
  pendingCount: number;
  queueLimit: number;
  /** Time the committer spent building this round (for metrics). */
  buildMs?: number;
}

/** Why the committer stopped; the message says what exactly (it names the cause, e.g. ENOSPC). */
export type CommitterFaultCode =
  /** It could not open its stores, recover the pending pool or make genesis. */
  | 'START_FAILED'
  /** Building a block threw. */
  | 'BUILD_FAILED'
  /** A block or verdict transaction failed (nothing of it was written). */
  | 'WRITE_FAILED'
  /** Removing settled segments from the pending pool failed. */
  | 'PENDING_CLEANUP_FAILED'
  /** An error nothing handled, in the committer thread. */
  | 'UNHANDLED';

export type FromCommitter =
  | { type: 'ready'; head: ChainHead; pendingIds: string[]; nextSeq: number; queueLimit: number; componentEndpoint?: string | undefined }
  | BlockEvent
  | ClientTraffic
  | { type: 'fatal'; code: CommitterFaultCode; message: string }
  | { type: 'closed' };
