/**
 * What the cluster's parts pass between threads and keep in etcd (plain data), declared to
 * the engine's protocol: a cluster member's ledger is a ledger over a shared log
 * (src/ledger/shared-log.ts, SharedLog), its committer composed as `sharedLog`
 * (src/cluster/compose.ts).
 */

/** One block of the log as the committer takes it: the revision that ended it, its time and batches. */
export interface LogEnvelope {
  rev: number;
  ts: number;
  batches: Array<{ id: string; bytes: Uint8Array }>;
}

/** What the committer of a cluster member needs (CommitterOptions.sharedLog). */
export interface ClusterCommitterOptions {
  /** The chain key's file: every member signs the same blocks with it. */
  chainKeyFile: string;
  /** Test hook: this member drops a batch of every round (its state diverges). */
  diverge?: boolean;
}

/** The link's message to a member's committer: envelopes of the log, in order (src/cluster/link.ts). */
export type ClusterToCommitter = { type: 'log'; envelopes: LogEnvelope[] };

declare module '../ledger/protocol.js' {
  interface SharedLogOptions extends ClusterCommitterOptions {}
  interface PluginToCommitter {
    sharedLog: ClusterToCommitter;
  }
}
