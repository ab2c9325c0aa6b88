/**
 * The seam between the committer and where its batches come from. The committer executes
 * and writes rounds (a block, or verdicts only) in the order a source decides: the local
 * pending pool of a single node (pool-source.ts), a circuit's agreed rounds
 * (src/scabbard/round-source.ts), or (later) a log several nodes share. The committer's
 * core (committer.ts) knows only this interface and the consensus one (consensus.ts).
 */
import type { ChainHead } from '../store/ledger-stores.js';
import type { BuildEntry, BuiltBlock } from './block-builder.js';
import type { WriteExtras } from './chain-writer.js';

/** What a round is known by where rounds are agreed (a circuit's id, height and time). */
export interface RoundTag {
  id: string;
  height: number;
  /** The round's time (ms since the epoch) as agreed: stamped on what it writes. */
  ts: number;
  /** A round agreed elsewhere already (catch-up): the state root and verdicts it must give. */
  expect?: { root: string; verdicts: string };
}

/** The next round a source asks for. */
export interface RoundPlan<E extends BuildEntry> {
  /** Batches in the order to execute them (those in rounds in flight are passed over). */
  entries: Iterable<E>;
  /** Batches settled in the round at most. */
  max: number;
  /** How long a batch may wait on a dependency (0: invalid at once, as agreed rounds need). */
  dependencyWaitMs: number;
  /** Absent for a single node's pool. */
  round?: RoundTag;
}

/** What a source writes with a round, in the round's transaction. */
export interface RoundWrites {
  meta?: Array<[string, unknown]>;
  extras?: WriteExtras;
}

/** Figures the committer's messages carry for the HTTP thread. */
export interface SourceFigures {
  pendingCount: number;
  queueLimit: number;
}

export interface BatchSource<E extends BuildEntry = BuildEntry> {
  /** Called once: how to ask the committer for a round when work arrives or a pause ends. */
  attach(wake: () => void): void;
  /** Loads what was accepted and not settled before the start (the chain head is known). */
  recover(): Promise<void>;
  /** Batches not settled yet (those in rounds in flight included). */
  readonly length: number;
  /** The next round to build on `tip`, or null when there is none now. */
  next(tip: ChainHead, inFlight: ReadonlySet<string>): RoundPlan<E> | null;
  /** Consensus accepted the round: it is written next, and later rounds build on it. */
  accepted(built: BuiltBlock<E>, plan: RoundPlan<E>): void;
  /** Consensus refused the round: nothing of it is written. */
  rejected(built: BuiltBlock<E>, plan: RoundPlan<E>): void;
  /** Writes of the source itself in the round's transaction. */
  writes(built: BuiltBlock<E>, plan: RoundPlan<E>): RoundWrites;
  /** The round is durable: its batches leave the source. `waiting`: unsettled batches when it was built. */
  settle(built: BuiltBlock<E>, plan: RoundPlan<E>, waiting: number): void;
  figures(): SourceFigures;
  close(): Promise<void>;
}
