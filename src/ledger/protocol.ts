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
  /** Set for a circuit's ledger (src/scabbard): its rounds come from the circuit's agreement. */
  circuit?: CircuitCommitterOptions;
  /** Set on a cluster member (src/cluster): its rounds come from the cluster's log. */
  cluster?: import('../cluster/protocol.js').ClusterCommitterOptions;
}

/** What the committer of a circuit's ledger (one scabbard service) needs to know. */
export interface CircuitCommitterOptions {
  circuitId: string;
  serviceId: string;
  /** Whether this service coordinates (builds rounds from its intake) or verifies the coordinator's. */
  coordinator: boolean;
  /** The circuit's admin keys: the initial state of its ledger. */
  adminKeys: string[];
  /** Batches per round at most. */
  roundMax: number;
}

/**
 * `bytes` in a buffer of its own size, for a message to another thread: a message copies
 * the whole buffer under a view (a Buffer from the 8 KiB pool, a slice of a network frame),
 * and the receiving thread's collector then has the rest of it to account for.
 */
export function ownBytes(bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : new Uint8Array(bytes);
}

/** A round of a circuit: its batches as an encoded BatchList, where it goes and what it gives. */
export interface CircuitRound {
  id: string;
  height: number;
  ts: number;
  /** State root of the round it follows. */
  parentRoot: string;
  batches: Uint8Array;
}

/** A round committed elsewhere (catch-up): what it must give here. */
export interface AgreedRound {
  height: number;
  ts: number;
  batches: Uint8Array;
  root: string;
  verdicts: string;
}

/**
 * A circuit round executed by the committer, for the agreement on the HTTP thread: the
 * coordinator's round to propose, or a member's result for a proposal to vote on.
 * `follows: false`: the proposal does not follow this member's tip (or is undecodable),
 * nothing was executed; `height` is then the member's tip height.
 */
export interface RoundSummary extends CircuitRound {
  type: 'summary';
  follows: boolean;
  root: string;
  verdicts: string;
  included: string[];
  invalid: string[];
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
  /** A circuit's accepted batches, durable in its intake (the coordinator builds rounds of them). */
  | { type: 'intake'; batches: Array<{ id: string; bytes: Uint8Array }> }
  /** A circuit member: execute the coordinator's proposed round and summarize it. */
  | { type: 'propose'; round: CircuitRound }
  /** Rounds committed elsewhere, their batches checked: re-execute and write them. */
  | { type: 'catch-up'; from: string; rounds: AgreedRound[] }
  /** The agreement's decision on a summarized round (`pauseMs`: wait before the next one). */
  | { type: 'decide'; id: string; finalize: boolean; pauseMs?: number }
  /** A cluster member: envelopes of the log, in order (src/cluster/link.ts). */
  | { type: 'log'; envelopes: import('../cluster/protocol.js').LogEnvelope[] }
  /** A spare thread (started with `{ standby: true }`, its modules loaded): run as this ledger's committer. */
  | { type: 'begin'; opts: CommitterOptions }
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
  /** A circuit's round: its id, height and agreed time. */
  round?: { id: string; height: number; ts: number };
}

/** The component endpoint's processors, as /status and the metrics show them (sent on each change). */
export interface ProcessorsReport {
  /** Families served now, with the processors registered for each. */
  families: Array<{ family: string; processors: number }>;
  /** Families whose processor was set aside and that no other processor serves, with why. */
  setAside: Array<{ family: string; why: string }>;
  /** Since the committer started: transactions whose processor did not answer in time, processors set aside. */
  transactionsSetAside: number;
  processorsSetAside: number;
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
  | RoundSummary
  /** A summarized round the committer gave up waiting for (a catch-up replaced it). */
  | { type: 'dropped'; id: string }
  /** The component endpoint's processors changed. */
  | { type: 'processors'; report: ProcessorsReport }
  /** Batches that wait on a transaction processor (newly, or for a new reason), with why. */
  | { type: 'set-aside'; batches: Array<[string, string]> }
  | { type: 'fatal'; code: CommitterFaultCode; message: string }
  | { type: 'closed' };
