/** What the cluster's parts pass between threads and keep in etcd (plain data). */

/** One block of the log as the committer takes it: the revision that ended it, its time and batches. */
export interface LogEnvelope {
  rev: number;
  ts: number;
  batches: Array<{ id: string; bytes: Uint8Array }>;
}

/** What the committer of a cluster member needs (CommitterOptions.cluster). */
export interface ClusterCommitterOptions {
  /** The chain key's file: every member signs the same blocks with it. */
  chainKeyFile: string;
  /** Test hook: this member drops a batch of every round (its state diverges). */
  diverge?: boolean;
}
