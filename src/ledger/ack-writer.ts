/**
 * Where a ledger's ingest puts verified batches before it answers 202, and what it asks of
 * it: the node's pending pool on disk (pending-writer.ts), or a cluster's log in etcd
 * (src/cluster/link.ts). Either one knows which batches are pending.
 */
export interface AckWriter {
  /** Batches acknowledged and not settled here. */
  readonly size: number;
  has(id: string): boolean;
  /** Being made durable now (not acknowledged yet). */
  isWriting(id: string): boolean;
  /** Resolves once the batches are durable where the writer keeps them; rejects with LedgerUnavailable. */
  persist(batches: Array<{ id: string; bytes: Uint8Array }>): Promise<void>;
  settle(id: string): void;
  /** Writes in progress settle, waiting `ms` at most. */
  drain(ms: number): Promise<void>;
  /** A new committer took over: what it recovered. */
  reset(pendingIds: readonly string[], nextSeq: number): void;
  /** A durable write (or read, for a log elsewhere) succeeds: a recovery's check. */
  probe(): Promise<void>;
  close(): Promise<void>;
}
