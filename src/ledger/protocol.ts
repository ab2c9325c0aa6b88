/** Messages between the HTTP thread and the committer thread. Plain data only. */
import type { ChainHead } from '../store/ledger-stores.js';

export interface CommitterOptions {
  dataDir: string;
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
}

export type ToCommitter =
  /** Batches already durable in the pending pool as segment `seg`. */
  | { type: 'enqueue'; seg: number; batches: Array<{ id: string; bytes: Uint8Array }> }
  | { type: 'shutdown' };

export interface BlockEvent {
  type: 'block';
  /** Null when the round produced no block (only invalid batches). */
  head: ChainHead | null;
  committed: string[];
  invalid: string[];
  pendingCount: number;
  queueLimit: number;
}

export type FromCommitter =
  | { type: 'ready'; head: ChainHead; pendingIds: string[]; nextSeq: number; queueLimit: number }
  | BlockEvent
  | { type: 'fatal'; message: string }
  | { type: 'closed' };
