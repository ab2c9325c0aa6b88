/**
 * Messages between the HTTP thread and the ledger's threads (committer thread, verify
 * workers). Plain data only. Workers import these types from here; src/ never imports
 * from workers/.
 *
 * The engine lists only its own messages. A plug-in (a batch source with its consensus, an
 * external executor) declares its options and messages in its own module, by declaration
 * merging into the interfaces below (`declare module '../ledger/protocol.js'`: see
 * src/scabbard/protocol.ts, src/cluster/protocol.ts, src/component/server.ts); the
 * engine carries them without knowing them (src/ledger/plugins.ts).
 */
import type { ChainHead } from '../store/ledger-stores.js';
import type { LedgerDescription } from './description.js';

/**
 * Options of the plug-ins, each under the name it registers (src/ledger/plugins.ts): a
 * committer runs the composition whose name is a key of its options.
 */
// biome-ignore lint/suspicious/noEmptyInterface: plug-ins add their members by declaration merging
export interface PluginOptions {}

/** Messages of the plug-ins to their parts in the committer thread, one union per plug-in name. */
// biome-ignore lint/suspicious/noEmptyInterface: plug-ins add their members by declaration merging
export interface PluginToCommitter {}

/** Messages of the plug-ins' parts in the committer thread to the HTTP thread, one union per plug-in name. */
// biome-ignore lint/suspicious/noEmptyInterface: plug-ins add their members by declaration merging
export interface PluginFromCommitter {}

/** What a shared log's committer needs (CommitterOptions.sharedLog; its plug-in declares the members). */
// biome-ignore lint/suspicious/noEmptyInterface: plug-ins add their members by declaration merging
export interface SharedLogOptions {}

type OneOf<T> = T[keyof T];

/** A message of a plug-in to its part in the committer thread. */
export type PluginMessage = OneOf<PluginToCommitter>;

/** A message of a plug-in's part in the committer thread to the HTTP thread. */
export type PluginNews = OneOf<PluginFromCommitter>;

/** What the engine itself needs to run a committer. */
export interface EngineCommitterOptions {
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
  /** Blocks between state checkpoints (default 256; see src/state/engine.ts). */
  stateCheckpointBlocks?: number;
  /** Merkle records a block writes for a checkpoint at most (default 4096). */
  stateCheckpointChunk?: number;
  /** Bytes of Merkle records in memory that start a checkpoint sooner (default 64 MiB). */
  stateCheckpointBytes?: number;
  /** Set on a committer started by a recovery (src/ledger/recovery.ts) rather than at the node's start. */
  recovery?: boolean;
  /** Longest a block's transaction may take to become durable before it counts as failed (ms; default 15 000). */
  storageStallMs?: number;
  /** Set on a ledger over a shared log (LedgerStartOptions.log): its rounds come from the log. */
  sharedLog?: SharedLogOptions;
}

/** A plug-in's options, each under its name (at most one composition's; an executor's beside it). */
export type PluginOptionsOf = { [K in keyof PluginOptions]?: PluginOptions[K] };

export type CommitterOptions = EngineCommitterOptions & PluginOptionsOf;

/**
 * `bytes` in a buffer of its own size, for a message to another thread: a message copies
 * the whole buffer under a view (a Buffer from the 8 KiB pool, a slice of a network frame),
 * and the receiving thread's collector then has the rest of it to account for.
 */
export function ownBytes(bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : new Uint8Array(bytes);
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

/** The engine's own messages to the committer thread. */
export type EngineToCommitter =
  /** Batches already durable in the pending pool as segment `seg`. */
  | { type: 'enqueue'; seg: number; batches: Array<{ id: string; bytes: Uint8Array }> }
  /** An envelope for a client of the external executor's endpoint (hex routing id). */
  | { type: 'client-send'; peer: string; body: Uint8Array }
  /** A spare thread (started with `{ standby: true }`, its modules loaded): run as this ledger's committer. */
  | { type: 'begin'; opts: CommitterOptions }
  | { type: 'shutdown' };

export type ToCommitter = EngineToCommitter | PluginMessage;

/** Client traffic of the external executor's endpoint, relayed to the HTTP thread (src/component/client-service.ts). */
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
  /** A round agreed elsewhere (a circuit's, a shared log's): its id, height and agreed time. */
  round?: { id: string; height: number; ts: number };
}

/** The external executor's processors, as /status and the metrics show them (sent on each change). */
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

/** The engine's own messages from the committer thread. */
export type EngineFromCommitter =
  | { type: 'ready'; head: ChainHead; pendingIds: string[]; nextSeq: number; queueLimit: number; componentEndpoint?: string | undefined }
  | BlockEvent
  | ClientTraffic
  /** The external executor's processors changed. */
  | { type: 'processors'; report: ProcessorsReport }
  /** Batches that wait on a transaction processor (newly, or for a new reason), with why. */
  | { type: 'set-aside'; batches: Array<[string, string]> }
  | { type: 'fatal'; code: CommitterFaultCode; message: string }
  | { type: 'closed' };

/** The `type` of every engine message from the committer: any other is a plug-in's. */
export const ENGINE_NEWS: ReadonlySet<string> = new Set<EngineFromCommitter['type']>([
  'ready',
  'block',
  'client',
  'client-gone',
  'processors',
  'set-aside',
  'fatal',
  'closed',
]);

export type FromCommitter = EngineFromCommitter | PluginNews;

/** Whether a message from the committer is a plug-in's (not one of the engine's own). */
export function isPluginNews(m: FromCommitter): m is PluginNews {
  return !ENGINE_NEWS.has(m.type);
}
