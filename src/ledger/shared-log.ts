/**
 * A log several nodes share, in place of the pending pool: the engine's side of it. The
 * cluster (src/cluster/link.ts, src/cluster/member.ts) implements SharedLog; a ledger
 * started with one (LedgerStartOptions.log) acknowledges batches into it, and its committer
 * runs the composition registered as `sharedLog` (src/ledger/plugins.ts).
 */
import type { ChainHead } from '../store/ledger-stores.js';
import type { AlarmKind } from '../store/alarms.js';
import type { SharedLogOptions, ToCommitter } from './protocol.js';
import type { AckWriter } from './ack-writer.js';
import type { VerifyResult } from './verify.js';

/** What a ledger gives the writer of a shared log. */
export interface SharedLogHooks {
  /** The next log revision the committer needs. */
  nextRev: number;
  tell(m: ToCommitter): void;
  /** Null while batches may be acknowledged; else the message of the 503. */
  refusal(): string | null;
  /** The last durable head. */
  head(): ChainHead;
  /** Raises an alarm (a chain that differs from the cluster's). */
  fault(cause: string, kind: AlarmKind): void;
  /** Verifies BatchList bodies against the ledger's families in its verify pool. */
  verify(bodies: Uint8Array[]): Promise<VerifyResult[]>;
}

/** A log several nodes share, in place of the pending pool (src/cluster/link.ts). */
export interface SharedLog {
  /** What the committer over the log needs (its plug-in declares it: src/cluster/protocol.ts). */
  committer: SharedLogOptions;
  open(h: SharedLogHooks): AckWriter & { applied(rev: number, durable: boolean): void; start(): void; readThrough(timeoutMs: number): Promise<void> };
}
